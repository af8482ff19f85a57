"""Einsum in any of the semirings ``(add, mul)``, ``(logaddexp, add)``, ``(max, add)``,
``(min, add)``, optionally plated, as funsor's ``funsor.einsum``.

``einsum`` builds terms through the active interpretation: a ``Contraction`` of the operands
(or, with plates, the plated elimination of ``sum_product``). ``exact`` evaluates a
Contraction of Tensors with a cached contraction plan (``algorithms.plan``) and the semiring
kernels of ``algorithms.kernels``; ``lazy`` records it; any other interpretation (a tape, an
optimizer) sees it and may replace it. An einsum of arrays replays its recorded elimination
(unplated: its one Contraction) on the arrays from its second call, building no Tensor, where
the interpreter shows that building the terms would make the same kernel calls and nothing
else (``algorithms.contract.replay``); an einsum of Tensors alone replays it on their arrays
and builds only the result Tensor.
Operands are funsors whose inputs are named by the equation's letters, or arrays (then the
result is an array). ``backend`` picks the semiring by funsor's strings (``"numpy"``,
``"torch"``, ``"jax.numpy"``; ``"pyro.ops.einsum.torch_log"``, ``"funsor.einsum.numpy_log"``;
``..._map``) or our short names ``"linear"``, ``"log"``, ``"max"``, ``"min"``.

As numpy does, a letter repeated within an array operand takes its diagonal (``"ii->i"``,
``"ii->"`` is the trace), and a letter repeated in the output is an error.

Example:
    >>> x = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    >>> y = fc.Tensor(np.ones(3), {"b": fc.Bint[3]})
    >>> einsum("ab,b->a", x, y).data
    array([3., 3.])
    >>> einsum("ii->", np.arange(4.0).reshape(2, 2))  # the trace
    array(3.)
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, NamedTuple

from funsor_core import ops
from funsor_core.algorithms.contract.kernels import SEMIRINGS
from funsor_core.algorithms.contract.plan import plan_contraction, plan_tensors
from funsor_core.algorithms.contract.replay import CONTRACT, check_of, compile_elimination
from funsor_core.algorithms.eliminate.plated import recorded_program, sum_product
from funsor_core.algorithms.eliminate.schedule import structure_of
from funsor_core.atoms.int_range import FLOAT_DTYPES, real_data
from funsor_core.atoms.tensor import Tensor, align_tensor, is_array
from funsor_core.domains import Bint, Domain, Real
from funsor_core.engine.backend import backend_names
from funsor_core.engine.cache import FastCache, cached
from funsor_core.ops.op import is_scalar
from funsor_core.terms.base import Funsor, Number, to_funsor
from funsor_core.terms.contraction import Contraction, term_sort_key

__all__ = [
    "einsum", "naive_einsum", "naive_plated_einsum", "naive_contract_einsum", "contract_arrays",
    "contract_tensors", "semiring_of_backend", "SEMIRINGS", "BACKEND_OPS", "BACKEND_ADJOINT_OPS",
]

# funsor's backend strings and the semiring each names: a name of an array backend (also
# "jax.numpy", a name the registry knows it by) names the plain sum.
BACKEND_OPS = {
    **dict.fromkeys(backend_names(aliases=True), (ops.add, ops.mul)),
    "pyro.ops.einsum.torch_log": (ops.logaddexp, ops.add),
    "pyro.ops.einsum.torch_marginal": (ops.logaddexp, ops.add),
    "pyro.ops.einsum.torch_map": (ops.max, ops.add),
    "pyro.ops.einsum.torch_sample": (ops.logaddexp, ops.add),
    "funsor.einsum.numpy_log": (ops.logaddexp, ops.add),
    "funsor.einsum.numpy_map": (ops.max, ops.add),
}
# The backends whose adjoint (backward pass) computes marginals (logaddexp) or MAP (max).
BACKEND_ADJOINT_OPS = {
    "pyro.ops.einsum.torch_marginal": (ops.logaddexp, ops.add),
    "pyro.ops.einsum.torch_map": (ops.max, ops.add),
}


def semiring_of_backend(backend: str) -> tuple:
    """The ``(sum_op, prod_op)`` named by an einsum backend string.

    Example:
        >>> semiring_of_backend("pyro.ops.einsum.torch_log")
        (ops.logaddexp, ops.add)
    """
    if backend in BACKEND_OPS:
        return BACKEND_OPS[backend]
    name = backend.rsplit(".", 1)[-1]
    if name == "linear" or name in backend_names():
        return ops.add, ops.mul
    if name == "log" or name.endswith("_log"):
        return ops.logaddexp, ops.add
    if name in ("max", "map") or name.endswith("_map"):
        return ops.max, ops.add
    if name == "min":
        return ops.min, ops.add
    raise ValueError(
        f"einsum backend {backend!r} is not supported; use 'numpy'/'torch'/'jax.numpy' (sum), "
        "a '..._log' name or 'log' (logsumexp), a '..._map' name or 'max' (max-plus), or 'min'")


# ---------------------------------------------------------------------------------------------
# Arrays and Tensors.
def contract_arrays(sum_op, prod_op, inputs: list, output: str, operands: list):
    """Semiring einsum of arrays: ``inputs[k]`` names the dims of ``operands[k]``.

    Args:
        sum_op, prod_op: one of ``SEMIRINGS``.
        inputs: one string of distinct letters per operand.
        output: the letters of the result, in order.

    Example:
        >>> a, b = np.zeros((2, 3)), np.zeros(3)
        >>> contract_arrays(ops.logaddexp, ops.add, ["ab", "b"], "a", [a, b])
        array([1.09861229, 1.09861229])
    """
    if (sum_op, prod_op) not in SEMIRINGS:
        raise NotImplementedError(f"no einsum kernel for semiring ({sum_op}, {prod_op})")
    for letters in inputs:
        if len(set(letters)) != len(letters):
            raise ValueError(f"repeated index within one operand ({letters!r}); take the "
                             "diagonal first (einsum does)")
    if len(inputs) != len(operands):
        raise ValueError(f"{len(inputs)} subscripts for {len(operands)} operands")
    sizes: dict = {}
    for k, (letters, x) in enumerate(zip(inputs, operands)):
        if len(letters) != len(x.shape):
            raise ValueError(f"operand {k} of shape {tuple(x.shape)} has {len(x.shape)} dims, "
                             f"but its subscripts {letters!r} name {len(letters)}")
        for c, n in zip(letters, x.shape):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"index {c!r} has size {sizes[c]} in one operand but {n} in "
                                 f"operand {k}")
    plan = plan_contraction([tuple(letters) for letters in inputs], sizes, tuple(output))
    return plan.run_arrays(sum_op, prod_op, operands)


_IKEY, _DATA, _OUTPUT = attrgetter("_ikey"), attrgetter("data"), attrgetter("output")
_REAL, _DTYPE = Real, attrgetter("dtype")


def contract_tensors(sum_op, prod_op, reduced_vars: frozenset, tensors) -> Tensor:
    """Semiring contraction of scalar-output Tensors over the names ``reduced_vars``, along a
    plan cached by structure (the result has the Tensors' dtype: real, or Bint[2] for
    ``(or_, and_)``).

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> contract_tensors(ops.add, ops.mul, frozenset({"j"}), [f, f]).data
        array([3., 3.])
    """
    plan, out_ikey = plan_tensors(tuple(map(_IKEY, tensors)), reduced_vars)
    output = tensors[0].output
    if output.shape:
        output = Domain(output.dtype, ())
    arrays = list(map(_DATA, tensors))
    # floats (an int8 einsum wraps; torch's refuses int64 sums); the dtypes gathered by one
    # C-level pass (2,000 arrays for a 1,000-variable tree)
    if output.dtype == "real" and not set(map(_DTYPE, arrays)) <= FLOAT_DTYPES:
        for k, x in enumerate(arrays):
            if x.dtype not in FLOAT_DTYPES:
                arrays[k] = real_data(x)
    data = plan.run_arrays(sum_op, prod_op, arrays)
    return Tensor.make(data, dict(out_ikey), output.dtype, ikey=out_ikey, output=output)


# ---------------------------------------------------------------------------------------------
# The einsum front end: parse and check, then build terms.
def _parse(eq: str, count: int):
    if not isinstance(eq, str):
        raise TypeError(f"einsum equation must be a str, got {type(eq).__name__}")
    return _parse_cached(eq, count)


@cached("contract.einsum_equations", maxsize=1024, fast=True)
def _parse_cached(eq: str, count: int):
    # (subscripts as a tuple, output); pure in its arguments, so cached by them.
    if not isinstance(eq, str):
        raise TypeError(f"einsum equation must be a str, got {type(eq).__name__}")
    text = eq.replace(" ", "")
    if "." in text:
        raise ValueError(f"einsum equation {eq!r}: ellipsis ('...') is not supported; name "
                         "every dim with a letter")
    lhs, arrow, output = text.partition("->")
    inputs = lhs.split(",")
    if not arrow:  # numpy's implicit output: the letters used once, in sorted order
        counts: dict = {}
        for c in lhs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        output = "".join(sorted(c for c, k in counts.items() if k == 1))
    bad = [c for c in lhs.replace(",", "") + output if c in "->,"]
    if bad or "->" in output:
        raise ValueError(f"einsum equation {eq!r} is malformed: write e.g. 'ab,bc->ac'")
    if len(inputs) != count:
        raise ValueError(f"einsum equation {eq!r} names {len(inputs)} operand(s), but "
                         f"{count} were given")
    repeated = sorted({c for c in output if output.count(c) > 1})
    if repeated:
        raise ValueError(f"einsum equation {eq!r}: output letter(s) {repeated} appear more "
                         "than once (as numpy, a repeated output letter is an error)")
    return tuple(inputs), output


def _kept_output(eq: str, inputs, output: str, arrays: bool) -> str:
    # An output letter in no operand: an array result would need its size, so that is an
    # error; a funsor is constant along a name it lacks (names broadcast), so the letter is
    # dropped and the result has no such input, as in funsor 0.4.8.
    letters = set("".join(inputs))
    if all(c in letters for c in output):
        return output
    if arrays:
        missing = sorted(set(output) - letters)
        raise ValueError(f"einsum equation {eq!r}: output letter(s) {missing} do not appear in "
                         "any operand, so an array result has no size for them")
    return "".join(c for c in output if c in letters)


def _diagonal(x, letters: str):
    # A letter repeated within an array operand takes the diagonal (copies, no arithmetic, so
    # it is right in every semiring).
    unique = "".join(dict.fromkeys(letters))
    if unique == letters:
        return x, letters
    sizes: dict = {}
    for c, n in zip(letters, x.shape):
        if sizes.setdefault(c, n) != n:
            raise ValueError(f"einsum operand of shape {tuple(x.shape)}: the repeated letter "
                             f"{c!r} spans dims of sizes {sizes[c]} and {n}; a diagonal needs "
                             "equal sizes")
    table = str.maketrans(unique, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[
        :len(unique)])
    return ops.einsum(f"{letters}->{unique}".translate(table), x), unique


def _as_tensors(inputs, operands):
    arrays = True
    tensors, sizes, new_inputs = [], {}, []
    for k, (letters, o) in enumerate(zip(inputs, operands)):
        if isinstance(o, Funsor):
            arrays = False
            if len(set(letters)) != len(letters) or set(o.inputs) != set(letters) or o.shape:
                raise ValueError(
                    f"einsum operand {k} has inputs {list(o.inputs)} and output {o.output}, "
                    f"which do not match its letters {letters!r}: a funsor operand needs one "
                    "scalar input per letter, named by it")
            tensors.append(o)
            new_inputs.append(letters)
            for c, d in o.inputs.items():
                sizes.setdefault(c, (d.size, k))
            continue
        if is_scalar(o):  # a number (2.0, np.float64(2.0)) combines with any backend's
            if letters:
                raise ValueError(f"einsum operand {k} is the number {o!r}, which has no "
                                 f"dims, but its letters {letters!r} name {len(letters)}")
            tensors.append(to_funsor(o))
            new_inputs.append(letters)
            continue
        if not is_array(o):
            raise TypeError(f"einsum operands are funsors, arrays or numbers, got "
                            f"{type(o).__name__} (operand {k})")
        shape = o.shape
        if len(shape) != len(letters):
            raise ValueError(f"einsum operand {k} of shape {tuple(shape)} has "
                             f"{len(shape)} dims, but its letters {letters!r} name "
                             f"{len(letters)}")
        if len(set(letters)) != len(letters):
            o, letters = _diagonal(o, letters)
            shape = o.shape
        domains = {}
        for c, n in zip(letters, shape):
            size, first = sizes.setdefault(c, (n, k))
            if size != n:
                raise ValueError(f"einsum letter {c!r} has size {size} in operand {first} but "
                                 f"{n} in operand {k}")
            domains[c] = Bint[n]
        tensors.append(Tensor(o, domains))
        new_inputs.append(letters)
    # Mixed array backends raise where the operands meet (Contraction, Binary), naming both.
    return arrays, tensors, new_inputs


def _finish(result, output: str, arrays: bool):
    if not isinstance(result, Tensor):
        if arrays and isinstance(result, Number):
            return result.data  # numbers in (an equation with no letters): a number out
        return result  # a lazy term under a non-evaluating interpretation stays a term
    if arrays:
        return align_tensor({c: result.inputs[c] for c in output}, result)
    # A Tensor result has its inputs in the order of the equation's output.
    return result if tuple(result.inputs) == tuple(output) else result.align(tuple(output))


def inputs_union(inputs) -> str:
    """All letters of a list of operand subscripts, in first-seen order.

    Example:
        >>> inputs_union(["ab", "bc"])
        'abc'
    """
    return "".join(dict.fromkeys("".join(inputs)))


def _contract(sum_op, prod_op, tensors, reduced: frozenset):
    if len(tensors) == 1:
        return tensors[0].reduce(sum_op, reduced) if reduced else tensors[0]
    return Contraction(sum_op if reduced else None, prod_op, reduced, tuple(tensors))


def _check_kept_plates(eq, inputs, output, plates, modulo_total: bool) -> None:
    # A kept plate p must be in every operand that holds a summed variable: otherwise that
    # variable is shared by all slices of p, and no per-slice value is the total.
    if modulo_total:
        return
    summed = set(inputs_union(inputs)) - set(output) - set(plates)
    for p in (c for c in output if c in plates):
        for k, letters in enumerate(inputs):
            shared = sorted(c for c in letters if c in summed)
            if p not in letters and shared:
                raise ValueError(
                    f"einsum {eq!r} keeps plate {p!r} in the output, but operand {k} "
                    f"({letters!r}) is outside it and its summed variable(s) {shared} are shared "
                    f"by every slice of {p!r}: no per-slice value is the total. Reduce {p!r} "
                    "too, or pass modulo_total=True to treat each slice as its own factor graph")


def einsum(eq: str, *operands, plates: str = "", backend: str = "numpy",
           modulo_total: bool = False):
    """Semiring einsum, optionally plated: letters in ``plates`` are product-reduced plates.

    Args:
        eq: e.g. ``"ab,bc->ac"`` (without ``->``, numpy's implicit output).
        operands: Tensors whose inputs are the letters, or arrays (giving an array back);
            a number (``2.0``, ``np.float64(2.0)``) for an operand with no letters.
        plates: letters that index plates (as in Pyro's plated einsum).
        backend: the semiring, see the module docstring.
        modulo_total: with plates kept in the output, allow summed variables outside them;
            each slice of a kept plate is then contracted as its own factor graph.

    Raises:
        ValueError: a malformed equation, operands that do not match it, or a kept plate
            that a summed variable lies outside of (unless ``modulo_total``).

    Example:
        >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> einsum("ab->a", a, backend="funsor.einsum.numpy_map")
        array([2., 4.])
    """
    # Everything but the arrays' values is structure: the parsed equation, the checks, the
    # Tensors' domains, the canonical order of the terms. It is computed once per structure
    # (the equation, the options, the operands' types and shapes or inputs) and reused.
    key = _structure_key(eq, operands, plates, backend, modulo_total)
    entry = _EINSUM_STRUCTURES.data.get(key) if key is not None else None
    if entry is None:
        entry, tensors = _einsum_structure(eq, operands, plates, backend, modulo_total)
        if key is not None and entry.domains is not None:
            _EINSUM_STRUCTURES[key] = entry
    else:
        replay = _ARRAY_PROGRAMS.data.get(key) if entry.arrays or entry.funsors else None
        if replay is not None:
            # Arrays in, an array out (Tensors in, a Tensor out), where building the terms
            # would only make these calls.
            if entry.arrays:
                results = replay.program.run(operands)
            else:
                results = replay.program.run(list(map(_DATA, operands)))
            if results is not None:
                data = results[0]
                if replay.perm is not None:
                    data = ops.permute(data, replay.perm)
                if entry.arrays:
                    return data
                # What the Contraction's rule returns (``contract_tensors``: ``Tensor.make``
                # of the plan's array), aligned to the output as ``_finish`` aligns it.
                return Tensor.make(data, dict(replay.ikey), "real", ikey=replay.ikey,
                                   output=_REAL)
        tensors = list(operands) if entry.funsors else [
            o if d is None else Tensor(o, d) for o, d in zip(operands, entry.domains)]
    if ((entry.arrays or entry.funsors) and key is not None and entry.domains is not None
            and key not in _ARRAY_PROGRAMS and len(tensors) > 1):
        # From the second call, arrays in run the elimination's array program (a contraction
        # of one connected graph is one step of it), with no Tensor built; Tensors in run it
        # on their arrays, with no term built but the result.
        _keep_array_program(key, entry, tensors)
    if entry.order is not None:
        tensors = [tensors[k] for k in entry.order]
    if entry.plates:
        result = sum_product(entry.sum_op, entry.prod_op, tensors, entry.reduced, entry.plates)
    else:
        result = _contract(entry.sum_op, entry.prod_op, tensors, entry.reduced)
    return _finish(result, entry.output, entry.arrays)


class EinsumStructure(NamedTuple):
    """The checked structure of an einsum call, kept per structure key."""

    sum_op: Any
    prod_op: Any
    output: str
    reduced: frozenset
    arrays: bool  # array operands: the result is an array
    domains: tuple | None  # per operand, the domains to wrap an array with (None: a funsor)
    order: tuple | None  # the order Contraction sorts the operands in (None: as given)
    plates: frozenset | None
    funsors: bool = False  # every operand a funsor: the operands are the terms


class EinsumReplay(NamedTuple):
    """An einsum of arrays (or of Tensors alone) run on its arrays: the elimination's
    ``ArrayProgram``, the permutation putting its result's dims in output order (None:
    already in order) and the result's inputs key in that order."""

    program: Any
    perm: tuple | None
    ikey: tuple = ()


_MAX_EINSUM_STRUCTURES = 4096
# FastCaches: one hash of the key per lookup (a graph of 1,000 variables keys 2,000 shapes).
_EINSUM_STRUCTURES = FastCache("contract.einsum_structures", _MAX_EINSUM_STRUCTURES)
# Einsums of arrays whose elimination runs on the arrays: structure key -> EinsumReplay (None:
# the terms are built).
_ARRAY_PROGRAMS = FastCache("contract.einsum_array_programs", _MAX_EINSUM_STRUCTURES)


def _keep_array_program(key, entry: EinsumStructure, tensors) -> None:
    # None is kept too: a structure with no program is not planned again on every call.
    _ARRAY_PROGRAMS[key] = None
    if entry.funsors and not all(type(t) is Tensor and t.dtype == "real" for t in tensors):
        return  # lazy terms, Gaussians, integer-valued Tensors: the terms are built
    if entry.plates:
        program = recorded_program(entry.sum_op, entry.prod_op, tensors, entry.reduced,
                                   entry.plates)
    elif entry.reduced:
        # One Contraction of all operands (``_contract``): a program of that one step.
        structure = structure_of(entry.sum_op, entry.prod_op, tensors)
        program = None if structure is None else compile_elimination(
            entry.sum_op, entry.prod_op, structure,
            ((CONTRACT, tuple(range(len(tensors))), entry.reduced),), (len(tensors),))
    else:
        return  # a plain product: Binary terms, no kernel call
    if program is None or len(program.outputs) != 1:
        return  # no program, or results that sum_product multiplies by terms
    names = [n for n, _ in program.out_ikeys[0]]
    if sorted(names) != sorted(entry.output):
        return
    perm = tuple(names.index(c) for c in entry.output)
    if entry.arrays:
        # The fast path skips wrapping the arrays as well: no rule may rewrite those Tensors.
        program = program.with_checks(tuple(check_of(Tensor, t._args, None, keep_args=False)
                                            for t in tensors))
    ikey = tuple(program.out_ikeys[0][k] for k in perm)
    _ARRAY_PROGRAMS[key] = EinsumReplay(program, None if perm == tuple(range(len(perm)))
                                        else perm, ikey)


def _structure_key(eq, operands, plates, backend, modulo_total):
    # None (no reuse) for operands other than arrays and Tensors, e.g. lazy terms.
    # Arrays of one type (the common case, and 2,000 of them for a 1,000-variable graph):
    # their type and shapes, gathered at C speed. Shapes are tuples (torch.Size is one).
    kinds = set(map(type, operands))
    if len(kinds) == 1:
        kind = next(iter(kinds))
        if kind is Tensor:
            # Tensors alone (2,000 of them for a 1,000-variable graph): their interned input
            # keys and outputs, gathered at C speed (7 fields: no other key has as many).
            return (eq, plates, backend, modulo_total, Tensor, tuple(map(_IKEY, operands)),
                    tuple(map(_OUTPUT, operands)))
        if is_array(operands[0]):
            return (eq, plates, backend, modulo_total, kind,
                    tuple([o.shape for o in operands]))
    parts, kinds = [], {}
    for o in operands:
        kind = type(o)
        if kind is Tensor:
            parts.append((Tensor, o._ikey, o.output))
            continue
        known = kinds.get(kind)
        if known is None:
            known = kinds[kind] = is_array(o)
        if not known:
            return None
        parts.append((kind, o.shape))
    try:
        return (eq, plates, backend, modulo_total, tuple(parts))
    except TypeError:  # an unhashable argument: checked (and reported) by the slow path
        return None


def _einsum_structure(eq, operands, plates, backend, modulo_total) -> tuple:
    # (entry, tensors): the checked structure of an einsum call and this call's Tensors.
    sum_op, prod_op = semiring_of_backend(backend)
    inputs, output = _parse(eq, len(operands))
    arrays, tensors, new_inputs = _as_tensors(inputs, operands)
    output = _kept_output(eq, inputs, output, arrays)
    reduced = frozenset(inputs_union(new_inputs)) - frozenset(output)
    if plates:
        _check_kept_plates(eq, new_inputs, output, plates, modulo_total)
    # The domains to wrap each array operand with (None: a funsor, used as it is). An operand
    # whose letters repeat takes its diagonal first, which is arithmetic, not structure: such
    # a call is not reused (domains None).
    domains = None
    if all(len(set(a)) == len(a) for a in inputs):
        domains = tuple(None if isinstance(o, Funsor) else dict(t.inputs)
                        for o, t in zip(operands, tensors))
    order = None
    if not plates and len(tensors) > 1:
        # Contraction sorts its terms; handing them over in that order spares the sort.
        keys = [term_sort_key(t) for t in tensors]
        perm = sorted(range(len(tensors)), key=keys.__getitem__)
        order = tuple(perm) if perm != list(range(len(tensors))) else None
    entry = EinsumStructure(sum_op, prod_op, output, reduced, arrays, domains, order,
                            frozenset(plates) if plates else None,
                            domains is not None and all(d is None for d in domains))
    return entry, tensors


def naive_einsum(eq: str, *operands, backend: str = "numpy"):
    """Einsum by combining every operand (broadcast to all letters), then reducing.

    Exponential in memory; a reference implementation for tests.

    Example:
        >>> float(naive_einsum("a,a->", np.ones(3), np.ones(3)))
        3.0
    """
    sum_op, prod_op = semiring_of_backend(backend)
    inputs, output = _parse(eq, len(operands))
    arrays, tensors, inputs = _as_tensors(inputs, operands)
    output = _kept_output(eq, inputs, output, arrays)
    result = tensors[0]
    for t in tensors[1:]:
        result = prod_op(result, t)
    reduced = frozenset(inputs_union(inputs)) - set(output)
    if reduced:
        result = result.reduce(sum_op, reduced)
    return _finish(result, output, arrays)


def naive_contract_einsum(eq: str, *operands, backend: str = "numpy"):
    """Einsum as one ``Contraction`` term of all operands (funsor's test helper).

    Example:
        >>> x = fc.Tensor(np.ones(3), {"a": fc.Bint[3]})
        >>> float(naive_contract_einsum("a,a->", x, x).data)
        3.0
    """
    sum_op, prod_op = semiring_of_backend(backend)
    inputs, output = _parse(eq, len(operands))
    arrays, tensors, inputs = _as_tensors(inputs, operands)
    output = _kept_output(eq, inputs, output, arrays)
    reduced = frozenset(inputs_union(inputs)) - set(output)
    return _finish(Contraction(sum_op if reduced else None, prod_op, reduced, tuple(tensors)),
                   output, arrays)


def naive_plated_einsum(eq: str, *operands, plates: str = "", backend: str = "numpy",
                        modulo_total: bool = False):
    """Plated einsum by tensor variable elimination without a planned order within each
    plate set (``sum_product``): the reference for ``einsum`` with plates.

    Example:
        >>> a, ab = np.ones(2), np.ones((2, 3))
        >>> float(naive_plated_einsum("a,ab->", a, ab, plates="b"))
        2.0
    """
    if not plates:
        return naive_einsum(eq, *operands, backend=backend)
    return einsum(eq, *operands, plates=plates, backend=backend, modulo_total=modulo_total)

