"""Functional factors: a 0/1 table ``f(X, U)`` with exactly one 1 per assignment of ``U``,
i.e. ``X = g(U)`` (Darwiche 2020, section 2.1).

Two exact licences follow and the jointree planner uses both: a functional factor may be
duplicated (Theorem 4: ``f * G = G`` when ``f`` is in ``G``), and when a copy sits on both
sides of a product, ``X`` may be summed out of one side first (Theorem 3: ``G * H =
G * sum_X H``; Corollary 1: ``sum_X G * H = (sum_X G) * (sum_X H)``).

Declaring a factor functional is checked on concrete data (a table that is not 0/1, or has
zero or several 1s for some parent assignment, is refused with the variable named); a
symbolic factor whose values arrive later (a ``Variable`` parameter) is checked when they
arrive: a plan's or a compiled program's call checks each table in a declared slot, raising
for a concrete one (naming the variable, and the program's parameter) and, for a table
traced under ``jax.jit``, answering NaN unless it is functional (``is_functional_flag``,
``row_flags``): the check that raises eagerly cannot raise on a traced value, and a number
would be wrong. The licences hold for any functional values, so a program may still be
given different functional tables on each call.

Example:
    >>> g = fc.Tensor(np.array([[0.0, 1.0], [1.0, 0.0]]), {"u": fc.Bint[2], "x": fc.Bint[2]})
    >>> f = functional(g, "x")
    >>> f.out, f.parents
    ('x', ('u',))
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Funsor

__all__ = ["Functional", "FunctionalError", "functional", "is_functional_flag", "index_table",
           "eliminate_functional", "table_is_functional", "row_flags"]

_NOT_FUNCTIONAL = (
    "functional(..., out={out!r}): the factor over {inputs} is not a function giving {out!r}: "
    "{why}. A functional factor holds only {zero} and {one}, with exactly one {one} per "
    "assignment of its parents {parents}. Declare only deterministic tables functional, e.g. "
    "functional(Tensor(np.eye(3), {{'u': Bint[3], 'x': Bint[3]}}), 'x'); a noisy table must "
    "stay an ordinary factor (declaring it would make the planner's rewrites wrong)."
)


class FunctionalError(ValueError):
    """A factor declared functional is not: its data is not 0/1 with one 1 per parent
    assignment (the message names the variable and the first bad parent assignment).

    Example:
        >>> noisy = fc.Tensor(np.full((2, 2), 0.5), {"u": fc.Bint[2], "x": fc.Bint[2]})
        >>> try:
        ...     functional(noisy, "x")
        ... except FunctionalError as e:
        ...     print(str(e)[:58])
        functional(..., out='x'): the factor over {'u': Bint[2], '
    """


class Functional:
    """A factor declared to be a function ``out = g(parents)``: the ``term`` (a Tensor, or any
    funsor over the same inputs whose values arrive later) and the name it gives.

    ``log`` says which encoding holds the 0/1 table: ``False`` for ``{0, 1}`` (the
    ``(add, mul)`` semiring), ``True`` for ``{-inf, 0}`` (``(logaddexp, add)``).

    Example:
        >>> t = fc.Tensor(np.eye(2), {"u": fc.Bint[2], "x": fc.Bint[2]})
        >>> functional(t, "x").inputs
        {'u': Bint[2], 'x': Bint[2]}
    """

    __slots__ = ("term", "out", "log", "parents")

    def __init__(self, term: Funsor, out: str, log: bool = False) -> None:
        self.term = term
        self.out = out
        self.log = bool(log)
        # The discrete inputs other than out (a symbolic factor's parameter inputs are not).
        self.parents = tuple(k for k, d in term.inputs.items()
                             if k != out and d.dtype != "real")

    @property
    def inputs(self) -> dict:
        return self.term.inputs

    def __repr__(self) -> str:
        return f"functional({self.term!r}, out={self.out!r})"


def _check_domains(term: Funsor, out: str) -> None:
    if not isinstance(term, Funsor):
        raise TypeError(f"functional(term, out={out!r}) takes a funsor, e.g. a Tensor over "
                        f"{out!r} and its parents, got {type(term).__name__}: wrap an array "
                        f"as fc.Tensor(table, {{'u': fc.Bint[n], {out!r}: fc.Bint[m]}})")
    if out not in term.inputs:
        raise FunctionalError(f"functional(..., out={out!r}): {out!r} is not an input of the "
                              f"factor; its inputs are {dict(term.inputs)}.")
    domain = term.inputs[out]
    if domain.dtype == "real" or domain.shape:
        raise FunctionalError(f"functional(..., out={out!r}): {out!r} must be a Bint, but it is "
                              f"{domain}.")
    if term.output.shape:
        raise FunctionalError(f"functional(..., out={out!r}): the factor must be scalar "
                              f"valued, but its output is {term.output}.")


def _first_bad(table: np.ndarray, log: bool) -> str | None:
    # table: parents flattened first, out last. Returns why it is not functional, or None.
    one = 0.0 if log else 1.0
    zero = -np.inf if log else 0.0
    is_one, is_zero = table == one, table == zero
    stray = ~(is_one | is_zero)
    if stray.any():
        row, col = np.argwhere(stray)[0]
        return f"entry {float(table[row, col])!r} is neither {zero} nor {one}", row
    counts = is_one.sum(-1)
    bad = np.flatnonzero(counts != 1)
    if bad.size:
        return f"{int(counts[bad[0]])} entries are {one}", bad[0]
    return None


def _check_data(term: Tensor, out: str, log: bool) -> None:
    names = tuple(term.inputs)
    data = term.data
    if not ops.is_concrete(data):
        return  # traced under jit: trust the declaration, as for symbolic factors
    axes = [i for i, k in enumerate(names) if k != out] + [names.index(out)]
    table = np.asarray(ops.detach(data) if hasattr(data, "detach") else data, dtype=float)
    table = np.transpose(table, axes).reshape(-1, term.inputs[out].size)
    found = _first_bad(table, log)
    if found is None:
        return
    why, row = found
    parents = [k for k in names if k != out]
    shape = [term.inputs[k].size for k in parents]
    where = dict(zip(parents, (int(i) for i in np.unravel_index(int(row), shape)))) \
        if parents else {}
    raise FunctionalError(_NOT_FUNCTIONAL.format(
        out=out, inputs=dict(term.inputs), parents=tuple(parents),
        why=f"at {where}, {why}" if where else why,
        zero="-inf" if log else "0", one="0" if log else "1"))


def is_functional_flag(term: Tensor, out: str, log: bool = False):
    """A 0-d boolean array, computed by array ops (so it may be traced under ``jax.jit``):
    whether ``term``'s table is 0/1 with exactly one 1 per parent assignment.

    Example:
        >>> g = fc.Tensor(np.array([[0.0, 1.0], [0.5, 0.5]]), {"u": fc.Bint[2], "x": fc.Bint[2]})
        >>> bool(is_functional_flag(g, "x"))
        False
    """
    data = term.data
    one, zero = (0.0, -float("inf")) if log else (1.0, 0.0)
    is_one = ops.eq(data, one)
    counts = ops.sum(ops.astype(is_one, "int"), list(term.inputs).index(out))
    return ops.and_(ops.all(ops.or_(is_one, ops.eq(data, zero))),
                           ops.all(ops.eq(counts, 1)))


def table_is_functional(data, axis: int, log: bool = False, rows: int | None = None):
    """Whether the array ``data`` is a 0/1 table with exactly one 1 along ``axis`` for every
    index of the other axes (``{-inf, 0}`` and one 0 when ``log``): a Python bool for a
    concrete numpy or torch array, a 0-d boolean array otherwise (traced under ``jax.jit``).
    ``rows``: the number of such indices, when the caller knows it.

    Two passes instead of a test per entry: the table has as many nonzeros as rows and each
    row sums to 1. A row summing to 1 has a nonzero, so the count leaves each row exactly
    one, and that one is then the row's sum, 1. In log space: as many entries above -inf as
    rows, and each row's max is 0. NaN fails (its row's sum or max is NaN).

    Example:
        >>> table_is_functional(np.eye(3)[[2, 0, 2]], 1), table_is_functional(np.eye(3) / 2, 1)
        (True, False)
    """
    if rows is None:
        shape = tuple(data.shape)
        rows = math.prod(shape[:axis] + shape[axis + 1:])
    if isinstance(data, np.ndarray):
        if log:
            return int(np.count_nonzero(data != -math.inf)) == rows and \
                not np.count_nonzero(np.maximum.reduce(data, axis))
        return int(np.count_nonzero(data)) == rows and \
            not np.count_nonzero(np.add.reduce(data, axis) - 1)
    if hasattr(data, "_version") and ops.is_concrete(data):  # torch, eager
        data = data.detach()  # a check, not part of the computation
        if log:
            return int((data != -math.inf).sum()) == rows and bool((data.amax(axis) == 0).all())
        return int((data != 0).sum()) == rows and bool((data.sum(axis) == 1).all())
    return ops.all(row_flags(data, axis, log))


def row_flags(data, axis: int, log: bool = False):
    """Per index of the axes other than ``axis`` (in their order), whether ``data`` holds one
    1 and 0s along ``axis`` (one 0 and -infs when ``log``), by array ops (traced under
    ``jax.jit`` too): one nonzero (one entry above -inf), and the row's max is 1 (0). Two
    reductions of one shape, which a compiler fuses into one pass.

    Example:
        >>> row_flags(np.array([[0.0, 1.0], [1.0, 1.0]]), 1).tolist()
        [True, False]
    """
    ones = ops.sum(ops.astype(ops.ne(data, -math.inf if log else 0.0), "int"), axis)
    return ops.and_(ops.eq(ones, 1), ops.eq(ops.amax(data, axis), 0.0 if log else 1.0))


def functional(term: Funsor, out: str, log: bool = False) -> Functional:
    """Declare ``term`` a functional factor giving ``out`` from its other inputs.

    Args:
        term: a Tensor (its data is checked) or a symbolic funsor of Bint inputs (its
            values are checked when a plan or a compiled program receives them).
        out: the name of the input that the factor determines.
        log: the table is in log space (``{-inf, 0}``) rather than ``{0, 1}``.

    Raises:
        FunctionalError: a concrete table that is not 0/1 with one 1 per parent assignment.

    Example:
        >>> bad = fc.Tensor(np.full((2, 2), 0.5), {"u": fc.Bint[2], "x": fc.Bint[2]})
        >>> functional(bad, "x")
        Traceback (most recent call last):
        ...
        funsor_core.algorithms.compiled.functional.FunctionalError: functional(..., out='x'): ...
    """
    if isinstance(term, Functional):
        term = term.term
    _check_domains(term, out)
    if isinstance(term, Tensor):
        _check_data(term, out, log)
    return Functional(term, out, log)


def index_table(factor: Functional) -> Tensor:
    """The function ``g`` of a concrete functional factor as an index table: a Tensor over
    the parents whose values are ``out``'s value (a ``Bint`` valued Tensor).

    Example:
        >>> t = fc.Tensor(np.array([[0.0, 1.0], [1.0, 0.0]]), {"u": fc.Bint[2], "x": fc.Bint[2]})
        >>> index_table(functional(t, "x")).data
        array([1, 0])
    """
    term = factor.term
    if not isinstance(term, Tensor):
        raise TypeError(f"index_table({factor!r}): needs concrete data, got a symbolic factor")
    names = tuple(term.inputs)
    axis = names.index(factor.out)
    one = 0.0 if factor.log else 1.0
    index = ops.argmax(term.data == one, axis)
    inputs = {k: d for k, d in term.inputs.items() if k != factor.out}
    return Tensor(index, inputs, term.inputs[factor.out].size)


def eliminate_functional(h: Funsor, factor: Functional) -> Funsor:
    """``sum_X f(X, U) * h(X, ...) = h[X := g(U)]``: eliminate ``out`` by a gather instead of
    a product and a sum (the Delta elimination of a functional factor, in the ``(add, mul)``
    semiring; in log space it is the same substitution).

    Example:
        >>> t = fc.Tensor(np.array([[0.0, 1.0], [1.0, 0.0]]), {"u": fc.Bint[2], "x": fc.Bint[2]})
        >>> h = fc.Tensor(np.array([10.0, 20.0]), {"x": fc.Bint[2]})
        >>> eliminate_functional(h, functional(t, "x")).data
        array([20., 10.])
    """
    return h(**{factor.out: index_table(factor)})
