"""Einsum in any of the semirings ``(add, mul)``, ``(logaddexp, add)``, ``(max, add)``,
``(min, add)``, planned by ``opt_einsum.contract_path`` and run as pairwise contractions.

The kernels use only ``ops.*``, so they run on numpy, torch and jax arrays (under ``jax.jit``
and torch autograd too):

* sum-product: each pairwise step is one ``ops.einsum``;
* log-space: shift each operand by its max over the dims the step contracts (a max of
  ``-inf`` is replaced by 0), ``exp``, ``ops.einsum``, ``log``, and add the shifts back; an
  all ``-inf`` slice gives ``-inf``, never ``nan``;
* max-plus / min-plus: broadcast ``add``, then ``ops.amax`` / ``ops.amin``.

``einsum(eq, *operands, plates="", backend=...)`` follows funsor's ``funsor.einsum.einsum``:
operands are funsors whose inputs are named by the equation's letters (arrays are accepted too
and give an array back); ``backend`` picks the semiring by funsor's strings (``"numpy"``,
``"torch"``, ``"jax.numpy"``; ``"pyro.ops.einsum.torch_log"``, ``"funsor.einsum.numpy_log"``;
``..._map``) or our short names ``"linear"``, ``"log"``, ``"max"``, ``"min"``.

Example:
    >>> x = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    >>> y = fc.Tensor(np.ones(3), {"b": fc.Bint[3]})
    >>> einsum("ab,b->a", x, y).data
    array([3., 3.])
"""

from __future__ import annotations

import opt_einsum

from funsor_core import ops
from funsor_core.algorithms.plates import sum_product
from funsor_core.atoms.tensor import Tensor, align_tensor, is_array
from funsor_core.domains import Bint
from funsor_core.engine.interpreter import get_interpretation
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import Funsor

__all__ = [
    "einsum", "naive_einsum", "naive_plated_einsum", "contract_arrays", "contract_tensors",
    "semiring_of_backend", "SEMIRINGS",
]

# The semirings with a dedicated kernel: (sum_op, prod_op).
SEMIRINGS = frozenset([(ops.add, ops.mul), (ops.logaddexp, ops.add), (ops.max, ops.add),
                       (ops.min, ops.add)])


def semiring_of_backend(backend: str) -> tuple:
    """The ``(sum_op, prod_op)`` named by an einsum backend string.

    Example:
        >>> semiring_of_backend("pyro.ops.einsum.torch_log")
        (ops.logaddexp, ops.add)
    """
    name = backend.rsplit(".", 1)[-1]
    if name in ("numpy", "torch", "jax", "linear") or backend == "jax.numpy":
        return ops.add, ops.mul
    if name == "log" or name.endswith("_log"):
        return ops.logaddexp, ops.add
    if name in ("max", "map") or name.endswith("_map"):
        return ops.max, ops.add
    if name == "min":
        return ops.min, ops.add
    raise NotImplementedError(
        f"einsum backend {backend!r} is not supported; use 'numpy'/'torch'/'jax.numpy' (sum), "
        "a '..._log' name or 'log' (logsumexp), a '..._map' name or 'max' (max-plus), or 'min'")


# ---------------------------------------------------------------------------------------------
# Pure array kernels.
def _align(x, letters: str, target: str):
    """``x`` (dims ``letters``) permuted to ``target`` order, with size-1 dims where absent."""
    order = [c for c in target if c in letters]
    if order != list(letters):
        x = ops.permute(x, tuple(letters.index(c) for c in order))
    if len(order) != len(target):
        sizes = dict(zip(order, x.shape))
        x = ops.reshape(x, tuple(sizes.get(c, 1) for c in target))
    return x


def _finite_max(x, axes: tuple, red):
    m = red(x, axis=axes, keepdims=True)
    return ops.where(ops.isfinite(m), m, ops.full_like(m, 0.0))


def _unit_like(x, out: str, sum_op, sizes: dict):
    # A sum over an empty range is the semiring's zero (0, -inf, -inf for max, +inf for min)
    # on every backend; backend max kernels raise on empty axes instead, and numpy's
    # logsumexp did too while torch/jax returned -inf.
    return ops.new_full(x, tuple(sizes[c] for c in out), float(ops.UNITS[sum_op]))


def _empty_sum(letters: str, out: str, sizes: dict) -> bool:
    return any(sizes[c] == 0 for c in letters if c not in out)


def _reduce(x, letters: str, out: str, sum_op):
    sizes = dict(zip(letters, x.shape))
    if sum_op is not ops.add and _empty_sum(letters, out, sizes):
        return _unit_like(x, out, sum_op, sizes)
    axes = tuple(i for i, c in enumerate(letters) if c not in out)
    if axes:
        x = ops.REDUCE_OPS[sum_op](x, axis=axes)
        letters = "".join(c for c in letters if c in out)
    return _align(x, letters, out)


def _pair(sum_op, prod_op, x, lx: str, y, ly: str, out: str):
    """Contract two operands to dims ``out`` (every letter of ``out`` is in ``lx`` or ``ly``)."""
    union = lx + "".join(c for c in ly if c not in lx)
    summed = [c for c in union if c not in out]
    if sum_op is ops.add:
        return ops.einsum(_ascii_equation(union, lx, ly, out), x, y)
    sizes = {**dict(zip(lx, x.shape)), **dict(zip(ly, y.shape))}
    if _empty_sum(union, out, sizes):
        return _unit_like(x, out, sum_op, sizes)
    if sum_op is ops.logaddexp:
        if not summed:
            return _align(x, lx, out) + _align(y, ly, out)
        xa = tuple(i for i, c in enumerate(lx) if c in summed)
        ya = tuple(i for i, c in enumerate(ly) if c in summed)
        mx = _finite_max(x, xa, ops.amax) if xa else None
        my = _finite_max(y, ya, ops.amax) if ya else None
        ex = ops.exp(x - mx) if mx is not None else ops.exp(x)
        ey = ops.exp(y - my) if my is not None else ops.exp(y)
        result = _safe_log(ops.einsum(_ascii_equation(union, lx, ly, out), ex, ey))
        if mx is not None:
            result = result + _align(ops.REDUCE_OPS[ops.max](mx, axis=xa), _keep(lx, xa), out)
        if my is not None:
            result = result + _align(ops.REDUCE_OPS[ops.max](my, axis=ya), _keep(ly, ya), out)
        return result
    # max-plus / min-plus: broadcast, combine, reduce.
    z = prod_op(_align(x, lx, union), _align(y, ly, union))
    return _reduce(z, union, out, sum_op)


_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _ascii_equation(union: str, lx: str, ly: str, out: str) -> str:
    """``"lx,ly->out"`` re-lettered with ``a-zA-Z`` (numpy and torch accept no other letters).

    Plans use ``opt_einsum.get_symbol``, which goes past ``Z`` into non-ASCII symbols after 52
    variables; one pairwise step names only its own letters, so per step 52 is enough.
    """
    if len(union) > len(_ASCII):
        raise NotImplementedError(
            f"one pairwise einsum step would contract {len(union)} distinct dims at once, but "
            f"backend einsum kernels accept at most {len(_ASCII)}; split the factors")
    if all(c in _ASCII for c in union):
        return f"{lx},{ly}->{out}"
    table = str.maketrans(union, _ASCII[:len(union)])
    return f"{lx},{ly}->{out}".translate(table)


def _safe_log(s):
    # log(0) = -inf without the backend's divide-by-zero warning. Test ``== 0``, not ``> 0``:
    # a NaN is neither, and must stay NaN (log(nan) = nan), never turn into -inf.
    zero = s == 0
    return ops.where(zero, ops.full_like(s, -float("inf")),
                     ops.log(ops.where(zero, ops.full_like(s, 1.0), s)))


def _keep(letters: str, axes: tuple) -> str:
    return "".join(c for i, c in enumerate(letters) if i not in axes)


def contract_arrays(sum_op, prod_op, inputs: list, output: str, operands: list,
                    sizes: dict | None = None):
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
            raise NotImplementedError(f"repeated index within one operand ({letters!r}) is not "
                                      "supported; take the diagonal first")
    inputs, operands = list(inputs), list(operands)
    if len(operands) == 1:
        return _reduce(operands[0], inputs[0], output, sum_op)
    if len(operands) == 2:
        path = [(0, 1)]
    else:
        eq = ",".join(inputs) + "->" + output
        path, _ = opt_einsum.contract_path(eq, *[_Shape(o.shape) for o in operands],
                                           shapes=False, optimize="auto")
    for step in path:
        step = sorted(step, reverse=True)
        picked = [(inputs.pop(i), operands.pop(i)) for i in step]
        rest = set(output).union(*inputs)
        if len(picked) == 1:
            (lx, x), = picked
            out = "".join(c for c in lx if c in rest)
            inputs.append(out)
            operands.append(_reduce(x, lx, out, sum_op))
            continue
        (lx, x) = picked[0]
        for ly, y in picked[1:-1]:
            union = lx + "".join(c for c in ly if c not in lx)
            keep = set(rest).union(*(lz for lz, _ in picked))
            out = "".join(c for c in union if c in keep)
            x, lx = _pair(sum_op, prod_op, x, lx, y, ly, out), out
        ly, y = picked[-1]
        union = lx + "".join(c for c in ly if c not in lx)
        out = "".join(c for c in union if c in rest)
        inputs.append(out)
        operands.append(_pair(sum_op, prod_op, x, lx, y, ly, out))
    return _reduce(operands[0], inputs[0], output, sum_op)


class _Shape:
    # opt_einsum plans from anything with a .shape.
    def __init__(self, shape):
        self.shape = tuple(shape)


def contract_tensors(sum_op, prod_op, reduced_vars: frozenset, tensors) -> Tensor:
    """Semiring contraction of scalar-output Tensors over the names ``reduced_vars``.

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> contract_tensors(ops.add, ops.mul, frozenset({"j"}), [f, f]).data
        array([3., 3.])
    """
    symbols: dict = {}
    domains: dict = {}
    for t in tensors:
        for name, d in t.inputs.items():
            if name not in symbols:
                symbols[name] = opt_einsum.get_symbol(len(symbols))
                domains[name] = d
    inputs = ["".join(symbols[n] for n in t.inputs) for t in tensors]
    out_names = [n for n in symbols if n not in reduced_vars]
    output = "".join(symbols[n] for n in out_names)
    data = contract_arrays(sum_op, prod_op, inputs, output, [t.data for t in tensors])
    return Tensor.make(data, {n: domains[n] for n in out_names}, "real")


# ---------------------------------------------------------------------------------------------
# The einsum front end.
def _parse(eq: str):
    lhs, _, output = eq.replace(" ", "").partition("->")
    return lhs.split(","), output


def _as_tensors(inputs, operands):
    arrays = not any(isinstance(o, Funsor) for o in operands)
    tensors = []
    for letters, o in zip(inputs, operands):
        if isinstance(o, Funsor):
            if set(o.inputs) != set(letters) or o.shape:
                raise ValueError(f"einsum operand with inputs {list(o.inputs)} and output "
                                 f"{o.output} does not match the letters {letters!r}")
            tensors.append(o)
        elif is_array(o):
            if len(o.shape) != len(letters):
                raise ValueError(f"einsum operand of shape {tuple(o.shape)} does not match the "
                                 f"letters {letters!r}")
            tensors.append(Tensor(o, {c: Bint[s] for c, s in zip(letters, o.shape)}))
        else:
            raise TypeError(f"einsum operands are funsors or arrays, got {type(o).__name__}")
    return arrays, tensors


def _finish(result, output: str, arrays: bool):
    if not arrays or not isinstance(result, Tensor):
        return result  # a lazy term under a non-evaluating interpretation stays a term
    return align_tensor({c: result.inputs[c] for c in output}, result)


def einsum(eq: str, *operands, plates: str = "", backend: str = "numpy",
           modulo_total: bool = False):
    """Semiring einsum, optionally plated: letters in ``plates`` are product-reduced plates.

    Args:
        eq: e.g. ``"ab,bc->ac"``.
        operands: Tensors whose inputs are the letters (or arrays, giving an array back).
        plates: letters that index plates (as in Pyro's plated einsum).
        backend: the semiring, see the module docstring.

    Example:
        >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> einsum("ab->a", a, backend="funsor.einsum.numpy_map")
        array([2., 4.])
    """
    if modulo_total:
        raise NotImplementedError("einsum(modulo_total=True) is not supported")
    if not _evaluating() or not all(isinstance(o, Tensor) or is_array(o) for o in operands):
        # Under lazy, reflect, normalize...: build the expression (products, then reductions)
        # through the active interpretation, as funsor does, so that `with reflect:` records
        # it and fc.reinterpret evaluates it later (sharing subterms under memoize). Lazy
        # operands take this path too: the kernels below need arrays.
        return naive_plated_einsum(eq, *operands, plates=plates, backend=backend)
    sum_op, prod_op = semiring_of_backend(backend)
    inputs, output = _parse(eq)
    arrays, tensors = _as_tensors(inputs, operands)
    check_backends("einsum", tensors, [f"operand {k}" for k in range(len(tensors))])
    if plates:
        eliminate = frozenset(inputs_union(inputs)) - frozenset(output)
        result = sum_product(sum_op, prod_op, tensors, eliminate, frozenset(plates))
        result = result.align(tuple(output)) if isinstance(result, Tensor) else result
        return _finish(result, output, arrays)
    result = contract_tensors(sum_op, prod_op, frozenset(inputs_union(inputs)) - set(output),
                              tensors)
    return _finish(result, output, arrays)


def _evaluating() -> bool:
    # Whether the active interpretation computes numbers (its chain reaches exact); only then
    # may einsum run its array kernels directly.
    return "exact" in get_interpretation().chain()


def inputs_union(inputs) -> str:
    """All letters of a list of operand subscripts, in first-seen order."""
    seen = ""
    for letters in inputs:
        seen += "".join(c for c in letters if c not in seen)
    return seen


def naive_einsum(eq: str, *operands, backend: str = "numpy"):
    """Einsum by broadcasting every operand to all letters, combining, then reducing.

    Exponential in memory; a reference implementation for tests.

    Example:
        >>> float(naive_einsum("a,a->", np.ones(3), np.ones(3)))
        3.0
    """
    sum_op, prod_op = semiring_of_backend(backend)
    inputs, output = _parse(eq)
    arrays, tensors = _as_tensors(inputs, operands)
    check_backends("einsum", tensors, [f"operand {k}" for k in range(len(tensors))])
    result = tensors[0]
    for t in tensors[1:]:
        result = prod_op(result, t)
    reduced = frozenset(inputs_union(inputs)) - set(output)
    if reduced:
        result = result.reduce(sum_op, reduced)
    return _finish(result, output, arrays)


def naive_plated_einsum(eq: str, *operands, plates: str = "", backend: str = "numpy"):
    """Plated einsum by the definition: eliminate the letters local to the deepest plate set
    first, product-reduce its plate, and repeat (no planning, no variable ordering).

    Example:
        >>> a, ab = np.ones(2), np.ones((2, 3))
        >>> float(naive_plated_einsum("a,ab->", a, ab, plates="b"))
        2.0
    """
    if not plates:
        return naive_einsum(eq, *operands, backend=backend)
    sum_op, prod_op = semiring_of_backend(backend)
    inputs, output = _parse(eq)
    arrays, tensors = _as_tensors(inputs, operands)
    check_backends("einsum", tensors, [f"operand {k}" for k in range(len(tensors))])
    plate_set = frozenset(plates)
    factors = list(tensors)
    target = frozenset(output)
    sum_vars = frozenset(inputs_union(inputs)) - plate_set - target
    # Each sum variable lives in the intersection of the plates of the factors that use it.
    while True:
        groups = {}
        for f in factors:
            groups.setdefault(frozenset(f.inputs) & plate_set, []).append(f)
        deepest = max(groups, key=len)
        if not deepest - target:
            break
        group = groups[deepest]
        rest = [f for f in factors if frozenset(f.inputs) & plate_set != deepest]
        term = group[0]
        for f in group[1:]:
            term = prod_op(term, f)
        local = frozenset(n for n in term.inputs if n in sum_vars
                          and not any(n in g.inputs for g in rest))
        if local:
            term = term.reduce(sum_op, local)
        plate = sorted(deepest - target)[-1]
        term = term.reduce(prod_op, plate)
        factors = rest + [term]
    result = factors[0]
    for f in factors[1:]:
        result = prod_op(result, f)
    reduced = frozenset(result.inputs) - target
    if reduced:
        result = result.reduce(sum_op, reduced)
    return _finish(result, output, arrays)

