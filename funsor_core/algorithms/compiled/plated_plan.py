"""``plan(factors, eliminate, plates)``: a plated elimination planned from its factors'
structure, run on factors of that structure.

The factors stand in as parameters (``Variable("f0", Reals[sizes])[names]``), the plated
``sum_product`` of them is built without rewriting (``reflect``) and compiled once per
semiring (``compile``: each plate's product a sub-program that keeps the plate as a batch
dim); a call runs the program on the factors' arrays. ``stats()`` are the outer program's,
with the plates' sub-programs under ``"plates"`` (as ``fc.cost`` gives them).
"""

from __future__ import annotations

from collections.abc import Sequence

from funsor_core import ops
from funsor_core.algorithms.compiled.expression import compile as compile_expr
from funsor_core.algorithms.compiled.program import PLATED_PLANNER, _semiring
from funsor_core.algorithms.factor_list import factor_list
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint, Reals
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.base import Variable

__all__ = ["PlatedPlan"]

_BAD = ("this plan was made for factors over {expected}; factor {k} is over {got}. A plan "
        "runs only on factors of the structure it was planned for (names, sizes and order); "
        "call plan(...) again for another structure.")


class PlatedPlan:
    """A plated elimination's plan: call it on factors of the structure it was made for.

    Example:
        >>> x = fc.Tensor(np.log(np.array([0.4, 0.6])), {"x": fc.Bint[2]})
        >>> obs = fc.Tensor(np.log(np.array([[0.9, 0.2], [0.1, 0.8], [0.5, 0.5]])),
        ...                 {"i": fc.Bint[3], "x": fc.Bint[2]})  # p(y_i | x) per plate entry
        >>> p = fc.plan([x, obs], frozenset({"x", "i"}), plates=frozenset({"i"}))
        >>> total = p([x, obs], ops.logaddexp, ops.add)
        >>> joint = np.array([0.4, 0.6]) * np.exp(obs.data).prod(0)  # x times its plate
        >>> bool(np.isclose(float(total.data), np.log(joint.sum())))
        True
        >>> sorted(p.stats()["plates"][0])[:2]
        ['flops', 'jointree_nodes']
    """

    def __init__(self, scopes: tuple, sizes: dict, eliminate: frozenset, plates: frozenset,
                 method: str, memory_budget, itemsize: int) -> None:
        self.scopes, self.sizes = scopes, sizes
        self.eliminate, self.plates, self.method = eliminate, plates, method
        self._budget, self._itemsize = memory_budget, itemsize
        self._programs: dict = {}
        self.output = self._program(False).output  # planned now: a budget error raises here

    def _program(self, log: bool):
        program = self._programs.get(log)
        if program is None:
            # (imported here: elimination imports this package's cost module)
            from funsor_core.algorithms.eliminate.plated import sum_product

            params = [Variable(f"f{k}", Reals[tuple(self.sizes[n] for n in names)])[names]
                      if names else Variable(f"f{k}", Reals[()])
                      for k, names in enumerate(self.scopes)]
            semiring = (ops.logaddexp, ops.add) if log else (ops.add, ops.mul)
            with reflect:
                expr = sum_product(*semiring, params, self.eliminate, self.plates)
            program = compile_expr(expr, method=self.method, memory_budget=self._budget,
                                   itemsize=self._itemsize)
            self._programs[log] = program
        return program

    def stats(self) -> dict:
        """The outer program's ``nodes``, ``max_rank``, ``max_binary_rank``, ``flops``,
        ``peak_bytes`` (and the rest of ``Plan.stats()``), the plates' sub-programs' under
        ``"plates"``."""
        programs = list(self._program(False).programs())
        out = programs[0].plan.tree.stats(self._itemsize)
        out["plates"] = [p.plan.tree.stats(self._itemsize) for p in programs[1:]]
        return out

    def __call__(self, factors: Sequence, sum_op=ops.add, prod_op=ops.mul) -> Tensor:
        """Eliminate with this plan, in ``(ops.add, ops.mul)`` (the default) or
        ``(ops.logaddexp, ops.add)``."""
        log = _semiring(sum_op, prod_op)  # (the same refusal of other semirings as Plan's)
        factors = factor_list(factors)
        if len(factors) != len(self.scopes):
            raise ValueError(f"this plan was made for {len(self.scopes)} factors over "
                             f"{self.scopes}; got {len(factors)}")
        arrays = {}
        for k, f in enumerate(factors):
            if not isinstance(f, Tensor):
                raise TypeError(f"this plan runs on Tensors (over {self.scopes[k]} at position "
                                f"{k}), got {type(f).__name__}: wrap an array as "
                                "fc.Tensor(data, inputs)")
            names = tuple(f.inputs)
            if names != self.scopes[k] or any(f.inputs[n].size != self.sizes[n] for n in names):
                raise ValueError(_BAD.format(expected=self.scopes, k=k, got=dict(f.inputs)))
            arrays[f"f{k}"] = f.data
        program = self._program(log)
        data = program(**arrays)
        return Tensor(data, {n: Bint[self.sizes[n]] for n in program.output})

    def __repr__(self) -> str:
        s = self.stats()
        return (f"PlatedPlan({len(self.scopes)} factors, plates={sorted(self.plates)}, "
                f"max_binary_rank={s['max_binary_rank']:.1f}, flops={s['flops']:.3g})")


def plated_plan(factors, eliminate: frozenset, plates: frozenset, method: str,
                memory_budget, itemsize: int) -> PlatedPlan:
    """The ``PlatedPlan`` of Tensor factors (``plan``'s checks of names and sizes done)."""
    scopes, sizes = [], {}
    for k, f in enumerate(factors):
        if not isinstance(f, Tensor):
            raise NotImplementedError(
                f"plan(plates=...): factor {k} is a {type(f).__name__}; a plated plan takes "
                "Tensors (functional declarations are planned without plates)")
        scopes.append(tuple(f.inputs))
        for n, d in f.inputs.items():
            sizes[n] = d.size
    unknown = sorted(plates - frozenset(sizes))
    if unknown:
        raise ValueError(f"plan(): the plates {unknown} are inputs of no factor; the factors' "
                         f"inputs are {dict((n, Bint[s]) for n, s in sizes.items())}")
    return PlatedPlan(tuple(scopes), sizes, frozenset(eliminate), frozenset(plates), method,
                      memory_budget, itemsize)


PLATED_PLANNER.append(plated_plan)
