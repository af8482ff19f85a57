"""The atoms: ``Tensor`` (discrete factors, with funsor's output-dim idioms in
``tensor_idioms``), ``Gaussian`` (in ``atoms.gaussian``) and ``Delta`` (point masses), each
with its own math as pure functions of arrays."""
