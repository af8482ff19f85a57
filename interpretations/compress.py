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

from funsor_core import ops
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.atom import Gaussian, gaussian_layout
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.interpreter import Interpretation
from funsor_core.terms.contraction import Contraction
from interpretations.exact import exact

__all__ = ["compress_gaussians"]

compress_gaussians = Interpretation("compress_gaussians", base=exact, doc=__doc__)


def _compress(g: Gaussian):
    dim, rank = g.prec_sqrt.shape[-2:]
    if rank <= dim or dim == 0:
        return None
    white_vec, prec_sqrt, shift = gm.compress(g.white_vec, g.prec_sqrt)
    batch = dict(gaussian_layout(g._ikey)[0])
    return Gaussian.make(white_vec, prec_sqrt, ikey=g._ikey) + Tensor.make(shift, batch)


# Every result of the chain is canonical: no Gaussian of rank above its dimension, alone or
# inside a sum (rules build sums of made Gaussians without the interpreter seeing the parts).
@compress_gaussians.canonical
def compress_gaussians_canonical(term):
    if type(term) is Gaussian:
        compressed = _compress(term)
        return term if compressed is None else compressed
    if (type(term) is Contraction and term.bin_op is ops.add and term.red_op is None
            and any(type(t) is Gaussian for t in term.terms)):
        parts = [(_compress(t) if type(t) is Gaussian else None) for t in term.terms]
        if any(p is not None for p in parts):
            result = None
            for t, p in zip(term.terms, parts):
                p = t if p is None else p
                result = p if result is None else result + p
            return result
    return term
