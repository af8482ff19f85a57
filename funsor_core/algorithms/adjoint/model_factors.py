"""The factors a discrete model computes with (``DiscreteModel``): those of its empty plates
dropped, a free variable kept by a factor of zeros, a factor given twice entered once.
"""

from __future__ import annotations

import functools

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Number

__all__ = ["live_factors"]


def live_factors(factors, empty: frozenset, empty_vars: frozenset, variables: dict,
                 var_plates: dict, plate_domains: dict) -> tuple:
    """The factors outside the ``empty`` plates (a product over no members is 1, log 0);
    a variable outside ``empty_vars`` whose factors all dropped out is free (uniform), and a
    factor of zeros over it and its ``var_plates`` keeps it in every query; a factor object
    given ``n`` times enters once as ``n`` times itself (the adjoint tape keys its results by
    term, so the copies would share one adjoint and the marginals count it once).

    Example:
        >>> f = fc.Tensor(np.log([0.3, 0.7]), {"x": fc.Bint[2]})
        >>> y_in_i = fc.Tensor(np.zeros((0, 3)), {"i": fc.Bint[0], "y": fc.Bint[3]})
        >>> y_in_j = fc.Tensor(np.zeros((0, 3)), {"j": fc.Bint[0], "y": fc.Bint[3]})
        >>> variables = {"x": fc.Bint[2], "y": fc.Bint[3]}  # y: in no plate (i and j differ)
        >>> live = live_factors([f, f, y_in_i, y_in_j], frozenset("ij"), frozenset(), variables,
        ...                     dict.fromkeys(variables, frozenset()), {})
        >>> [(dict(t.inputs), np.round(t.data, 3).tolist()) for t in live]
        [({'x': Bint[2]}, [-2.408, -0.713]), ({'y': Bint[3]}, [0.0, 0.0, 0.0])]
    """
    live = [f for f in factors if not empty & f.inputs.keys()]
    held = {v for f in live for v in f.inputs} | empty_vars
    proto = next((f.data for f in factors if isinstance(f, Tensor)), Number(0.0).data)
    for v in (v for v in variables if v not in held):
        inputs = {**{q: plate_domains[q] for q in var_plates[v]}, v: variables[v]}
        live.append(Tensor(ops.new_zeros(proto, tuple(d.size for d in inputs.values())),
                           inputs))
    counts: dict = {}
    for f in live:
        counts.setdefault(id(f), [f, 0])[1] += 1
    return tuple(f if n == 1 else functools.reduce(lambda a, b: a + b, [f] * n)
                 for f, n in counts.values())
