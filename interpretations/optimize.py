"""``optimize`` (alias ``OPTIMIZE``) and ``apply_optimizer``: sum-product expressions rewritten
into a sequence of pairwise contractions along a plan, kept as terms.

Under ``optimize`` a ``Contraction`` of three or more terms whose reduction distributes over
its product (``ops.DISTRIBUTIVE_OPS``: ``(logaddexp, add)``, ``(add, mul)``, ``(max, add)``,
``(min, add)``, ``(or_, and_)``, and ``(max, mul)``/``(min, mul)`` over factors known to be
nonnegative) becomes nested pairwise Contractions, in the order of
``funsor_core.algorithms.contract.plan`` (opt_einsum's path search: optimal for a few terms, greedy
for many), each variable reduced at the first step after which no other term uses it. Any
atoms may be terms: Tensors, Gaussians, Deltas, lazy terms. ``optimize`` evaluates nothing;
it falls back to ``lazy``, so the result is an optimized lazy expression. Plans are cached by
structure (names, domains), so a same-shaped expression pays no planning again; under
``jax.jit`` planning happens at trace time.

``optimize_base`` (funsor's name) plans the same contractions but falls back to whatever was
active when it was entered, so under the default ``exact`` each pairwise step is evaluated as
it is built: ``with normalize: e = reinterpret(x)`` then ``with optimize_base:
reinterpret(e)`` computes ``x`` along the plan (Pyro's ``TraceEnum_ELBO`` does this).

``apply_optimizer(expr)`` is the usual entry point: it rewrites ``expr`` into sum-product
normal form (``normalize``: products flattened, reductions merged into one ``Contraction``
each), plans it under ``optimize``, then rebuilds the planned expression under the
interpretation active at the call: ``exact`` evaluates it step by step, ``lazy`` (or
``reflect``) keeps it as the optimized expression, as in funsor. Under ``exact`` a lazy tree
of Contractions and Reduces over Tensors in one semiring (a lazy ``sum_product`` or
``einsum``) skips the passes: its schedule's array program, cached by structure, computes the
same number (``algorithms.eliminate.term_program``).

Example:
    >>> from interpretations import lazy
    >>> a = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> b = fc.Tensor(np.ones((3, 4)), {"j": fc.Bint[3], "k": fc.Bint[4]})
    >>> c = fc.Tensor(np.ones(4), {"k": fc.Bint[4]})
    >>> with lazy:
    ...     expr = (a * b * c).reduce(ops.add, frozenset({"j", "k"}))
    >>> apply_optimizer(expr).data
    array([12., 12.])
    >>> with lazy:
    ...     planned = apply_optimizer(expr)
    >>> type(planned).__name__, len(planned.terms)  # pairwise: (a * (b * c summed over k))
    ('Contraction', 2)
"""

from __future__ import annotations

from typing import Any

from funsor_core import ops
from funsor_core.algorithms.contract.plan import plan_terms
from funsor_core.algorithms.eliminate.term_program import run_term_program
from funsor_core.analysis.sign import distributes
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.interpreter import ENTERED, Interpretation
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.traversal import reinterpret
from interpretations.lazy import lazy
from interpretations.normalize import normalize

__all__ = ["optimize", "OPTIMIZE", "optimize_base", "apply_optimizer"]

# Falls back to lazy, not normalize: normalize would merge the nested pairwise steps back
# into one Contraction (pulling inner reductions out), undoing the plan.
optimize = Interpretation("optimize", fallback=lazy, doc=__doc__)
OPTIMIZE = optimize
# The same plans, each step built under the interpretation active at entry (funsor's
# ``optimize_base``): under ``exact`` a planned contraction is computed step by step.
optimize_base = Interpretation("optimize_base", fallback=ENTERED, doc=__doc__)


def _pairwise(red_op, bin_op, reduced_vars, terms):
    if (red_op is None or len(terms) < 3 or (red_op, bin_op) not in ops.DISTRIBUTIVE_OPS
            or not distributes(red_op, bin_op, terms)):
        return None
    plan = plan_terms(terms, reduced_vars)
    if plan.level_batched(red_op, bin_op) and all(type(t) is Tensor for t in terms):
        return None  # a tree of Tensors: the exact rule batches it by level, in one term
    return plan.run_terms(red_op, bin_op, reduced_vars, terms)


# sum_V (t1 * t2 * ... * tn) = nested pairwise contractions along a plan, when sum distributes
# over * (for (max, mul) and (min, mul): only over factors known to be nonnegative).
@optimize.register(Contraction, object, object, frozenset, tuple)
def optimize_contraction_plan(red_op, bin_op, reduced_vars, terms):
    return _pairwise(red_op, bin_op, reduced_vars, terms)


@optimize_base.register(Contraction, object, object, frozenset, tuple)
def optimize_base_contraction_plan(red_op, bin_op, reduced_vars, terms):
    return _pairwise(red_op, bin_op, reduced_vars, terms)


def apply_optimizer(expr: Any) -> Any:
    """``expr`` in sum-product normal form, planned into pairwise contractions (``optimize``),
    then rebuilt by the interpretation active at the call: a number under ``exact`` when
    ``expr`` has no free real or lazy parts, the optimized lazy expression under ``lazy``.

    Example:
        >>> x = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
        >>> apply_optimizer(x.reduce(ops.add, "i")).data
        array(3.)
    """
    # A lazy sum-product of Tensors under ``exact``: its own schedule's array program (cached
    # by structure) gives the number without rebuilding any interior term in three passes.
    value = run_term_program(expr)
    if value is not None:
        return value
    with normalize:
        normal = reinterpret(expr)
    with optimize:
        planned = reinterpret(normal)
    return reinterpret(planned)
