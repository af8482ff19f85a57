"""The Delta atom: a point mass ``Delta(name, point, log_density=0)``.

As a log density over the new input ``name`` it is ``log_density`` where ``name == point`` and
``-inf`` elsewhere. Several independent point masses share one atom via funsor's ``terms``
form ``Delta(((name, (point, log_density)), ...))``. Rules: ``interpretations/exact/delta.py``.

Where we differ from funsor 0.4.8: reducing a Delta with ``logaddexp`` over its names gives
its ``log_density`` (the mass of the point), where funsor drops it and gives 0.

Example:
    >>> d = fc.Delta("x", fc.Number(1.5), 0.25)
    >>> d.inputs, d(x=1.5).data
    ({'x': Real}, 0.25)
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.domains import Real
from funsor_core.tensor import Tensor, align_tensors, backend_of
from funsor_core.terms import DomainError, Funsor, Number, merge_inputs, to_funsor

__all__ = ["Delta", "invert_affine"]


class Delta(Funsor):
    """Point masses: ``Delta(name, point, log_density=0)`` or ``Delta(((name, (point,
    log_density)), ...))``.

    Args:
        name: the new input, whose domain is ``point.output``.
        point: a funsor (arrays and numbers are converted with ``to_funsor``).
        log_density: a real scalar funsor (or number), the log mass at the point.

    Example:
        >>> p = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
        >>> fc.Delta("x", p).inputs
        {'x': Real, 'i': Bint[2]}
    """

    __slots__ = ("terms", "fresh")
    _fields = ("terms",)
    _atom = True

    @classmethod
    def _prepare(cls, name, point=None, log_density=0.0):
        if isinstance(name, str):
            if point is None:
                raise TypeError(f"Delta('{name}', point) needs a point")
            terms = ((name, (point, log_density)),)
        else:
            if point is not None:
                raise TypeError("Delta(terms) takes a tuple of (name, (point, log_density))")
            terms = tuple(name)
        result = []
        names = set()
        for item in terms:
            name, value = item
            if isinstance(value, tuple):
                point, log_density = value
            else:
                point, log_density = value, 0.0
            if not isinstance(name, str):
                raise TypeError(f"a Delta's name must be a str, got {name!r}")
            if name in names:
                raise DomainError(f"Delta names '{name}' twice")
            names.add(name)
            point = to_funsor(point)
            log_density = to_funsor(log_density)
            if log_density.output.dtype != "real" or log_density.output.shape:
                raise DomainError(f"the log_density of Delta '{name}' must be a real scalar, "
                                  f"got output {log_density.output}")
            if name in point.inputs or name in log_density.inputs:
                raise DomainError(f"the point of Delta '{name}' cannot depend on '{name}'")
            result.append((name, (point, log_density)))
        if not result:
            raise ValueError("Delta needs at least one (name, (point, log_density))")
        return (tuple(result),)

    @classmethod
    def _restore_fields(cls, obj, args) -> None:
        # A pytree rebuild (jax) skips _init, so the derived ``fresh`` is set here too.
        obj.terms = args[0]
        obj.fresh = frozenset(name for name, _ in args[0])

    def _init(self, terms):
        self._args = (terms,)
        self.terms = terms
        self.fresh = frozenset(name for name, _ in terms)
        inputs: dict = {name: point.output for name, (point, _) in terms}
        for _, (point, log_density) in terms:
            inputs = merge_inputs(inputs, point.inputs, "Delta")
            inputs = merge_inputs(inputs, log_density.inputs, "Delta")
        self.inputs = inputs
        self.output = Real


# ---------------------------------------------------------------------------------------------
# Pure array math for the Delta rules.
def invert_affine(point: Funsor, const: Tensor, coeff: Tensor) -> tuple[Tensor, Tensor] | None:
    """Solve ``y.flat @ coeff + const.flat == point.flat`` for ``y``, and give ``log|det coeff|``.

    This is the change of variables behind ``Delta("x", p, ld)(x=y @ A + b)``: the point mass
    moves to ``y = (p - b) @ A^-1`` and its log density drops by ``log|det A|``.

    Args:
        point: a Tensor or Number with ``n`` output elements.
        const, coeff: ``extract_affine``'s constant (same output as ``point``) and coefficient
            (output ``Reals[n, n]``) of one real variable.

    Returns:
        ``(y, log_abs_det)``: Tensors over the merged Bint inputs, ``y`` with ``point``'s output;
        or ``None`` when ``point`` is lazy or ``coeff`` is singular.

    Example:
        >>> a = fc.Tensor(np.array([[2.0, 0.0], [0.0, 4.0]]))
        >>> y, log_abs_det = invert_affine(fc.Tensor(np.array([5.0, 9.0])),
        ...                                fc.Tensor(np.ones(2)), a)
        >>> y.data, bool(np.isclose(log_abs_det.data, np.log(8.0)))
        (array([2., 2.]), True)
    """
    if not isinstance(point, (Tensor, Number)) or not _invertible(coeff.data):
        return None
    inputs, datas = align_tensors(point, const, coeff)
    proto = backend_of(point, const, coeff)
    nb, n = len(inputs), coeff.shape[-1]
    p, b = (_flatten(ops.new_array(proto, x), nb, n) for x in datas[:2])
    y = ops.matmul((p - b)[..., None, :], ops.inv(datas[2]))[..., 0, :]
    full = tuple(d.size for d in inputs.values())
    if tuple(y.shape) != full + (n,):
        y = ops.expand(y, full + (n,))
    y = ops.reshape(y, full + point.shape)
    log_abs_det = ops.new_array(proto, ops.logdet(coeff.data))  # numpy gives a scalar for 2-d
    return Tensor.make(y, inputs), Tensor.make(log_abs_det, coeff.inputs)


def _flatten(data, nb: int, n: int):
    # Aligned data has the nb batch dims first; a Number's data has none (broadcast them).
    lead = tuple(data.shape[:nb]) if len(data.shape) >= nb else (1,) * nb
    return ops.reshape(data, lead + (n,))


def _invertible(data) -> bool:
    """Whether every matrix in ``data`` is numerically invertible (singular values > n eps)."""
    try:
        s = np.linalg.svd(np.asarray(ops.to_numpy(ops.detach(data))), compute_uv=False)
    except Exception:  # traced values (jax.jit) cannot be inspected: trust the structure
        return True
    return bool((s[..., -1] > s[..., 0] * s.shape[-1] * np.finfo(s.dtype).eps).all())
