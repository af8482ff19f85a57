"""Recognise affine functions of real inputs: structurally, then extract by probing.

A funsor ``v`` of real inputs ``y_1, ..., y_k`` (and any Bint inputs) is affine when
``v(y) = b + sum_j y_j @ B_j`` (all flattened). Whether it is affine is decided from the
term's STRUCTURE (``is_affine``): Variables, constants (anything free of real inputs), sums
and differences of affine terms, products with and divisions by constants, matrix products
with a constant, einsums with one non-constant operand, negation, indexing, reshaping and sums
over output dims of an affine term.
Only once structure says affine are ``b`` and the ``B_j`` read off by evaluation: ``v`` at
``y = 0`` gives ``b``, and at the unit vectors of each ``y_j`` (all at once, along a fresh
Bint input) the rows of ``B_j``. Structure never depends on values, so the answer is the same
eagerly and under ``jax.jit`` (where a numeric test of affinity would read traced values).
funsor 0.4.8's ``is_affine`` is structural in the same spirit.

``extract_affine`` answers in funsor's form: a coefficient per input with the einsum equation
that applies it. ``extract_affine_flat`` gives the same coefficients flattened to matrices,
the form the Gaussian and Delta rules use.

Example:
    >>> y = fc.Variable("y", fc.Reals[2])
    >>> a = fc.Tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> const, coeffs = extract_affine(y @ a + 1.0)
    >>> coeff, eqn = coeffs["y"]
    >>> const.data, coeff.data, eqn
    (array([1., 1.]), array([[1., 2.],
           [3., 4.]]), 'ab,a->b')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor, align_tensor, backend_of
from funsor_core.atoms.tensor_idioms import Einsum, Getitem
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_module, host_backend
from funsor_core.engine.cache import FastCache
from funsor_core.terms.base import Align, Binary, Funsor, Number, Reduce, Unary, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.reshaping import Cat, Lambda, Stack
from funsor_core.terms.traversal import fresh_name

__all__ = ["extract_affine", "extract_affine_flat", "is_affine", "polynomial_degree"]

# Unary ops that are linear in their argument (indexing, reshaping, sums over output dims).
LINEAR_UNARY_OPS = frozenset({"neg", "getitem", "reshape", "transpose", "permute", "expand",
                              "sum", "mean", "diagonal", "cat", "stack"})


def _as_tensor(x, proto) -> Tensor | None:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Number) and x.dtype == "real":
        return Tensor.make(ops.new_full(proto, (), float(x.data)), {})
    return None


def _zeros_for(domain, proto):
    return Tensor.make(ops.new_zeros(proto, domain.shape), {})


def extract_affine(value: Funsor):
    """``(const, coeffs)`` with ``value == const + sum_j Einsum(eqn_j, coeff_j, y_j)``, funsor's
    form, or ``None`` when ``value`` is not (structurally) affine in all its real inputs.

    ``const`` is a Tensor over the Bint inputs with ``value``'s output; ``coeffs`` maps each
    real input ``y_j`` (in input order) to ``(coeff_j, eqn_j)``: a Tensor over Bint inputs of
    output shape ``y_j.shape + value.shape``, and the einsum equation contracting it with
    ``y_j``. (funsor 0.4.8 also answers for functions affine in only some of their real
    inputs; here those give ``None``.)

    Example:
        >>> x = fc.Variable("x", fc.Reals[2, 3])
        >>> const, coeffs = extract_affine(2.0 * x.sum() + 1.0)
        >>> float(const.data), coeffs["x"][0].output, coeffs["x"][1]
        (1.0, Reals[2, 3], 'ab,ab->')
    """
    found = extract_affine_flat(value)
    if found is None:
        return None
    const, flat = found
    out_shape = value.output.shape
    coeffs = {}
    for name, coeff in flat.items():
        in_shape = value.inputs[name].shape
        batch = tuple(coeff.data.shape[: len(coeff.data.shape) - 2])
        data = ops.reshape(coeff.data, batch + in_shape + out_shape)
        letters = "".join(_LETTERS[i] for i in range(len(in_shape) + len(out_shape)))
        eqn = f"{letters},{letters[: len(in_shape)]}->{letters[len(in_shape):]}"
        coeffs[name] = Tensor.make(data, dict(coeff.inputs)), eqn
    return const, coeffs


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def extract_affine_flat(value: Funsor, host_if_constant: bool = False, proto=None):
    """``(const, coeffs)`` with ``value == const + sum_j y_j.flat @ coeffs[y_j]``, or ``None``.

    ``const`` is a Tensor over the Bint inputs of ``value`` with ``value``'s output;
    ``coeffs[name]`` a Tensor over Bint inputs with output ``Reals[m_j, n]`` (``m_j``: size of
    the real input ``y_j``, ``n``: size of the output). Returns ``None`` when ``value`` does not
    evaluate to Tensors under the active interpretation, or is not affine.

    With ``host_if_constant``, a value holding no arrays (only Numbers and Variables, such as
    ``2.0 * y + 1.0``) is probed with numpy arrays, so its coefficients stay concrete under
    ``jax.jit`` and a caller may read them (e.g. to check invertibility); otherwise the
    probes use the arrays' (or the active) backend. ``proto`` (an array) gives the backend and
    dtype of the probes of a value holding no arrays, so that ``0.5 * y`` substituted into a
    float32 term stays float32 (a Number has no dtype of its own).

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> extract_affine_flat(x * x) is None
        True
        >>> float(extract_affine_flat(3.0 * x)[1]["x"].data[0, 0])
        3.0
    """
    if value.output.dtype != "real" or not is_affine(value):
        return None
    real = {k: d for k, d in value.inputs.items() if d.dtype == "real"}
    proto = (backend_of(value) if not isinstance(value, Funsor)
             else _proto(value, host_if_constant, proto))
    zeros = {k: _zeros_for(d, proto) for k, d in real.items()}
    const = _as_tensor(value(**zeros), proto)
    if const is None:
        return None
    n = value.output.num_elements
    batch = {k: d for k, d in value.inputs.items() if d.dtype != "real"}
    const_inputs = dict(batch)
    coeffs = {}
    avoid = set(value.inputs)
    scale = _probe_scale(const.data)
    for name, domain in real.items():
        m = domain.num_elements
        probe = fresh_name("_probe", avoid)
        eye = ops.reshape(ops.new_eye(proto, m), (m,) + domain.shape)
        subs = dict(zeros)
        subs[name] = Tensor.make(eye if scale is None else ops.mul(eye, scale), {probe: Bint[m]})
        column = _as_tensor(value(**subs), proto)
        if column is None:
            return None
        column = column - const
        if not isinstance(column, Tensor):
            return None
        order = {**{k: d for k, d in batch.items() if k in column.inputs}, probe: Bint[m]}
        data = align_tensor(order, column, expand=True)
        if scale is not None:
            data = ops.truediv(data, scale)
        shape = tuple(data.shape[: len(order) - 1]) + (m, n)
        coeffs[name] = Tensor.make(ops.reshape(data, shape),
                                   {k: d for k, d in order.items() if k != probe})
    const_data = align_tensor(const_inputs, const, expand=False) if const.inputs else const.data
    const_inputs = {k: d for k, d in const_inputs.items() if k in const.inputs}
    const = Tensor.make(const_data if const.inputs else const.data, const_inputs)
    return const, coeffs


# The probes' scale is capped so that scale * coefficient stays far from overflow.
_MAX_PROBE_SCALE = 2.0 ** 40


def _probe_scale(const):
    """The length of the probes: ``v(s e_i) - v(0) = s B_i`` loses ``eps |b|`` to the
    cancellation of the constant ``b``, so the coefficient read as ``(v(s e_i) - v(0)) / s``
    is off by ``eps (|b| / s + |B_i|)``; unit probes (``s = 1``) lose all digits of a
    coefficient of 1 next to a constant of 1e6 in float32. ``s = max(1, max |b|)``; None for
    1 (no scaling). Under ``jax.jit`` it is an array (read from traced values, never used to
    decide anything)."""
    if not ops.is_floating(const):
        return None
    if ops.is_concrete(const):
        host = ops.to_numpy(const)
        top = float(abs(host).max()) if host.size else 0.0
        if not top > 1.0:  # also NaN: the probes then carry it, as the constant does
            return None
        return min(top, _MAX_PROBE_SCALE)
    top = ops.amax(ops.reshape(ops.abs(const), (-1,)), 0) if len(const.shape) else ops.abs(const)
    return ops.clamp(top, min=1.0, max=_MAX_PROBE_SCALE)


def is_affine(value: Funsor) -> bool:
    """Whether ``value`` is, by its structure, an affine function of its real inputs.

    Decided from the term alone, never from values (so the same under ``jax.jit``). A term
    free of real inputs is a constant; a real Variable is affine; see the module docstring
    for the rest. Anything else (``exp``, a product of two affine terms, an unevaluated
    substitution) is not, even where it happens to be affine numerically.

    Example:
        >>> x = fc.Variable("x", fc.Reals[2])
        >>> is_affine(2.0 * x + 1.0), is_affine(x.exp()), is_affine(x * x)
        (True, False, False)
    """
    if value.output.dtype != "real":
        return False
    known: dict = {}  # id(term) -> bool; an explicit stack, so long sums hit no recursion limit
    stack = [(value, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in known:
            continue
        if _is_constant(node) or type(node) is Variable:
            known[id(node)] = True
        elif ready:
            known[id(node)] = _affine_node(node, known)
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in _parts(node) if id(k) not in known)
    return known[id(value)]


def _is_constant(term: Funsor) -> bool:
    return not any(d.dtype == "real" for d in term.inputs.values())


def _parts(node) -> tuple:
    form = _form_of(node)
    return () if form is None else form.parts(node)


def _affine_node(node, known: dict) -> bool:
    """One structural step, the parts' answers being in ``known``."""
    form = _form_of(node)
    return form is not None and form.affine(node, lambda t: known.get(id(t), False))


def _affine_product(op, terms, aff) -> bool:
    """``terms`` combined by ``op``: add/sub of affine terms, or mul/div/matmul with at most
    one non-constant factor (for div and matmul: a constant divisor / matrix)."""
    if op is None:
        return len(terms) == 1 and aff(terms[0])
    variable = [t for t in terms if not _is_constant(t)]
    if op is ops.add or op is ops.sub:
        return all(aff(t) for t in variable)
    if op is ops.mul or op is ops.matmul:
        return len(variable) == 1 and aff(variable[0])
    if op is ops.truediv:
        return len(terms) == 2 and _is_constant(terms[1]) and aff(terms[0])
    return False


def _proto(value: Funsor, host: bool = False, default=None):
    from funsor_core.terms.traversal import children

    stack = [value]
    while stack:
        node = stack.pop()
        for attr in ("data", "white_vec"):
            data = getattr(node, attr, None)
            if data is not None and hasattr(data, "shape"):
                return data
        stack.extend(children(node))
    if default is not None and not host:
        return ops.new_zeros(default, ())
    return (host_backend() if host else backend_module()).asarray(0.0, "real")


def polynomial_degree(value: Funsor) -> int | None:
    """The degree of ``value`` as a polynomial in its real inputs, decided from its structure
    (never from values, so the same under ``jax.jit``), or None when it is not (structurally)
    a polynomial.

    Terms free of real inputs have degree 0 and real Variables degree 1; sums take the
    largest degree, products (``*``, ``@``, einsum) add degrees, ``** k`` for an integer
    ``k >= 0`` multiplies it, and linear operations (negation, indexing, reshaping, sums over
    output or Bint dims, division by a constant) keep it.

    Example:
        >>> x = fc.Variable("x", fc.Reals[2])
        >>> a = fc.Tensor(np.eye(2))
        >>> polynomial_degree(x @ a @ x), polynomial_degree((x * x).sum() + 1.0)
        (2, 2)
        >>> polynomial_degree(x.exp().sum()) is None
        True
    """
    known: dict = {}  # id(term) -> degree or None; an explicit stack (no recursion limit)
    stack = [(value, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in known:
            continue
        if _is_constant(node):
            known[id(node)] = 0
        elif type(node) is Variable:
            known[id(node)] = 1
        elif ready:
            known[id(node)] = _degree_node(node, known)
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in _parts(node) if id(k) not in known)
    return known[id(value)]


def _degree_node(node, known: dict) -> int | None:
    parts = [known.get(id(p)) for p in _parts(node)]
    if not parts or any(p is None for p in parts):
        return None
    return _form_of(node).degree(node, parts)


def _degree_op(op, terms, parts) -> int | None:
    if op is None:
        return parts[0] if len(parts) == 1 else None
    if op is ops.add or op is ops.sub:
        return max(parts)
    if op is ops.mul or op is ops.matmul:
        return sum(parts)
    if op is ops.truediv:
        return parts[0] if len(parts) == 2 and parts[1] == 0 else None
    if op is ops.pow and len(terms) == 2 and isinstance(terms[1], Number):
        k = terms[1].data
        if float(k) == int(k) and int(k) >= 0:
            return parts[0] * int(k)
    return None


# -- the structural forms, one per term class ------------------------------------------------
# For each term class the analysis looks into: its parts (the subterms the answer depends on),
# whether it is affine given which parts are (``aff``), and its polynomial degree given the
# parts' degrees. Any other class is a leaf: not affine, no degree, unless constant (decided
# before a form is asked). Found by one dict lookup of the term's class.
class _Form(NamedTuple):
    parts: Callable[[Funsor], tuple]
    affine: Callable[[Funsor, Callable], bool]
    degree: Callable[[Funsor, list], int | None]


_FORMS: dict[type, _Form] = {}
# Term class -> the form of the first class of its MRO that has one (None: a leaf).
_FORM_CACHE = FastCache("affine.forms", 256)
_FORM_OF = _FORM_CACHE.data


def _register_form(classes: tuple, parts, affine, degree) -> None:
    for cls in classes:
        _FORMS[cls] = _Form(parts, affine, degree)


def _form_of(node) -> _Form | None:
    cls = type(node)
    form = _FORM_OF.get(cls, _MISSING)
    if form is _MISSING:
        form = _FORM_CACHE.put(cls, next((_FORMS[c] for c in cls.__mro__ if c in _FORMS), None))
    return form


_MISSING = object()


def _arg(node) -> tuple:
    return (node.arg,)


def _affine_unary(node, aff) -> bool:
    return node.op.name in LINEAR_UNARY_OPS and aff(node.arg)


def _degree_unary(node, parts) -> int | None:
    return parts[0] if node.op.name in LINEAR_UNARY_OPS else None


_register_form((Unary,), _arg, _affine_unary, _degree_unary)
_register_form((Binary,), lambda node: (node.lhs, node.rhs),
               lambda node, aff: _affine_product(node.op, (node.lhs, node.rhs), aff),
               lambda node, parts: _degree_op(node.op, (node.lhs, node.rhs), parts))


def _reduces_reals(node: Contraction) -> bool:
    # A max or an integral over a real variable is neither affine nor a polynomial.
    reals = {k for t in node.terms for k, d in t.inputs.items() if d.dtype == "real"}
    return bool(node.reduced_vars & reals) or node.red_op not in (None, ops.add)


def _affine_contraction(node, aff) -> bool:
    return not _reduces_reals(node) and _affine_product(node.bin_op, node.terms, aff)


def _degree_contraction(node, parts) -> int | None:
    return None if _reduces_reals(node) else _degree_op(node.bin_op, node.terms, parts)


_register_form((Contraction,), lambda node: node.terms, _affine_contraction,
               _degree_contraction)


def _sums_reals(node: Reduce) -> bool:
    return node.op is not ops.add or any(
        node.arg.inputs[v].dtype == "real" for v in node.reduced_vars if v in node.arg.inputs)


_register_form((Reduce,), _arg, lambda node, aff: not _sums_reals(node) and aff(node.arg),
               lambda node, parts: None if _sums_reals(node) else parts[0])
# Stacking, concatenating, aligning, and reading a Bint input as an output dim are linear in
# their parts.
_register_form((Stack, Cat), lambda node: tuple(node.parts),
               lambda node, aff: all(aff(p) for p in node.parts), lambda node, parts: max(parts))
_register_form((Align,), _arg, lambda node, aff: aff(node.arg), lambda node, parts: parts[0])
_register_form((Lambda,), lambda node: (node.expr,), lambda node, aff: aff(node.expr),
               lambda node, parts: parts[0])
# A gather of entries by a constant Bint index is linear in the arg.
_register_form((Getitem,), _arg, lambda node, aff: aff(node.arg) and _is_constant(node.index),
               lambda node, parts: parts[0] if _is_constant(node.index) else None)
# An einsum is linear in each operand: one may vary, the rest constant.
_register_form((Einsum,), lambda node: node.operands,
               lambda node, aff: _affine_product(ops.mul, node.operands, aff),
               lambda node, parts: sum(parts))
