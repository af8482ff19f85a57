"""Iterative term traversals: ``reinterpret`` and capture-avoiding ``substitute``.

Both walk the term DAG with an explicit stack, so a lazy chain of 10^5 ops never meets
Python's recursion limit, and both visit a shared subterm once.

Example:
    >>> from interpretations import lazy
    >>> x = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
    >>> with lazy:
    ...     y = x + x
    >>> type(y).__name__, fc.reinterpret(y).data
    ('Binary', array([2., 2.]))
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from funsor_core.engine.fast_path import eager_rules, rebuild
from funsor_core.engine.interpreter import get_interpretation
from funsor_core.engine.protocol import children
from funsor_core.ops.builtin import DISTRIBUTIVE_OPS, NONNEGATIVE_DISTRIBUTIVE_OPS, sample
from funsor_core.terms.base import Binary, Funsor, Reduce, Subs, Variable
from funsor_core.terms.contraction import Contraction

__all__ = ["children", "map_args", "reinterpret", "substitute", "fresh_name", "alpha_rename",
           "bound_name", "receives_subs"]


def map_args(args: tuple, fn: Callable[[Funsor], Any]) -> tuple:
    """Replace every funsor inside ``args`` (also inside tuples) by ``fn(funsor)``, visiting
    them in the order of ``children`` (the one children walker, ``engine.protocol``).
    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> map_args((x, (fc.Number(1.0), "a")), lambda f: f.output)
        (Real, (Real, 'a'))
    """
    return tuple(_map(a, fn) for a in args)


def _map(arg: Any, fn: Callable) -> Any:
    if isinstance(arg, Funsor):
        return fn(arg)
    if type(arg) is tuple:
        return tuple(_map(a, fn) for a in arg)
    return arg


def reinterpret(expr: Any) -> Any:
    """Rebuild ``expr`` bottom-up under the active interpretation.

    Example:
        >>> fc.reinterpret(fc.Number(1.0)).data
        1.0
    """
    if not isinstance(expr, Funsor):
        return expr
    memo: dict[int, Any] = {}
    kids_of: dict[int, list] = {}
    flat: set[int] = set()  # Reduces of products walked as their factors (_product_factors)
    unflat: set[int] = set()  # ... whose factors the interpretation would not contract
    interp = get_interpretation()
    stack = [expr]
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        kids = kids_of.get(id(node))
        if kids is None:
            factors = None if id(node) in unflat else _product_factors(node, interp)
            if factors is not None:
                kids = kids_of[id(node)] = factors
                flat.add(id(node))
            else:
                kids = kids_of[id(node)] = children(node)
                if len(kids) > 8 and _kept_classes(kids, interp):
                    # Every child is a leaf of a class no rule sees (2,000 Tensors of a
                    # Contraction): decided per class, so no per-leaf work at all.
                    stack.pop()
                    memo[id(node)] = rebuild(node)
                    continue
            pending = []
            for c in kids:
                if id(c) in memo:
                    continue
                cls = type(c)
                if not cls._kid_pos and eager_rules((cls, *map(type, c._args))) == ():
                    memo[id(c)] = c  # a leaf no rule sees; see _kept_leaf
                    continue
                pending.append(c)
            if pending:
                stack.extend(pending)
                continue
        if id(node) in flat:
            flat.discard(id(node))
            planned = _planned_product(node, [memo[id(c)] for c in kids])
            if planned is None:  # walk the product as it was built (its factors are done)
                unflat.add(id(node))
                del kids_of[id(node)]
                continue
            stack.pop()
            memo[id(node)] = planned
            continue
        stack.pop()
        if not kids and _kept_leaf(node, memo):
            continue
        for c in kids:
            if memo[id(c)] is not c:
                memo[id(node)] = type(node)(*map_args(node._args, lambda c: memo[id(c)]))
                break
        else:
            # No child changed: only the rules can change this term (skip its checks).
            memo[id(node)] = rebuild(node)
    return memo[id(expr)]


def _product_factors(node: Any, interp) -> list | None:
    # A Reduce of a chain of >= 3 factors under one product op that distributes over the
    # reduction for any sign of the factors: its factors, left to right, else None. Built
    # bottom-up, the chain would multiply out to the joint table of all its inputs (K^20 for
    # a recorded 20-variable tree) before one variable is summed out.
    if (type(node) is not Reduce or type(node.arg) is not Binary
            or interp.builds_class_as_is(Binary)):  # (lazy: nothing would multiply out)
        return None
    red_op, prod_op = node.op, node.arg.op
    if ((red_op, prod_op) not in DISTRIBUTIVE_OPS or red_op is sample
            or (red_op, prod_op) in NONNEGATIVE_DISTRIBUTIVE_OPS):
        return None
    factors, todo = [], [node.arg]
    while todo:
        term = todo.pop()
        if type(term) is Binary and term.op is prod_op:
            todo += (term.rhs, term.lhs)
        else:
            factors.append(term)
    return factors if len(factors) >= 3 else None


def _planned_product(node: Reduce, factors: list) -> Any:
    # The Contraction of the evaluated factors, which the rules contract by a plan, when the
    # interpretation would have combined these factors pairwise anyway (a rule alone builds
    # their Binary: decided by type, never by value, so also under jax.jit) and a rule
    # evaluates it; else None. Same term, reassociated: equal up to rounding.
    prod_op, output = node.arg.op, factors[0].output
    for a, b in zip(factors, factors[1:]):
        if (type(b)._kid_pos or b.output != output
                or not eager_rules((Binary, type(prod_op), type(a), type(b)))):
            return None
    if type(factors[0])._kid_pos:
        return None
    result = Contraction(node.op, prod_op, node.reduced_vars, tuple(factors))
    return None if type(result) is Contraction else result


def _kept_classes(kids: list, interp) -> bool:
    return all(not cls._kid_pos and interp.builds_class_as_is(cls)
               for cls in set(map(type, kids)))


def _kept_leaf(term: Funsor, memo: dict) -> bool:
    # A leaf (a Tensor, a Variable) that no rule, hook or tape would see is built again as it
    # is: keep it (apply_optimizer's three passes rebuilt every leaf). Decided when its
    # parent is first visited, so 2,000 leaves of a Contraction never enter the stack.
    if type(term)._kid_pos or eager_rules((type(term), *map(type, term._args))) != ():
        return False
    memo[id(term)] = term
    return True


def fresh_name(name: str, avoid) -> str:
    """``name`` primed until it is not in ``avoid`` (used to alpha-rename bound variables).

    Example:
        >>> fresh_name("x", {"x", "x'"})
        "x''"
    """
    while name in avoid:
        name = name + "'"
    return name


def _restrict(env: tuple, inputs) -> tuple:
    return tuple(pair for pair in env if pair[0] in inputs)


def substitute(expr: Funsor, subs) -> Funsor:
    """Simultaneously substitute ``subs`` (name -> funsor) for free variables of ``expr``.

    Bound variables are renamed when a substituted value would capture them; atoms receive a
    ``Subs`` term, which the active interpretation evaluates or records.

    The walk first plans the order in which the terms are built (children first, each
    (subterm, substitution) pair once), then builds them in that order, releasing each
    result once the last term built from it exists: an intermediate array (a Monte Carlo
    estimate's particles-by-data matrix) is freed as soon as the next one is computed, as
    in straight-line array code, instead of living until the whole expression is done.

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> substitute(x + 1, {"x": fc.Number(2.0)}).data
        3.0
    """
    env0 = _restrict(tuple(sorted(dict(subs).items(), key=lambda kv: kv[0])), expr.inputs)
    if not env0:
        return expr
    plan, uses = _plan_substitution(expr, env0)
    memo: dict[tuple, Funsor] = {}
    for key, node, env, kid_keys in plan:
        if kid_keys is None:
            memo[key] = _substitute_leaf(node, env)
            continue
        # children() and map_args() visit the funsor arguments in the same order.
        values = iter([memo[k] for k in kid_keys])
        memo[key] = type(node)(*map_args(node._args, lambda c, values=values: next(values)))
        for kid in dict.fromkeys(kid_keys):
            uses[kid] -= 1
            if not uses[kid]:
                del memo[kid]
    return memo[_plan_key(expr, env0)]


_UNSEEN = object()


def _plan_key(node: Funsor, env: tuple) -> tuple:
    # Within one substitute call every env is a restriction of the same env0, so its names
    # determine its values.
    return (id(node), tuple(name for name, _ in env))


def _plan_substitution(expr: Funsor, env0: tuple) -> tuple[list, dict]:
    """The build order of ``substitute``: ``(key, node, env, kid_keys)`` for each distinct
    (subterm, restricted substitution) pair, children before parents (``kid_keys``: the keys
    of its funsor arguments in order, or None for a term that takes the substitution whole),
    and how many parents use each key."""
    plan: list = []
    uses: dict = {}
    done: set = set()
    expanded: dict = {}
    stack = [(expr, env0, _plan_key(expr, env0))]
    while stack:
        node, env, key = stack[-1]
        if key in done:
            stack.pop()
            continue
        kids = expanded.get(key, _UNSEEN)
        if kids is _UNSEEN:
            visit = _children_to_visit(node, env)
            kids = expanded[key] = None if visit is None else tuple(
                (c, e, _plan_key(c, e)) for c in visit for e in (_restrict(env, c.inputs),))
            pending = [kid for kid in kids or () if kid[2] not in done]
            if pending:
                stack.extend(pending)
                continue
        stack.pop()
        done.add(key)
        kid_keys = None if kids is None else tuple(k for _, _, k in kids)
        for kid in dict.fromkeys(kid_keys or ()):
            uses[kid] = uses.get(kid, 0) + 1
        plan.append((key, node, env, kid_keys))
    return plan, uses


def _children_to_visit(node: Funsor, env: tuple) -> list | None:
    """The children that the substitution ``env`` passes into, or None when ``node`` takes
    it whole: atoms, Subs (composed), binders that would capture a value (renamed first),
    and the terms of ``receives_subs``."""
    if not env or type(node)._atom or isinstance(node, Subs):
        return None
    bound = node.bound
    if bound and _captured(bound, env)[0]:
        return None
    kids = children(node)
    return None if receives_subs(node, env, kids) else kids


def _captured(bound, env: tuple) -> tuple[set, set]:
    """The bound names that a value of ``env`` would capture, and the values' free names."""
    free = set()
    for _, v in env:
        free.update(v.inputs)
    return bound & free, free


def _substitute_leaf(node: Funsor, env: tuple) -> Funsor:
    # The value of a term that takes the substitution whole (see _children_to_visit).
    if not env:
        return node
    if type(node)._atom:
        return Subs(node, env)
    if isinstance(node, Subs):
        return _compose(node, env)
    bound = node.bound
    if bound:
        captured, free = _captured(bound, env)
        if captured:
            return substitute(_alpha_rename(node, captured, free), dict(env))
    return Subs(node, env)


def receives_subs(node: Funsor, subs: tuple, kids: list | None = None) -> bool:
    """Whether ``node`` makes one of the substituted inputs itself (Stack's and Cat's new
    index, a name it binds inside and exposes outside), so that pushing the value into its
    children would drop it or hit the inner variable: the node receives the ``Subs``, as an
    atom does.

    Example:
        >>> s = fc.Stack("i", (fc.Variable("x", fc.Real), fc.Number(0.0)))
        >>> receives_subs(s, (("i", fc.Number(1, 2)),)), receives_subs(s, (("x", fc.Number(1.0)),))
        (True, False)
    """
    kids = children(node) if kids is None else kids
    bound = node.bound
    return any(k in bound or not any(k in c.inputs for c in kids) for k, _ in subs)


def _compose(node: Subs, env: tuple) -> Funsor:
    # (arg[s])[env] = arg[s[env], env restricted to the names s leaves free]: one simultaneous
    # substitution, so a value from env can never be captured by a name of s.
    inner = tuple((k, substitute(v, dict(env))) for k, v in node.subs)
    names = {k for k, _ in node.subs}
    outer = tuple((k, v) for k, v in env if k not in names and k in node.arg.inputs)
    return Subs(node.arg, inner + outer)


_BOUND_IDS = itertools.count(1)


def bound_name(name: str) -> str:
    """A new name for a bound variable ``name``: ``base$k`` with a process-wide counter ``k``.

    Unique names are what keep capture-avoiding substitution linear on long chains that reuse
    names: a binder renamed to a fresh ``x$k`` can never collide with a name bound deeper in
    its body, so a renaming stops where the free occurrences stop (priming ``x -> x'`` would
    collide with the binder below, rename it too, and cascade down the whole chain). Bound
    names are never free, so ``$`` names never reach a term's ``inputs``.

    Example:
        >>> bound_name("x").split("$")[0], bound_name("x$3").split("$")[0]
        ('x', 'x')
    """
    return f"{name.split('$', 1)[0]}${next(_BOUND_IDS)}"


def _alpha_rename(node: Funsor, captured: set, free: set) -> Funsor:
    return alpha_rename(node, {name: bound_name(name) for name in sorted(captured)})


def alpha_rename(node: Funsor, mapping: dict) -> Funsor:
    """Rename variables bound by ``node`` (``mapping``: old -> new name), derived from its
    class's declaration: names in the ``binds`` fields are mapped, and every funsor in the
    other fields (the binder's scope) has its free occurrences renamed.

    Example:
        >>> f = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
        >>> from interpretations import lazy
        >>> with lazy:
        ...     r = alpha_rename(f.reduce(ops.add, "i"), {"i": "k"})
        >>> sorted(r.reduced_vars)
        ['k']
    """
    cls = type(node)
    binds = cls._bind_pos
    # Each child keeps its own domain for a renamed name (Cat's parts differ in size).
    args = tuple(
        _rename_names(a, mapping) if i in binds
        else _map(a, lambda c: rename_in(c, mapping, c.inputs))
        for i, a in enumerate(node._args))
    return cls(*args)


def _rename_names(value: Any, mapping: dict) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, Variable):
        return Variable(mapping.get(value.name, value.name), value.output)
    if isinstance(value, frozenset):
        return frozenset(_rename_names(v, mapping) for v in value)
    if isinstance(value, tuple):
        return tuple(_rename_names(v, mapping) for v in value)
    return value


def rename_in(term: Funsor, mapping: dict, domains: dict) -> Funsor:
    """Rename free variables of ``term`` (``mapping``: old -> new name)."""
    subs = {old: Variable(new, domains[old]) for old, new in mapping.items() if old in term.inputs}
    return substitute(term, subs) if subs else term
