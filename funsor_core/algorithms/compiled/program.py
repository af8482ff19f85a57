"""Plans as data: a contraction tree (a jointree or opt_einsum's path) lowered to a list of
array calls, computed once per structure and run any number of times.

``plan(factors, eliminate)`` looks only at structure (each factor's input names and sizes,
which factors are functional, the names kept): the result is cached under that key, and
calling it on factors of the same structure runs only array code (one reduce per leaf that
sums something, one batched matmul per internal node), so it runs under ``jax.jit`` and
differentiates on torch and jax.

Example:
    >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> g = fc.Tensor(np.ones((3, 4)), {"j": fc.Bint[3], "k": fc.Bint[4]})
    >>> p = plan([f, g], frozenset({"j", "k"}))
    >>> p([f, g]).data
    array([12., 12.])
    >>> p.stats()["max_rank"]
    2
"""

from __future__ import annotations

from collections.abc import Sequence

from funsor_core import ops
from funsor_core.algorithms.compiled.cost import check_budget
from funsor_core.algorithms.compiled.functional import (
    Functional,
    FunctionalError,
    is_functional_flag,
)
from funsor_core.algorithms.compiled.functional import functional as declare
from funsor_core.algorithms.compiled.jointree import (
    JoinTree,
    build_jointree,
    jointree_from_children,
)
from funsor_core.algorithms.compiled.lowering import (
    SEMIRINGS,
    pair_spec,
    reduce_spec,
    run_pair,
    run_reduce,
)
from funsor_core.algorithms.factor_list import factor_list
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.engine.cache import cached
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import Funsor, Variable

__all__ = ["Plan", "plan", "plan_structure", "METHODS"]

METHODS = ("auto", "jointree", "opt_einsum", "cotengra")
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_AUTO_OPT_EINSUM = 64  # up to this many factors "auto" without functional factors asks opt_einsum

_NO_COTENGRA = ("plan(method='cotengra') needs the optional package cotengra (with cotengrust "
                "and kahypar for large graphs), which is not installed: pip install cotengra. "
                "method='jointree' (min-fill) or 'opt_einsum' plan without it.")
# A plated plan compiles a plated sum_product, which sits above this module (elimination
# imports the planner): plated_plan.py puts its planner here when it is imported.
PLATED_PLANNER: list = []

_BAD_STRUCTURE = ("this plan was made for factors over {expected}; factor {k} is over {got}. "
                  "A plan runs only on factors of the structure it was planned for (names, "
                  "sizes and order); call plan(...) again for another structure.")


class Plan:
    """A compiled elimination: a contraction tree and the array calls of each node.

    Attributes:
        scopes: each factor's input names, in its own order.
        sizes: the size of each name.
        output: the names of the result, in order.
        tree: the ``JoinTree`` (``tree.seps`` are the message names of each node).
        method: the planner that made the tree.
        functional: per factor, the name it was declared to give (``None`` if not declared).

    Example:
        >>> a = fc.Tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), {"i": fc.Bint[2], "j": fc.Bint[2]})
        >>> b = fc.Tensor(np.array([1.0, 10.0]), {"j": fc.Bint[2]})
        >>> p = plan([a, b], frozenset({"j"}))
        >>> p.scopes, p.output
        ((('i', 'j'), ('j',)), ('i',))
        >>> p.run_arrays([a.data, b.data], log=False), a.data @ b.data
        (array([21., 43.]), array([21., 43.]))
    """

    def __init__(self, scopes, sizes, output, tree: JoinTree, method: str,
                 functional: tuple = ()) -> None:
        self.scopes = scopes
        self.functional = tuple(functional) or (None,) * len(scopes)
        self.sizes = sizes
        self.output = output
        self.tree = tree
        self.method = method
        self.runs = 0
        self._steps = self._final = None  # lowered on the first run: planning stays structural
        self._einsums = False  # the traced lowering (``_lower_einsums``), on first use

    def _lower(self) -> None:
        # Per node, its array call: ("leaf", factor, axes) or ("pair", c1, c2, spec).
        tree = self.tree
        steps, names = [], []
        for i, kids in enumerate(tree.children):
            if not kids:
                k = tree.leaf_factor[i]
                axes, kept = reduce_spec(self.scopes[k], tree.seps[i])
                steps.append(("leaf", k, axes))
                names.append(kept)
            else:
                a, b = kids
                spec = pair_spec(names[a], names[b], tree.seps[i], self.sizes)
                steps.append(("pair", a, b, spec))
                names.append(spec.out_names)
        final = tuple(names[-1].index(n) for n in self.output)
        self._final = None if final == tuple(range(len(final))) else final
        self._steps = tuple(steps)

    def _lower_einsums(self):
        # Per node one einsum from its inputs' names to its separator, in the separator's
        # order (None where a node has more names than einsum has letters).
        tree, equations = self.tree, []
        for i, kids in enumerate(tree.children):
            ins = [self.scopes[tree.leaf_factor[i]]] if not kids else [tree.seps[c] for c in kids]
            letters = dict.fromkeys(n for names in ins for n in names)
            if len(letters) > len(_LETTERS):
                self._einsums = None
                return None
            letters = dict(zip(letters, _LETTERS))
            equations.append(",".join("".join(map(letters.get, names)) for names in ins)
                             + "->" + "".join(map(letters.get, tree.seps[i])))
        final = tuple(tree.seps[-1].index(n) for n in self.output)
        self._einsums = (tuple(equations), None if final == tuple(range(len(final))) else final)
        return self._einsums

    def _run_einsums(self, arrays: Sequence):
        # Traced (under jax.jit), linear space: one einsum per node, whose dots the compiler
        # lays out itself (benchmarks/compiled.py, "under jax.jit").
        equations, final = self._einsums
        tree, messages = self.tree, [None] * len(equations)
        for i, (kids, eq) in enumerate(zip(tree.children, equations)):
            if not kids:
                messages[i] = ops.einsum(eq, arrays[tree.leaf_factor[i]])
            else:
                a, b = kids
                messages[i] = ops.einsum(eq, messages[a], messages[b])
                messages[a] = messages[b] = None
        out = messages[-1]
        return out if final is None else ops.permute(out, final)

    def stats(self) -> dict:
        """``nodes``, ``max_rank``, ``max_binary_rank``, ``flops``, ``peak_bytes`` and more:
        see ``jointree.tree_stats``.

        Example:
            >>> f = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
            >>> sorted(plan([f], frozenset()).stats())[:3]
            ['flops', 'jointree_nodes', 'largest_cluster']
        """
        return self.tree.stats()

    def run_arrays(self, arrays: Sequence, log: bool):
        """Run on one array per factor (dims in each factor's order); the result's dims are
        ``output``. Only array calls: no term is built."""
        self.runs += 1
        if not log and not all(map(ops.is_concrete, arrays)) and (
                self._einsums or self._einsums is False and self._lower_einsums()):
            return self._run_einsums(arrays)
        if self._steps is None:
            self._lower()
        messages = [None] * len(self._steps)
        for i, step in enumerate(self._steps):
            if step[0] == "leaf":
                messages[i] = run_reduce(step[2], arrays[step[1]], log)
            else:
                _, a, b, spec = step
                messages[i] = run_pair(spec, messages[a], messages[b], log)
                messages[a] = messages[b] = None
        out = messages[-1]
        return out if self._final is None else ops.permute(out, self._final)

    def __call__(self, factors: Sequence, sum_op=ops.add, prod_op=ops.mul) -> Tensor:
        """Eliminate with this plan: ``factors`` have the structure it was planned for;
        ``(sum_op, prod_op)`` is ``(ops.add, ops.mul)`` (probabilities, the default) or
        ``(ops.logaddexp, ops.add)`` (log values; functional tables in ``{-inf, 0}``)."""
        log = _semiring(sum_op, prod_op)
        factors = factor_list(factors, (Funsor, Functional))
        if len(factors) != len(self.scopes):
            raise ValueError(f"this plan was made for {len(self.scopes)} factors over "
                             f"{self.scopes}; got {len(factors)}")
        arrays, flags = [], []
        for k, f in enumerate(factors):
            # A Functional passed here was declared (and checked) by functional() already.
            plain = not isinstance(f, Functional)
            f = f if plain else f.term
            if not isinstance(f, Funsor):
                raise TypeError(f"this plan runs on factors (Tensors over {self.scopes[k]} at "
                                f"position {k}), got {type(f).__name__}: wrap an array as "
                                f"fc.Tensor(data, inputs)")
            names = tuple(f.inputs)
            if names != self.scopes[k] or any(f.inputs[n].size != self.sizes[n] for n in names):
                raise ValueError(_BAD_STRUCTURE.format(expected=self.scopes, k=k,
                                                       got=dict(f.inputs)))
            out = self.functional[k]
            if out is not None and isinstance(f, Tensor) and not ops.is_concrete(f.data):
                # Traced under jit, the table cannot be checked here, and the jointree's
                # replications are exact only for a 0/1 function table: the answer is NaN
                # unless the table is one (never a wrong number).
                flags.append(is_functional_flag(f, out, log))
            elif out is not None and plain and isinstance(f, Tensor):
                # The jointree's replications are exact only for a 0/1 function table: a
                # noisy one in a declared slot would give a wrong number, not an error.
                try:
                    declare(f, out, log=log)
                except FunctionalError as err:
                    raise FunctionalError(f"{err} (This plan ran in {_SPACE[log]}; "
                                          f"{_SPACE[not log]} is plan(factors, "
                                          f"{_CALL[not log]}).)") from None
            arrays.append(f.data)
        try:
            data = self.run_arrays(arrays, log)
        except Exception as err:
            # Tables of two backends fail deep in a kernel (a torch matmul of a numpy array, a
            # numpy constant meeting a jit tracer); name the factors instead. Mixes the kernels
            # accept (numpy with concrete jax) keep working, so the check runs only on failure.
            try:
                check_backends("run this plan", [f.term if isinstance(f, Functional) else f
                                                 for f in factors], _FACTOR_LABELS)
            except TypeError as mixed:
                raise mixed from err
            raise
        for ok in flags:
            data = ops.where(ok, data, float("nan"))
        return Tensor(data, {n: Bint[self.sizes[n]] for n in self.output})

    def __repr__(self) -> str:
        s = self.stats()
        return (f"Plan({self.method}, {len(self.scopes)} factors, max_binary_rank="
                f"{s['max_binary_rank']:.1f}, flops={s['flops']:.3g})")


_SPACE = {False: "linear space, (add, mul)", True: "log space, (logaddexp, add)"}
_CALL = {False: "ops.add, ops.mul", True: "ops.logaddexp, ops.add"}


class _FactorLabels:
    # "factor k" for check_backends' message, made only when it raises.
    def __getitem__(self, k: int) -> str:
        return f"factor {k}"


_FACTOR_LABELS = _FactorLabels()


def _semiring(sum_op, prod_op) -> bool:
    try:
        return SEMIRINGS[sum_op, prod_op]
    except KeyError:
        raise NotImplementedError(
            f"compiled elimination lowers to matmuls in the semirings (add, mul) and "
            f"(logaddexp, add); got ({sum_op}, {prod_op}). Use fc.sum_product for others."
        ) from None


def _opt_einsum_tree(scopes, sizes, keep) -> JoinTree:
    from funsor_core.algorithms.contract.plan import plan_contraction

    steps = plan_contraction(tuple(scopes), dict(sizes), tuple(keep)).steps
    return _path_tree([(i,) if j is None else (i, j) for i, j, _ in steps], scopes, sizes,
                      keep)


def _path_tree(path, scopes, sizes, keep) -> JoinTree:
    # A pairwise path in opt_einsum's linear format (each step's operands are removed by
    # position, its result appended) as a binary tree over the factors.
    children = [()] * len(scopes)
    live = list(range(len(scopes)))
    for step in path:
        if len(step) == 1:
            live.append(live.pop(step[0]))  # a one-operand reduce: the tree's nodes sum
            continue
        i, j = step
        a, b = live[i], live[j]
        for k in sorted((i, j), reverse=True):
            del live[k]
        children.append((a, b))
        live.append(len(children) - 1)
    while len(live) > 1:  # operands that share nothing
        children.append((live.pop(0), live.pop(0)))
        live.append(len(children) - 1)
    if live[0] != len(children) - 1:  # the root must be the last node
        raise AssertionError("path tree: root out of order")
    return jointree_from_children(range(len(scopes)), scopes, children, sizes, keep, sizes,
                                  len(sizes))


def _cotengra_tree(scopes, sizes, keep, max_time: float = 5.0) -> tuple[JoinTree, str]:
    # cotengra's hyper-optimizer (greedy and label partitions, plus kahypar where it
    # imports), then never worse than opt_einsum's path: the tree of fewer flops wins, and
    # the planner that made it is returned with it.
    try:
        import cotengra
    except ImportError as e:
        raise ImportError(_NO_COTENGRA) from e
    methods = ["greedy", "labels"]
    try:
        import kahypar  # noqa: F401
        methods.append("kahypar")
    except ImportError:
        pass
    opt = cotengra.HyperOptimizer(methods=methods, max_repeats=128, max_time=max_time,
                                  optlib="random", progbar=False)
    tree = cotengra.array_contract_tree([tuple(s) for s in scopes], tuple(keep), dict(sizes),
                                        optimize=opt)
    ours = _path_tree(tree.get_path(), scopes, sizes, keep)
    greedy = _opt_einsum_tree(scopes, sizes, keep)
    if greedy.stats()["flops"] < ours.stats()["flops"]:
        return greedy, "opt_einsum"
    return ours, "cotengra"


@cached("compiled.plans", maxsize=256)
def plan_structure(scopes: tuple, sizes: tuple, functional: tuple, keep: tuple,
                   method: str) -> Plan:
    """The cached plan of one structure (hashable arguments; see ``plan``): ``scopes`` per
    factor, ``sizes`` as ``(name, size)`` pairs, ``functional`` per factor (or None), the
    names to ``keep``, the planner ``method``.

    Example:
        >>> args = ((("i", "j"), ("j",)), (("i", 2), ("j", 3)), (None, None), ("i",), "auto")
        >>> p = plan_structure(*args)
        >>> p.method, p.tree.seps, plan_structure(*args) is p
        ('opt_einsum', (('i', 'j'), ('j',), ('i',)), True)
    """
    size = dict(sizes)
    if method == "cotengra":
        tree, method = _cotengra_tree(scopes, size, keep)
        return Plan(scopes, size, keep, tree, method, functional)
    if method == "auto":
        method = ("jointree" if any(functional) or len(scopes) > _AUTO_OPT_EINSUM
                  else "opt_einsum")
    if method == "jointree":
        tree = build_jointree(scopes, functional, size, keep)
    elif method == "opt_einsum":
        tree = _opt_einsum_tree(scopes, size, keep)
    else:
        raise ValueError(f"plan(method={method!r}): choose one of {METHODS}")
    return Plan(scopes, size, keep, tree, method, functional)


def _structure(factors: Sequence):
    scopes, sizes, functional = [], {}, []
    for k, f in enumerate(factors):
        out = f.out if isinstance(f, Functional) else None
        term = f.term if isinstance(f, Functional) else f
        if not isinstance(term, Funsor):
            raise TypeError(f"plan(): factor {k} must be a Tensor or functional(...), got "
                            f"{type(term).__name__}: wrap an array as fc.Tensor(data, inputs)")
        if term.output.shape or term.output.dtype != "real":
            raise ValueError(f"plan(): factor {k} must be real scalar valued, but its output "
                             f"is {term.output}")
        for n, d in term.inputs.items():
            if d.dtype == "real":
                raise ValueError(f"plan(): factor {k} has a real input {n!r}: {d}; compiled "
                                 f"elimination takes factors of Bint inputs only")
            if sizes.setdefault(n, d.size) != d.size:
                raise ValueError(f"plan(): input {n!r} is Bint[{sizes[n]}] in one factor but "
                                 f"Bint[{d.size}] in factor {k}; a name has one domain.")
        scopes.append(tuple(term.inputs))
        functional.append(out)
    return tuple(scopes), sizes, tuple(functional)


def plan(factors: Sequence, eliminate: frozenset, plates: frozenset = frozenset(),
         method: str = "auto", *, memory_budget: int | None = None,
         itemsize: int = 8):
    """Plan the elimination of ``eliminate`` from the product of ``factors`` (Tensors or
    ``functional(...)`` declarations; only their structure is read).

    Args:
        factors: factors over Bint inputs; ``functional`` ones are replicated and used to
            shrink separators when ``method`` is "jointree" (or "auto" picks it).
        eliminate: the names (or Variables) summed out; every other input is kept, in order
            of appearance.
        plates: plate names (in ``eliminate`` to take their product, as ``sum_product``):
            the plan is then a ``PlatedPlan`` of Tensor factors, the plated ``sum_product``
            compiled once per semiring (``stats()["plates"]``: the plates' sub-programs).
        method: "auto", "jointree" (min-fill, replication, SHRINK_SEP), "opt_einsum" (its
            "auto" path search) or "cotengra" (its hyper-optimizer, ~5 s of search, when
            installed; opt_einsum's path instead where that has fewer flops: ``plan.method``
            says which).
        memory_budget: bytes; a plan whose messages need more raises ``MemoryBudgetError``
            naming the largest cluster (default: ``memory_budget`` context or free memory).
        itemsize: bytes per entry for the memory figures.

    Example:
        >>> u = fc.Tensor(np.array([0.3, 0.7]), {"u": fc.Bint[2]})
        >>> g = fc.functional(fc.Tensor(np.eye(2), {"u": fc.Bint[2], "x": fc.Bint[2]}), "x")
        >>> p = plan([u, g], frozenset({"u"}), method="jointree")
        >>> p([u, g]).data
        array([0.3, 0.7])

        The plan runs in linear space, ``(add, mul)``, unless called with the log semiring
        (tables of log values; a functional table in ``{-inf, 0}``):

        >>> lg = fc.Tensor(np.where(np.eye(2) > 0, 0.0, -np.inf),
        ...                {"u": fc.Bint[2], "x": fc.Bint[2]})
        >>> np.exp(p([u.log(), lg], ops.logaddexp, ops.add).data)
        array([0.3, 0.7])
    """
    if method not in METHODS:
        raise ValueError(f"plan(method={method!r}): choose one of {METHODS}")
    factors = factor_list(factors, (Funsor, Functional))  # one bare factor, as sum_product
    if not factors:  # an IndexError deep in the planner before
        raise ValueError("plan() needs at least one factor (a Tensor or functional(...))")
    scopes, sizes, functional = _structure(factors)
    # A bare name is one name ("ab" is not {"a", "b"}, nor a substring test); Variables are
    # their names, as in ``.reduce`` (one of its domain: a Variable('u', Bint[2]) where u is
    # Bint[3] is a mistake, not u).
    eliminate = (eliminate,) if isinstance(eliminate, (str, Variable)) else eliminate
    for v in eliminate:
        if isinstance(v, Variable) and v.name in sizes and v.output != Bint[sizes[v.name]]:
            raise ValueError(f"plan(): cannot eliminate {v}: the factors' input {v.name!r} is "
                             f"Bint[{sizes[v.name]}]")
    eliminate = frozenset(v.name if isinstance(v, Variable) else v for v in eliminate)
    unknown = sorted(eliminate - frozenset(sizes))
    if unknown:
        raise ValueError(f"plan(): cannot eliminate {unknown}: no factor has them as inputs; "
                         f"the factors' inputs are {dict((n, Bint[s]) for n, s in sizes.items())}")
    if plates:  # the plated sum_product of the factors, compiled (plated_plan.py)
        plates = frozenset({plates} if isinstance(plates, str) else plates)
        return PLATED_PLANNER[0](factors, eliminate, plates, method, memory_budget, itemsize)
    keep = tuple(n for n in sizes if n not in eliminate)
    result = plan_structure(scopes, tuple(sizes.items()), functional, keep, method)
    check_budget(result.tree.stats(itemsize), memory_budget)
    return result
