"""Monte Carlo draws of the atoms (``draw``) and the stream of random keys behind them
(``keys``)."""
