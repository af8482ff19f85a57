"""``compress_gaussians``: ``exact``, with every Gaussian of rank above its dimension
compressed to a square factor (funsor's ``compress_gaussians`` interpretation).

A Gaussian keeps the rows of its square-root information as they come (ranks add up under
``+``); two Gaussians with equal densities may so differ in rank. Under ``compress_gaussians``
a Gaussian of rank > dim is rebuilt with rank dim, the same precision, and the constant that
compression splits off as a Tensor (``Gaussian + Tensor``), so equal densities get equal
shapes, e.g. before comparing them.

Example:
    >>> g = fc.Gaussian(white_vec=np.ones(3), prec_sqrt=np.ones((1, 3)),
    ...                 inputs={"x": fc.Real})
    >>> with fc.Gaussian.set_compression_threshold(10):
    ...     g = fc.Gaussian(white_vec=np.ones(3), prec_sqrt=np.ones((1, 3)),
    ...                     inputs={"x": fc.Real})
    >>> g.rank
    3
    >>> with compress_gaussians:
    ...     h = fc.reinterpret(g)
    >>> [type(t).__name__ for t in h.terms], h.terms[0].rank
    (['Gaussian', 'Tensor'], 1)
"""

from __future__ import annotations

from funsor_core.atoms.gaussian import arrays as gm
from funsor_core.atoms.gaussian.gaussian import Gaussian, gaussian_layout
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.interpreter import Interpretation
from interpretations.exact import exact

__all__ = ["compress_gaussians"]

compress_gaussians = Interpretation("compress_gaussians", base=exact)


@compress_gaussians.register(Gaussian, object, object, tuple)
def compress_gaussians_gaussian(white_vec, prec_sqrt, inputs):
    dim, rank = prec_sqrt.shape[-2:]
    if rank <= dim or dim == 0:
        return None
    white_vec, prec_sqrt, shift = gm.compress(white_vec, prec_sqrt)
    batch = dict(gaussian_layout(inputs)[0])
    return Gaussian.make(white_vec, prec_sqrt, ikey=inputs) + Tensor.make(shift, batch)
