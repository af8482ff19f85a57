"""The atoms: ``Tensor`` (discrete factors), ``Gaussian`` (in ``atoms.gaussian``) and
``Delta`` (point masses), each with its own math as pure functions of arrays, plus what
stands on them: affine recognition, array conversion, scatter and sampling."""
