"""``apply_optimizer``: evaluate an expression through its sum-product normal form.

funsor's ``funsor.optimizer.apply_optimizer(expr)`` rewrites a lazy expression into an order
of pairwise contractions and evaluates it. Here the expression is first rebuilt under
``normalize`` (products flattened into one ``Contraction`` per reduction, reductions pulled
out and merged), then under the active interpretation, whose contraction rules plan the order
of Tensor contractions with opt_einsum's path search. What is not yet here is a planner for
products that mix Gaussians and Tensors over many variables (the OPTIMIZE interpretation):
such a product is contracted as one joint factor, which is exact but not the cheapest order.

Example:
    >>> from interpretations import lazy
    >>> a = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> b = fc.Tensor(np.ones((3, 4)), {"j": fc.Bint[3], "k": fc.Bint[4]})
    >>> with lazy:
    ...     expr = (a * b).reduce(ops.add, frozenset({"j", "k"}))
    >>> apply_optimizer(expr).data
    array([12., 12.])
"""

from __future__ import annotations

from typing import Any

from funsor_core.terms.traversal import reinterpret
from interpretations.normalize import normalize

__all__ = ["apply_optimizer"]


def apply_optimizer(expr: Any) -> Any:
    """``expr`` rebuilt in sum-product normal form, then evaluated by the active
    interpretation (a number under ``exact`` when ``expr`` has no free real or lazy parts).

    Example:
        >>> x = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
        >>> apply_optimizer(x.reduce(ops.add, "i")).data
        array(3.)
    """
    with normalize:
        normal = reinterpret(expr)
    return reinterpret(normal)
