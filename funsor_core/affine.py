"""Recognise affine functions of real inputs by probing.

A funsor ``v`` of real inputs ``y_1, ..., y_k`` (and any Bint inputs) is affine when
``v(y) = b + sum_j y_j @ B_j`` (all flattened). Evaluating ``v`` at ``y = 0`` gives ``b``;
evaluating it at the unit vectors of each ``y_j`` (all at once, as a batch along a fresh Bint
input) gives the rows of ``B_j``. A third evaluation at a fixed non-trivial point checks the
guess, so a nonlinear ``v`` is rejected rather than silently linearized. This is how a
Gaussian recognises substitutions such as ``g(x=A @ y + b)``; funsor 0.4.8 does the same job by
structural pattern matching on the term.

Example:
    >>> y = fc.Variable("y", fc.Reals[2])
    >>> a = fc.Tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> const, coeffs = extract_affine(y @ a + 1.0)
    >>> const.data, coeffs["y"].data
    (array([1., 1.]), array([[1., 2.],
           [3., 4.]]))
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.backend import backend_module
from funsor_core.domains import Bint
from funsor_core.tensor import Tensor, align_tensor, backend_of
from funsor_core.terms import Funsor, Number
from funsor_core.traversal import fresh_name

__all__ = ["extract_affine", "is_affine"]

# Relative tolerance of the affinity check (float64 arithmetic on small probes).
_RTOL = 1e-7


def _as_tensor(x, proto) -> Tensor | None:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, Number) and x.dtype == "real":
        return Tensor.make(ops.new_full(proto, (), float(x.data)), {})
    return None


def _zeros_for(domain, proto):
    return Tensor.make(ops.new_zeros(proto, domain.shape), {})


def extract_affine(value: Funsor):
    """``(const, coeffs)`` with ``value == const + sum_j y_j.flat @ coeffs[y_j]``, or ``None``.

    ``const`` is a Tensor over the Bint inputs of ``value`` with ``value``'s output;
    ``coeffs[name]`` a Tensor over Bint inputs with output ``Reals[m_j, n]`` (``m_j``: size of
    the real input ``y_j``, ``n``: size of the output). Returns ``None`` when ``value`` does not
    evaluate to Tensors under the active interpretation, or is not affine.

    Example:
        >>> x = fc.Variable("x", fc.Real)
        >>> extract_affine(x * x) is None
        True
    """
    if value.output.dtype != "real":
        return None
    real = {k: d for k, d in value.inputs.items() if d.dtype == "real"}
    proto = backend_of(value) if not isinstance(value, Funsor) else _proto(value)
    zeros = {k: _zeros_for(d, proto) for k, d in real.items()}
    const = _as_tensor(value(**zeros), proto)
    if const is None:
        return None
    n = value.output.num_elements
    batch = {k: d for k, d in value.inputs.items() if d.dtype != "real"}
    const_inputs = dict(batch)
    coeffs = {}
    avoid = set(value.inputs)
    for name, domain in real.items():
        m = domain.num_elements
        probe = fresh_name("_probe", avoid)
        eye = ops.reshape(ops.new_eye(proto, m), (m,) + domain.shape)
        subs = dict(zeros)
        subs[name] = Tensor.make(eye, {probe: Bint[m]})
        column = _as_tensor(value(**subs), proto)
        if column is None:
            return None
        column = column - const
        if not isinstance(column, Tensor):
            return None
        order = {**{k: d for k, d in batch.items() if k in column.inputs}, probe: Bint[m]}
        data = align_tensor(order, column, expand=True)
        shape = tuple(data.shape[: len(order) - 1]) + (m, n)
        coeffs[name] = Tensor.make(ops.reshape(data, shape),
                                   {k: d for k, d in order.items() if k != probe})
    if not _verify(value, const, coeffs, real, proto):
        return None
    const_data = align_tensor(const_inputs, const, expand=False) if const.inputs else const.data
    const_inputs = {k: d for k, d in const_inputs.items() if k in const.inputs}
    const = Tensor.make(const_data if const.inputs else const.data, const_inputs)
    return const, coeffs


def is_affine(value: Funsor) -> bool:
    """Whether ``value`` is an affine function of its real inputs (see ``extract_affine``).

    Example:
        >>> x = fc.Variable("x", fc.Reals[2])
        >>> is_affine(2.0 * x + 1.0), is_affine(x.exp())
        (True, False)
    """
    return extract_affine(value) is not None


def _proto(value: Funsor):
    from funsor_core.traversal import children

    stack = [value]
    while stack:
        node = stack.pop()
        for attr in ("data", "white_vec"):
            data = getattr(node, attr, None)
            if data is not None and hasattr(data, "shape"):
                return data
        stack.extend(children(node))
    return backend_module().asarray(0.0, "real")


def _verify(value, const, coeffs, real, proto) -> bool:
    # One more evaluation at a fixed point with distinct irrational-ish coordinates.
    point, expected = {}, const
    for j, (name, domain) in enumerate(real.items()):
        m = domain.num_elements
        vals = ops.new_array(proto, [0.3 + 0.7 * ((7 * (j + 1) + 3 * k) % 11) / 11
                                     for k in range(m)])
        point[name] = Tensor.make(ops.reshape(vals, domain.shape), {})
        flat = Tensor.make(vals, {})
        term = Tensor.make(_vm(flat.data, coeffs[name].data), coeffs[name].inputs)
        expected = expected + _reshape_output(term, value.output.shape)
    actual = _as_tensor(value(**point), proto)
    if actual is None:
        return False
    diff = actual - expected
    scale = abs(actual) + abs(expected) + 1.0
    try:
        bad = (abs(diff) - _RTOL * scale).data
        return not bool(ops.to_numpy(ops.detach(bad)).max() > 0) if bad.shape else not bool(
            float(ops.to_numpy(ops.detach(bad))) > 0)
    except Exception:  # traced values (jax.jit): trust the structure we could evaluate
        return True


def _vm(v, m):
    return ops.getitem(ops.matmul(ops.getitem(v, (Ellipsis, None, slice(None))), m),
                       (Ellipsis, 0, slice(None)))


def _reshape_output(t: Tensor, shape: tuple) -> Tensor:
    nb = len(t.inputs)
    data = ops.reshape(t.data, tuple(t.data.shape[:nb]) + shape)
    return Tensor.make(data, t.inputs)
