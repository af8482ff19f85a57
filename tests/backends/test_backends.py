"""Every backend gives every op in ``ops.REQUIRED_OPS`` the numpy kernel's semantics.

The numpy kernels are checked against independent oracles (scipy, explicit formulas, loops);
the torch and jax kernels are checked against numpy on the same float64 inputs, through op
dispatch, so a missing, misregistered or wrong kernel fails here.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.special
import torch

import backends.jax as jax_backend
import backends.numpy as numpy_backend
import backends.torch as torch_backend
from funsor_core import ops
from funsor_core.ops import ReductionOp

jax.config.update("jax_enable_x64", True)

BACKENDS = {"numpy": numpy_backend, "torch": torch_backend, "jax": jax_backend}
RTOL, ATOL = 1e-6, 1e-8


# ---------------------------------------------------------------------------------------------
# Conversion between numpy and the backend under test.
def to_backend(backend: str, value):
    """Convert every numpy array inside ``value`` (tuples and lists walked) to ``backend``."""
    if isinstance(value, tuple):
        return tuple(to_backend(backend, v) for v in value)
    if isinstance(value, list):
        return [to_backend(backend, v) for v in value]
    if isinstance(value, np.ndarray):
        if backend == "torch":
            return torch.as_tensor(value)
        if backend == "jax":
            return jnp.asarray(value)
    return value


def to_np(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return np.asarray(value)


def assert_same(actual, expected, normalize=None):
    """Same shape, same dtype kind (float/int/bool) and close values."""
    actual, expected = to_np(actual), to_np(expected)
    if normalize is not None:
        actual, expected = normalize(actual), normalize(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype.kind == expected.dtype.kind, (actual.dtype, expected.dtype)
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------------------------
# Input makers: each takes a numpy Generator and returns a float64 (or int/bool) array.
def randn(rng, *shape):
    return rng.standard_normal(shape)


def positive(rng, *shape):
    return rng.random(shape) + 0.5


def unit(rng, *shape):
    return rng.random(shape)


def wide(rng, *shape):
    return 40.0 * rng.standard_normal(shape)


def halves(rng, *shape):
    # Values on a grid of 1/2, so comparisons see ties.
    return np.round(2.0 * rng.standard_normal(shape)) / 2.0


def nonzero(rng, *shape):
    return (rng.random(shape) + 0.5) * rng.choice([-1.0, 1.0], size=shape)


def booleans(rng, *shape):
    return rng.random(shape) < 0.5


def ints(rng, *shape):
    return rng.integers(0, 8, size=shape)


def open_unit(rng, *shape):
    # Inside (-1, 1), where atanh is finite.
    return 1.8 * rng.random(shape) - 0.9


def shifts(rng, *shape):
    return rng.integers(0, 4, size=shape)


def with_inf(rng, *shape):
    x = rng.standard_normal(shape)
    x.reshape(-1)[0] = np.inf
    return x


def with_neg_inf(rng, *shape):
    x = rng.standard_normal(shape)
    x.reshape(-1)[0] = -np.inf
    return x


def with_special(rng, *shape):
    x = rng.standard_normal(shape)
    x.reshape(-1)[:3] = [np.inf, -np.inf, np.nan]
    return x


def matrix(rng, *shape):
    # Well conditioned, with determinants of both signs.
    return rng.standard_normal(shape) + 3.0 * rng.choice([-1.0, 1.0]) * np.eye(shape[-1])


def pd(rng, *shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def lower(rng, *shape):
    # Unit-ish diagonal and small off-diagonal entries: well conditioned.
    x = 0.3 * np.tril(rng.standard_normal(shape), -1)
    return x + np.eye(shape[-1]) * (1.0 + rng.random(shape[:-1]))[..., None]


def upper(rng, *shape):
    return np.swapaxes(lower(rng, *shape), -1, -2)


def chol(rng, *shape):
    return np.linalg.cholesky(pd(rng, *shape))


def case(*args, **kwargs):
    return args, kwargs


# ---------------------------------------------------------------------------------------------
# Example arguments for every required op: a list of makers rng -> (args, kwargs).
UNARY_INPUTS = {
    ops.neg: randn, ops.abs: randn, ops.exp: randn, ops.log: positive, ops.log1p: unit,
    ops.expm1: randn, ops.sqrt: positive, ops.sigmoid: wide, ops.tanh: randn,
    ops.reciprocal: nonzero, ops.isfinite: with_special, ops.atanh: open_unit,
}
BINARY_INPUTS = {  # op: (lhs maker, rhs maker, a Python scalar for either side)
    ops.add: (randn, randn, 1.5), ops.sub: (randn, randn, 1.5), ops.mul: (randn, randn, 1.5),
    ops.truediv: (randn, nonzero, 1.5), ops.floordiv: (wide, nonzero, 2.5),
    ops.mod: (wide, nonzero, -2.5), ops.pow: (positive, randn, 2.0),
    ops.min: (halves, halves, 0.5), ops.max: (halves, halves, 0.5),
    ops.logaddexp: (with_neg_inf, randn, 0.0), ops.sample: (with_neg_inf, randn, 0.0),
    ops.safesub: (randn, with_inf, 1.5),
    ops.and_: (booleans, booleans, True), ops.or_: (booleans, booleans, False),
    ops.xor: (ints, ints, 5), ops.lshift: (ints, shifts, 2), ops.rshift: (ints, shifts, 1),
    ops.lt: (halves, halves, 0.5), ops.le: (halves, halves, 0.5),
    ops.gt: (halves, halves, 0.5), ops.ge: (halves, halves, 0.5),
    ops.eq: (halves, halves, 0.5), ops.ne: (halves, halves, 0.5),
}


def _unary_cases(make):
    return [lambda r: case(make(r, 2, 3)), lambda r: case(make(r, 4))]


def _binary_cases(lhs, rhs, scalar):
    return [
        lambda r: case(lhs(r, 2, 3), rhs(r, 3)),  # broadcasting
        lambda r: case(lhs(r, 2, 3), scalar),
        lambda r: case(scalar, rhs(r, 2, 3)),
    ]


def _safediv_case(rng):
    x, y = randn(rng, 2, 3), positive(rng, 3)
    x[:, 0], y[0] = 0.0, 0.0  # 0 / 0 = 0
    return case(x, y)


def _logsumexp_all_neg_inf(rng):
    x = randn(rng, 2, 3, 4)
    x[:, 1] = -np.inf  # a slice of all -inf sums to -inf, not nan
    return case(x, axis=(0, 2))


def _reduction_case(make, axis=1):
    return [lambda r: case(make(r, 2, 3, 4), axis=axis)]


EXAMPLES = {op: _unary_cases(make) for op, make in UNARY_INPUTS.items()}
EXAMPLES.update({op: _binary_cases(*spec) for op, spec in BINARY_INPUTS.items()})
EXAMPLES.update({
    ops.and_: _binary_cases(booleans, booleans, True) + _binary_cases(ints, ints, 6),
    ops.or_: _binary_cases(booleans, booleans, False) + _binary_cases(ints, ints, 6),
    ops.xor: _binary_cases(ints, ints, 5) + _binary_cases(booleans, booleans, True),
    ops.safediv: [_safediv_case, lambda r: case(randn(r, 2, 3), 2.0),
                  lambda r: case(1.5, positive(r, 2, 3))],
    ops.invert: [lambda r: case(booleans(r, 2, 3)), lambda r: case(ints(r, 2, 3))],
    ops.clamp: [
        lambda r: case(randn(r, 2, 3), min=-0.5, max=0.5),
        lambda r: case(randn(r, 2, 3), min=-0.5),
        lambda r: case(randn(r, 2, 3), max=0.2),
        lambda r: case(randn(r, 2, 3)),
    ],
    ops.astype: [
        lambda r: case(randn(r, 2, 3), "real"),
        lambda r: case(ints(r, 2, 3), "real"),
        lambda r: case(5.0 * randn(r, 2, 3), "int"),
        lambda r: case(halves(r, 2, 3), "bool"),
    ],
    # Linear algebra on the rightmost dims, batch dims broadcast.
    ops.matmul: [
        lambda r: case(randn(r, 2, 3, 4), randn(r, 4, 5)),
        lambda r: case(randn(r, 2, 1, 3, 4), randn(r, 5, 4, 2)),
        lambda r: case(randn(r, 3), randn(r, 2, 3, 4)),
        lambda r: case(randn(r, 2, 3, 4), randn(r, 4)),
    ],
    ops.cholesky: [lambda r: case(pd(r, 2, 3, 3)), lambda r: case(pd(r, 4, 4))],
    ops.triangular_solve: [
        lambda r: case(randn(r, 2, 3, 2), lower(r, 3, 3)),
        lambda r: case(randn(r, 2, 1, 3, 2), lower(r, 4, 3, 3)),
        lambda r: case(randn(r, 3, 2), upper(r, 2, 3, 3), upper=True),
        lambda r: case(randn(r, 2, 3, 2), lower(r, 2, 3, 3), transpose=True),
        lambda r: case(randn(r, 1, 3, 2), upper(r, 2, 3, 3), upper=True, transpose=True),
    ],
    ops.cholesky_solve: [
        lambda r: case(randn(r, 2, 3, 2), chol(r, 3, 3)),
        lambda r: case(randn(r, 2, 1, 3, 2), chol(r, 4, 3, 3)),
    ],
    ops.cholesky_inverse: [lambda r: case(chol(r, 2, 3, 3)), lambda r: case(chol(r, 4, 4))],
    ops.det: [lambda r: case(matrix(r, 2, 3, 3)), lambda r: case(matrix(r, 4, 4))],
    ops.logdet: [lambda r: case(matrix(r, 2, 3, 3)), lambda r: case(-matrix(r, 3, 3))],
    ops.inv: [lambda r: case(matrix(r, 2, 3, 3))],
    ops.transpose: [
        lambda r: case(randn(r, 2, 3, 4)),
        lambda r: case(randn(r, 2, 3, 4), dim0=0, dim1=-1),
    ],
    ops.qr_r: [lambda r: case(randn(r, 2, 5, 3)), lambda r: case(randn(r, 3, 3))],
    ops.diagonal: [lambda r: case(randn(r, 2, 3, 3)), lambda r: case(randn(r, 3, 4)),
                   lambda r: case(randn(r, 2, 3, 4), -1, -3), lambda r: case(randn(r, 4, 3),
                                                                          dim1=0, dim2=1)],
    ops.flip: [lambda r: case(randn(r, 2, 3, 4), -1), lambda r: case(randn(r, 2, 3), (0, 1)),
               lambda r: case(randn(r, 2, 3))],
    ops.triangular_inv: [lambda r: case(lower(r, 2, 3, 3)), lambda r: case(matrix(r, 3, 3)),
                         lambda r: case(upper(r, 2, 4, 4), upper=True)],
    ops.diag_embed: [lambda r: case(randn(r, 2, 3)), lambda r: case(ints(r, 4))],
    ops.triu: [lambda r: case(randn(r, 2, 4, 4)), lambda r: case(randn(r, 4, 5), k=1)],
    ops.tril: [lambda r: case(randn(r, 2, 4, 4)), lambda r: case(randn(r, 5, 4), k=-1)],
    # Reductions (test_reduction_axes walks the axis variants).
    ops.sum: _reduction_case(randn), ops.prod: _reduction_case(randn),
    ops.logsumexp: _reduction_case(randn) + [_logsumexp_all_neg_inf],
    ops.amax: _reduction_case(randn), ops.amin: _reduction_case(randn),
    ops.argmax: _reduction_case(halves), ops.argmin: _reduction_case(halves, axis=-1),
    ops.all: _reduction_case(booleans), ops.any: _reduction_case(booleans),
    ops.mean: _reduction_case(randn) + _reduction_case(ints, axis=(0, 2)),
    ops.std: _reduction_case(randn) + _reduction_case(ints, axis=(0, 2)) + [
        lambda r: case(randn(r, 2, 3, 4), axis=-1, ddof=1)],
    ops.var: _reduction_case(randn) + [lambda r: case(randn(r, 2, 3, 4), axis=(0, 1), ddof=1)],
    # N-ary ops.
    ops.einsum: [
        lambda r: case("ab,bc->ac", randn(r, 2, 3), randn(r, 3, 4)),
        lambda r: case("abc,c->ba", randn(r, 2, 3, 4), randn(r, 4)),
        lambda r: case("ii->i", randn(r, 3, 3)),
        lambda r: case("i,i->", randn(r, 3), randn(r, 3)),
    ],
    ops.cat: [lambda r: case([randn(r, 2, 3), randn(r, 2, 1), randn(r, 2, 2)], axis=1),
              lambda r: case((randn(r, 2, 3), randn(r, 1, 3)))],
    ops.stack: [lambda r: case([randn(r, 2, 3), randn(r, 2, 3)], axis=-1),
                lambda r: case((randn(r, 2, 3), randn(r, 2, 3)))],
    # Structural ops.
    ops.permute: [lambda r: case(randn(r, 2, 3, 4), (2, 0, 1))],
    ops.reshape: [lambda r: case(randn(r, 2, 3, 4), (6, 4)),
                  lambda r: case(randn(r, 2, 3), (3, -1)),
                  lambda r: case(randn(r, 5, 2, 3, 4), (12,), ndim=2)],
    ops.expand: [lambda r: case(randn(r, 3, 1), (2, 3, 4))],
    ops.getitem: [
        lambda r: case(randn(r, 3, 4, 5), (slice(None), np.array([0, 2, 2]))),
        lambda r: case(randn(r, 3, 4, 5), (Ellipsis, 1)),
        lambda r: case(randn(r, 3, 4, 5), (np.array([[0], [2]]), slice(1, 3),
                                           np.array([1, 4, 4]))),
        lambda r: case(randn(r, 3, 4), (None, slice(None, None, 2))),  # torch: no step < 0
    ],
    ops.where: [lambda r: case(booleans(r, 2, 3), randn(r, 2, 3), randn(r, 3)),
                lambda r: case(booleans(r, 2, 3), randn(r, 2, 3), 0.5)],
    ops.full_like: [lambda r: case(randn(r, 2, 3), 2.5), lambda r: case(ints(r, 3), 7)],
    ops.new_zeros: [lambda r: case(randn(r, 2), (2, 3)), lambda r: case(ints(r, 2), (4,))],
    ops.new_full: [lambda r: case(randn(r, 2), (2, 3), 1.5), lambda r: case(ints(r, 2), (3,), 4)],
    ops.new_arange: [lambda r: case(randn(r, 2), 5), lambda r: case(randn(r, 2), 2, 9, 3)],
    ops.new_eye: [lambda r: case(randn(r, 2), 3), lambda r: case(randn(r, 2), (2, 3))],
    ops.new_array: [lambda r: case(randn(r, 2), randn(r, 2, 3)),
                    lambda r: case(randn(r, 2), [1.5, 2.5]),
                    lambda r: case(randn(r, 2), [1, 2, 3])],
    ops.scatter_add: [
        lambda r: case(randn(r, 5, 3), (np.array([0, 2, 0, 4]),), randn(r, 4, 3)),
        lambda r: case(randn(r, 3, 4), (np.array([0, 1, 0]), np.array([2, 3, 2])), randn(r, 3)),
    ],
    ops.scatter_set: [  # indices that do not repeat
        lambda r: case(randn(r, 5, 3), (np.array([0, 2, 4]),), randn(r, 3, 3)),
        lambda r: case(randn(r, 3, 4), (np.array([0, 1, 2]), np.array([2, 3, 0])), randn(r, 3)),
    ],
    ops.to_numpy: [lambda r: case(randn(r, 2, 3)), lambda r: case(ints(r, 3))],
    ops.is_floating: [lambda r: case(randn(r, 2)), lambda r: case(ints(r, 2)),
                      lambda r: case(booleans(r, 2))],
    ops.detach: [lambda r: case(randn(r, 2, 3))],
    ops.is_concrete: [lambda r: case(randn(r, 2)), lambda r: case(ints(r, 3))],
})


# -- Special functions of distribution log densities (issue #17) ------------------------------
def _with_zeros(make):
    def maker(rng, *shape):
        x = make(rng, *shape)
        x.reshape(-1)[::2] = 0.0  # x * log(y) is 0 where x is 0, whatever y
        return x

    return maker


def _special_args(rng, *shape):
    # Negative non-integers (reflection formulas), small and large positive values.
    x = 12.0 * rng.standard_normal(shape)
    return np.where(np.abs(x - np.round(x)) < 0.05, x + 0.3, x)


EXAMPLES.update({
    ops.lgamma: _unary_cases(_special_args) + [lambda r: case(ints(r, 5) + 1)],
    ops.digamma: _unary_cases(_special_args) + [lambda r: case(ints(r, 5) + 1)],
    ops.i0e: _unary_cases(wide),
    ops.xlogy: _binary_cases(_with_zeros(randn), positive, 2.0)
    + [lambda r: case(ints(r, 2, 3), ints(r, 3) + 1)],
    ops.xlog1py: _binary_cases(_with_zeros(randn), positive, 0.5),
    # jax's betaln switches to an asymptotic series where the larger argument is >= 8.
    ops.betaln: _binary_cases(positive, lambda r, *s: 30.0 * positive(r, *s), 9.0)
    + [lambda r: case(ints(r, 2, 3) + 1, ints(r, 3) + 1)],
    ops.cos: _unary_cases(wide),
    ops.acos: _unary_cases(open_unit),
})


def _sign_normalized_r(r):
    # R of a QR decomposition is unique up to the sign of each row; fix diag(R) >= 0.
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return r * np.where(d == 0, 1.0, d)[..., :, None]


NORMALIZE = {ops.qr_r: _sign_normalized_r}


def result_is_native(backend: str, op, result) -> bool:
    if op is ops.to_numpy:
        return isinstance(result, np.ndarray)
    if op in (ops.is_floating, ops.is_concrete):
        return isinstance(result, (bool, np.bool_))
    return isinstance(result, BACKENDS[backend].ARRAY_TYPES)


# ---------------------------------------------------------------------------------------------
# Every backend, every required op: same results as the numpy kernel.
def test_examples_cover_required_ops():
    missing = [op.name for op in ops.REQUIRED_OPS if op not in EXAMPLES]
    assert not missing, f"add example inputs to EXAMPLES for: {missing}"


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_kernel_table_is_complete(backend):
    kernels = BACKENDS[backend].KERNELS
    missing = [op.name for op in ops.REQUIRED_OPS if op not in kernels]
    assert not missing, f"backends.{backend} has no kernel for: {missing}"
    for op in ops.REQUIRED_OPS:
        for typ in BACKENDS[backend].ARRAY_TYPES:
            assert op.kernels.get(typ) is kernels[op], (op, typ)


@pytest.mark.parametrize("op", ops.REQUIRED_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_kernel_matches_numpy(backend, op):
    assert op in EXAMPLES, f"add example inputs for ops.{op.name} to EXAMPLES"
    for i, make in enumerate(EXAMPLES[op]):
        args, kwargs = make(np.random.default_rng(i))
        expected = op(*args, **kwargs)
        actual = op(*to_backend(backend, args), **kwargs)
        assert result_is_native(backend, op, actual), (i, type(actual))
        assert_same(actual, expected, NORMALIZE.get(op))


# Every ReductionOp agrees across backends on axis=None, (), negative and tuple axes, keepdims.
REDUCTION_OPS = [op for op in ops.REQUIRED_OPS if isinstance(op, ReductionOp)]
AXES = [None, (), 0, -1, (0, 2), (-1, 0)]
ARG_AXES = [None, 0, -1]  # argmax/argmin take one int axis (or None: flattened)


@pytest.mark.parametrize("op", REDUCTION_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_reduction_axes(backend, op):
    rng = np.random.default_rng(0)
    x = booleans(rng, 2, 3, 4) if op in (ops.all, ops.any) else halves(rng, 2, 3, 4)
    for axis in ARG_AXES if op in (ops.argmax, ops.argmin) else AXES:
        for keepdims in (False, True):
            expected = op(x, axis=axis, keepdims=keepdims)
            actual = op(to_backend(backend, x), axis=axis, keepdims=keepdims)
            assert_same(actual, expected)
            if axis == ():
                assert actual.shape == x.shape
    # The bound op, as terms store it, computes the same.
    bound = op.bind(axis=-1, keepdims=True)
    assert_same(bound(to_backend(backend, x)), op(x, axis=-1, keepdims=True))


def test_reduction_axes_oracle():
    x = halves(np.random.default_rng(0), 2, 3, 4)
    assert ops.sum(x, axis=()) is x
    assert_same(ops.sum(x, axis=(-1, 0)), x.sum(0).sum(-1))
    assert_same(ops.prod(x, axis=(0, 2), keepdims=True), x.prod(0).prod(-1)[None, :, None])
    assert_same(ops.amax(x), max(x.reshape(-1).tolist()))
    assert ops.mean(ints(np.random.default_rng(1), 3, 4), axis=0).dtype.kind == "f"


# ---------------------------------------------------------------------------------------------
# The numpy kernels against independent oracles (run on every backend for good measure).
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_logsumexp_oracle(backend):
    rng = np.random.default_rng(0)
    x = randn(rng, 2, 3, 4)
    x[0, 1] = -np.inf
    x[:, 2] = -np.inf
    for axis in [None, 0, -1, (0, 2), (1,)]:
        for keepdims in (False, True):
            with np.errstate(divide="ignore"):
                expected = scipy.special.logsumexp(x, axis=axis, keepdims=keepdims)
            actual = ops.logsumexp(to_backend(backend, x), axis=axis, keepdims=keepdims)
            assert_same(actual, np.asarray(expected))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_sigmoid_oracle(backend):
    x = np.concatenate([wide(np.random.default_rng(0), 20), [-800.0, 0.0, 800.0]])
    assert_same(ops.sigmoid(to_backend(backend, x)), scipy.special.expit(x))


@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("is_upper", [False, True])
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_triangular_solve_oracle(backend, is_upper, transpose):
    rng = np.random.default_rng(0)
    x = randn(rng, 2, 1, 3, 2)
    y = (upper if is_upper else lower)(rng, 4, 3, 3)
    actual = ops.triangular_solve(*to_backend(backend, (x, y)), upper=is_upper,
                                  transpose=transpose)
    xb, yb = np.broadcast_to(x, (2, 4, 3, 2)), np.broadcast_to(y, (2, 4, 3, 3))
    expected = np.stack([
        np.stack([scipy.linalg.solve_triangular(yb[i, j], xb[i, j], lower=not is_upper,
                                                trans=1 if transpose else 0)
                  for j in range(4)])
        for i in range(2)
    ])
    assert_same(actual, expected)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_triangular_solve_ignores_other_triangle(backend):
    rng = np.random.default_rng(0)
    x, y = randn(rng, 3, 2), lower(rng, 3, 3)
    junk = y + np.triu(randn(rng, 3, 3), 1)  # garbage above the diagonal must be ignored
    expected = scipy.linalg.solve_triangular(y, x, lower=True)
    assert_same(ops.triangular_solve(*to_backend(backend, (x, junk))), expected)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_cholesky_family_oracle(backend):
    rng = np.random.default_rng(0)
    a, x = pd(rng, 2, 3, 3), randn(rng, 2, 3, 2)
    b_a, b_x = to_backend(backend, (a, x))
    b_l = ops.cholesky(b_a)
    l_np = to_np(b_l)
    assert_same(l_np, np.tril(l_np))
    assert_same(l_np @ np.swapaxes(l_np, -1, -2), a)
    assert_same(ops.cholesky_solve(b_x, b_l), np.linalg.solve(a, x))
    assert_same(ops.cholesky_inverse(b_l), np.linalg.inv(a))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_det_logdet_inv_oracle(backend):
    m = np.array([[[2.0, 1.0], [1.0, 3.0]], [[0.0, 2.0], [3.0, 1.0]]])  # det 5 and -6
    b_m = to_backend(backend, m)
    assert_same(ops.det(b_m), np.array([5.0, -6.0]))
    assert_same(ops.logdet(b_m), np.log([5.0, 6.0]))
    assert_same(ops.inv(b_m), np.array([[[3.0, -1.0], [-1.0, 2.0]],
                                        [[1.0, -2.0], [-3.0, 0.0]]]) / np.array([5.0, -6.0])[
        :, None, None])


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_qr_r_oracle(backend):
    a = randn(np.random.default_rng(0), 2, 5, 3)
    r = to_np(ops.qr_r(to_backend(backend, a)))
    assert r.shape == (2, 3, 3)
    assert_same(r, np.triu(r))
    assert_same(np.swapaxes(r, -1, -2) @ r, np.swapaxes(a, -1, -2) @ a)  # R^T R = A^T A


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_safe_ops_oracle(backend):
    x = np.array([1.0, 0.0, -2.0, 3.0])
    y = np.array([np.inf, 0.0, 4.0, -np.inf])
    big = np.finfo(np.float64).max
    b_x, b_y = to_backend(backend, (x, y))
    # funsor's semantics: x - max(y, -big) (y = -inf gives a finite number), and
    # x * min(1 / y, big) (y = 0 gives x * big, 0 / 0 = 0; negative divisors divide)
    with np.errstate(divide="ignore"):
        assert_same(ops.safesub(b_x, b_y), x - np.maximum(y, -big))
        assert_same(ops.safediv(b_x, to_backend(backend, np.abs(y))),
                    x * np.minimum(1.0 / np.abs(y), big))
    assert_same(ops.safediv(b_x[1:2], b_y[1:2]), np.array([0.0]))  # 0 / 0 = 0
    assert_same(ops.safediv(b_x[:1], b_x[1:2]), np.array([big]))
    assert_same(ops.safediv(b_x[:1], to_backend(backend, np.array([-2.0]))), np.array([-0.5]))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_floordiv_mod_oracle(backend):
    rng = np.random.default_rng(0)
    x, y = wide(rng, 30), nonzero(rng, 30)
    b_x, b_y = to_backend(backend, (x, y))
    assert_same(ops.floordiv(b_x, b_y), np.array([a // b for a, b in zip(x, y)]))
    assert_same(ops.mod(b_x, b_y), np.array([math.fmod(a, b) if math.fmod(a, b) * b >= 0
                                             else math.fmod(a, b) + b for a, b in zip(x, y)]))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_scatter_add_oracle(backend):
    rng = np.random.default_rng(0)
    dest, values = randn(rng, 4, 3), randn(rng, 5, 3)
    index = np.array([0, 3, 0, 0, 2])
    expected = dest.copy()
    for i, row in zip(index, values):
        expected[i] += row
    b_dest = to_backend(backend, dest)
    actual = ops.scatter_add(b_dest, (to_backend(backend, index),), to_backend(backend, values))
    assert_same(actual, expected)
    assert_same(b_dest, dest)  # out of place


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_diag_embed_oracle(backend):
    x = np.array([[1.0, -np.inf, 3.0], [4.0, 5.0, np.inf]])
    expected = np.zeros((2, 3, 3))
    for i in range(2):
        for j in range(3):
            expected[i, j, j] = x[i, j]
    assert_same(ops.diag_embed(to_backend(backend, x)), expected)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_reciprocal_of_int_is_real(backend):
    assert_same(ops.reciprocal(to_backend(backend, np.array([1, 2, 4]))),
                np.array([1.0, 0.5, 0.25]))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_einsum_matmul_oracle(backend):
    rng = np.random.default_rng(0)
    a, b = randn(rng, 2, 3), randn(rng, 3, 4)
    expected = np.array([[sum(a[i, k] * b[k, j] for k in range(3)) for j in range(4)]
                         for i in range(2)])
    b_a, b_b = to_backend(backend, (a, b))
    assert_same(ops.einsum("ik,kj->ij", b_a, b_b), expected)
    assert_same(ops.matmul(b_a, b_b), expected)


# ---------------------------------------------------------------------------------------------
# Creation, conversion and RNG.
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_asarray(backend):
    module = BACKENDS[backend]
    real, integer = module.asarray([1, 2], "real"), module.asarray([1.0, 2.0], "int")
    assert isinstance(real, module.ARRAY_TYPES)
    assert to_np(real).dtype.kind == "f" and to_np(integer).dtype == np.int64
    if backend == "torch":
        assert real.dtype == torch.get_default_dtype()
    assert_same(module.asarray(np.arange(3.0)), np.arange(3.0))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_rng(backend):
    module = BACKENDS[backend]
    for fn, args in [(module.randn, ()), (module.rand, ()), (module.randint, (2, 5))]:
        a = fn(*args, (3, 4), rng_key=module.new_rng_key(1))
        b = fn(*args, (3, 4), rng_key=module.new_rng_key(1))
        c = fn(*args, (3, 4), rng_key=module.new_rng_key(2))
        assert isinstance(a, module.ARRAY_TYPES) and a.shape == (3, 4)
        assert_same(a, b)
        assert not np.array_equal(to_np(a), to_np(c))
        d, e = fn(*args, (3, 4)), fn(*args, (3, 4))  # no key: fresh draws each call
        assert not np.array_equal(to_np(d), to_np(e))
    u = to_np(module.rand((1000,), module.new_rng_key(0)))
    assert u.dtype.kind == "f" and 0.0 <= u.min() and u.max() < 1.0
    k = to_np(module.randint(2, 5, (1000,), module.new_rng_key(0)))
    assert k.dtype.kind == "i" and set(k.tolist()) == {2, 3, 4}


def test_torch_creation_follows_prototype():
    proto = torch.zeros(2, dtype=torch.float64)
    assert ops.new_zeros(proto, (2,)).dtype == torch.float64
    assert ops.new_eye(proto.float(), 2).dtype == torch.float32
    assert ops.new_arange(proto, 3).dtype == torch.int64
    assert ops.new_array(proto, [1.0]).dtype == torch.float64
    assert torch_backend.randn((2,)).dtype == torch.get_default_dtype()


# ---------------------------------------------------------------------------------------------
# torch: gradients flow through the kernels (float64 finite differences).
def _sym_cholesky(a):
    return ops.cholesky((a + a.mT) / 2)


def _tril_cholesky_solve(x, y):
    return ops.cholesky_solve(x, torch.tril(y))


GRADCHECKS = {
    "logsumexp": (lambda x: ops.logsumexp(x, axis=(0, -1)), (randn, (2, 3, 4))),
    "logsumexp_keepdims": (lambda x: ops.logsumexp(x, axis=None, keepdims=True),
                           (randn, (2, 3))),
    "triangular_solve": (lambda x, y: ops.triangular_solve(x, torch.tril(y)),
                         (randn, (2, 1, 3, 2)), (lower, (4, 3, 3))),
    "triangular_solve_upper_transpose": (
        lambda x, y: ops.triangular_solve(x, torch.triu(y), upper=True, transpose=True),
        (randn, (3, 2)), (upper, (2, 3, 3))),
    "cholesky": (_sym_cholesky, (pd, (2, 3, 3))),
    "cholesky_solve": (_tril_cholesky_solve, (randn, (2, 3, 2)), (chol, (3, 3))),
    "cholesky_inverse": (lambda x: ops.cholesky_inverse(torch.tril(x)), (chol, (3, 3))),
    "logdet": (ops.logdet, (matrix, (2, 3, 3))),
    "qr_r": (ops.qr_r, (randn, (5, 3))),
    "prod": (lambda x: ops.prod(x, axis=(0, 2)), (nonzero, (2, 3, 2))),
    "mean": (lambda x: ops.mean(x, axis=-1), (randn, (2, 3))),
    "safesub": (ops.safesub, (randn, (2, 3)), (randn, (3,))),
    "safediv": (ops.safediv, (randn, (2, 3)), (positive, (3,))),
    "logaddexp_scalar": (lambda x: ops.logaddexp(0.5, x), (randn, (3,))),
    "sigmoid": (ops.sigmoid, (randn, (3,))),
    "diag_embed": (ops.diag_embed, (randn, (2, 3))),
    "scatter_add": (lambda d, v: ops.scatter_add(d, (torch.tensor([0, 1, 0]),), v),
                    (randn, (2, 3)), (randn, (3, 3))),
    "scatter_set": (lambda d, v: ops.scatter_set(d, (torch.tensor([2, 0]),), v),
                    (randn, (3, 3)), (randn, (2, 3))),
    "expand_getitem": (lambda x: ops.getitem(ops.expand(x, (2, 3, 4)), (0, slice(1, 3))),
                       (randn, (3, 1))),
}


@pytest.mark.parametrize("name", list(GRADCHECKS))
def test_torch_gradcheck(name):
    fn, *makers = GRADCHECKS[name]
    rng = np.random.default_rng(0)
    args = [torch.tensor(make(rng, *shape), requires_grad=True) for make, shape in makers]
    assert torch.autograd.gradcheck(fn, args, eps=1e-6, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# jax: kernels trace under jit (a fixed sample of ops), grad and vmap.
JIT_ALWAYS = [
    ops.logsumexp, ops.triangular_solve, ops.cholesky_solve, ops.cholesky_inverse,
    ops.scatter_add, ops.safesub, ops.safediv, ops.diag_embed, ops.qr_r, ops.new_zeros,
    ops.new_arange, ops.new_array, ops.astype, ops.getitem, ops.prod, ops.argmax, ops.clamp,
]
_UNTRACEABLE = {ops.to_numpy, ops.is_floating, ops.is_concrete}  # host values by design
_rest = [op for op in ops.REQUIRED_OPS if op not in JIT_ALWAYS and op not in _UNTRACEABLE]
JIT_SAMPLE = JIT_ALWAYS + [
    _rest[i] for i in sorted(np.random.default_rng(0).choice(len(_rest), 8, replace=False))
]


def _split_arrays(args):
    """The numpy arrays inside ``args``, and a function putting new values in their place."""
    arrays = []

    def walk(value):
        if isinstance(value, np.ndarray):
            arrays.append(value)
        elif isinstance(value, (tuple, list)):
            for v in value:
                walk(v)

    walk(args)

    def rebuild(new):
        it = iter(new)

        def fill(value):
            if isinstance(value, np.ndarray):
                return next(it)
            if isinstance(value, (tuple, list)):
                return type(value)(fill(v) for v in value)
            return value

        return fill(args)

    return arrays, rebuild


@pytest.mark.parametrize("op", JIT_SAMPLE, ids=lambda op: op.name)
def test_jax_jit_matches_eager(op):
    args, kwargs = EXAMPLES[op][0](np.random.default_rng(0))
    arrays, rebuild = _split_arrays(args)

    def fn(*new):
        return op(*rebuild(new), **kwargs)

    inputs = [jnp.asarray(a) for a in arrays]
    eager = fn(*inputs)
    assert_same(jax.jit(fn)(*inputs), eager, NORMALIZE.get(op))
    assert_same(eager, op(*args, **kwargs), NORMALIZE.get(op))


def test_jax_grad_and_vmap_dispatch():
    rng = np.random.default_rng(0)
    x, y = randn(rng, 3, 2), lower(rng, 3, 3)

    def loss(x, y):
        return ops.sum(ops.logsumexp(ops.triangular_solve(x, y), axis=0))

    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    loss(tx, ty).backward()
    # The kernels see grad's tracers under jit as eagerly (one compile instead of one per
    # eager op of the derivative: ~1 s); vmap's below run eagerly.
    gx, gy = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(x), jnp.asarray(y))
    assert_same(gx, tx.grad)
    assert_same(gy, torch.tril(ty.grad))  # both ignore the upper triangle of y
    batched = jax.vmap(lambda row: ops.logsumexp(row, axis=0))(jnp.asarray(x))
    assert_same(batched, scipy.special.logsumexp(x, axis=1))


@functools.cache
def _first_sight_modules():
    # One fresh interpreter for both modules (importing torch costs seconds), so that no
    # backend but numpy is loaded yet: atoms built from torch or jax arrays must keep them
    # (not convert them to the active numpy backend).
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import jax.numpy as xp
        import torch
        import funsor_core as fc
        for module in ("torch", "jax"):
            if module == "jax":
                ones, eye = xp.ones(2), xp.eye(2)
            else:
                ones, eye = torch.ones(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64)
            t = fc.Tensor(ones, {"i": fc.Bint[2]})
            g = fc.Gaussian(mean=ones, covariance=eye, inputs={"x": fc.Reals[2]})
            assert fc.get_backend() == "numpy"
            print(module, type(t.data).__module__, type(g.white_vec).__module__)
    """)
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    return {line.split()[0]: line.split()[1:] for line in lines}


@pytest.mark.parametrize("module", ["torch", "jax"])
def test_arrays_load_their_backend_on_first_sight(module):
    out = _first_sight_modules()[module]
    assert len(out) == 2 and all(
        m.split(".")[0] in ({"torch"} if module == "torch" else {"jax", "jaxlib"})
        for m in out), out


# ---------------------------------------------------------------------------------------------
# The kernels of funsor's atanh, shifts, std/var and output reshape, against formulas.
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_atanh_and_shifts_oracle(backend):
    rng = np.random.default_rng(0)
    x = open_unit(rng, 3, 4)
    assert_same(ops.atanh(to_backend(backend, x)), 0.5 * np.log((1 + x) / (1 - x)))
    a, k = ints(rng, 3, 4), shifts(rng, 4)
    assert_same(ops.lshift(*to_backend(backend, (a, k))), a * 2 ** k)
    assert_same(ops.rshift(*to_backend(backend, (a, k))), a // 2 ** k)


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_std_var_oracle(backend, ddof):
    x = randn(np.random.default_rng(0), 2, 3, 4)
    # Sum of squared deviations over axes (0, 2), divided by n - ddof, by hand.
    n = 2 * 4
    dev = x - x.sum(axis=(0, 2), keepdims=True) / n
    expected = (dev ** 2).sum(axis=(0, 2)) / (n - ddof)
    xb = to_backend(backend, x)
    assert_same(ops.var(xb, axis=(0, 2), ddof=ddof), expected)
    assert_same(ops.std(xb, axis=(0, 2), ddof=ddof), np.sqrt(expected))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_reshape_rightmost_dims_oracle(backend):
    x = randn(np.random.default_rng(0), 5, 2, 3, 4)
    actual = ops.reshape(to_backend(backend, x), (4, 3), ndim=2)
    # Each batch entry x[i, j] (a 3x4 block) reshaped on its own.
    expected = np.stack([np.stack([x[i, j].reshape(4, 3) for j in range(2)]) for i in range(5)])
    assert_same(actual, expected)


# ---------------------------------------------------------------------------------------------
# Control flow and platform facts: every backend exports the same names, with the meaning of
# a plain Python loop (the oracle).
CONTROL = ("scan", "cond", "jit", "checkpoint", "differentiate_as", "is_traced", "platform",
           "COMPILES", "DIFFERENTIABLE", "CALL_SECONDS", "LOOP_FNS")


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_control_flow_names_exported(backend):
    module = BACKENDS[backend]
    missing = [name for name in CONTROL if not hasattr(module, name)]
    assert not missing, f"backends.{backend} lacks {missing}"
    assert isinstance(module.COMPILES, bool) and isinstance(module.DIFFERENTIABLE, bool)
    assert module.CALL_SECONDS > 0 and isinstance(module.platform(), str)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_scan_oracle(backend, reverse):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5,))
    # Oracle: the Python loop, carry c <- 0.5 c + a_t * b_t, y_t = c.
    c, ys = np.zeros(3), [None] * 5
    for t in (range(4, -1, -1) if reverse else range(5)):
        c = 0.5 * c + a[t] * b[t]
        ys[t] = c
    module = BACKENDS[backend]

    def body(carry, x):
        new = carry * 0.5 + x[0] * x[1]
        return new, new

    carry, out = module.scan(body, to_backend(backend, np.zeros(3)),
                             to_backend(backend, (a, b)), reverse=reverse)
    assert_same(carry, c)
    assert_same(out, np.stack(ys))
    carry, none = module.scan(lambda c, x: (c + x, None), to_backend(backend, np.zeros(3)),
                              to_backend(backend, a))
    assert none is None
    assert_same(carry, a.sum(0))


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_cond_jit_checkpoint_differentiate_as(backend):
    module = BACKENDS[backend]
    x = to_backend(backend, np.array([1.0, 2.0]))
    for pred, expected in ((True, [2.0, 3.0]), (False, [1.0, 2.0])):
        out = module.cond(to_backend(backend, np.array(pred)), lambda v: v + 1, lambda v: v, x)
        assert_same(out, np.array(expected))
    assert_same(module.jit(lambda v: v * 2)(x), np.array([2.0, 4.0]))
    assert_same(module.checkpoint(lambda v: v * 2)(x), np.array([2.0, 4.0]))
    out = module.differentiate_as(lambda v: v * 3, lambda v: v + v + v, (x,))
    assert_same(out, np.array([3.0, 6.0]))
    assert module.is_traced(x) is False


def test_jax_is_traced_under_jit_and_differentiate_as_takes_the_reference_derivative():
    seen = []
    jax.jit(lambda v: seen.append(jax_backend.is_traced(v)) or v)(jnp.zeros(2))
    assert seen == [True]
    # Values from fn, derivatives from reference: d/dx of 2x is 2 (fn's would be 0).
    grad = jax.grad(lambda v: jax_backend.differentiate_as(
        lambda y: jax.lax.stop_gradient(2 * y), lambda y: 2 * y, (v,)))(1.0)
    assert float(grad) == 2.0


def _routed_pair(calls):
    # fn and reference agree at b = 1 in value and in every derivative in a alone; those
    # in b differ (fn's is sin(a), reference's 3 sin(a)): b plays a declared 0/1 table.
    def fn(a, b):
        calls.append("fn")
        return jnp.sin(a) * b if isinstance(a, jax.Array) else torch.sin(a) * b

    def reference(a, b):
        calls.append("reference")
        return jnp.sin(a) * b ** 3 if isinstance(a, jax.Array) else torch.sin(a) * b ** 3

    return fn, reference


def test_jax_differentiate_as_wrt_routes_derivatives_by_argument():
    # Oracle: jax's own derivatives of reference; reference is traced only when a
    # derivative in b is taken.
    calls = []
    fn, reference = _routed_pair(calls)

    def f(a, b):
        return jax_backend.differentiate_as(fn, reference, (a, b), wrt=(1,))

    a, b = jnp.asarray(0.7), jnp.asarray(1.0)
    jax.jit(f).lower(a, b)
    jax.jit(jax.grad(f)).lower(a, b)
    jax.jit(jax.grad(lambda a, b: f(a, jax.lax.stop_gradient(b)), argnums=(0, 1))).lower(a, b)
    assert "reference" not in calls

    def checks(fun):
        return (fun(a, b), jax.grad(fun, argnums=(0, 1))(a, b),
                jax.hessian(fun, argnums=(0, 1))(a, b),
                jax.jacfwd(lambda b: jax.jacfwd(fun)(a, b))(b),  # mixed, forward over forward
                jax.grad(lambda a: jax.grad(fun, argnums=1)(a, b))(a),  # reverse, b first
                jax.vmap(jax.grad(fun, argnums=(0, 1)))(jnp.asarray([0.1, 0.2]), jnp.ones(2)))

    def reverse_then_b(fun, a, b):  # reverse in a alone, then in b (h88: was NaN)
        return (jax.grad(lambda b: jax.grad(fun)(a, b))(b),
                jax.grad(lambda b: jax.grad(lambda b: jax.grad(fun)(a, b))(b))(b),
                jax.vmap(lambda a: jax.grad(lambda b: jax.grad(fun)(a, b))(b))(a + jnp.ones(2)))

    mine, oracle, hidden = jax.jit(lambda: (
        checks(f) + reverse_then_b(f, a, b), checks(reference) + reverse_then_b(reference, a, b),
        jax.grad(lambda b: jax.jit(jax.grad(f))(a, b))(b)))()
    for x, y in zip(jax.tree_util.tree_leaves(mine), jax.tree_util.tree_leaves(oracle)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6)
    # an inner jit hides the outer derivative in b from the rule: NaN, not fn's cos(a)
    assert np.isnan(float(hidden))


def test_torch_differentiate_as_wrt_is_the_references_to_second_order():
    calls = []
    fn, reference = _routed_pair(calls)
    a = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    out = torch_backend.differentiate_as(fn, reference, (a, b), wrt=(1,))
    ref = reference(a, b)
    assert torch.equal(out.detach(), fn(a, b).detach())  # fn's value, bit for bit
    for mine, oracle in ((out, ref),):
        da, db = torch.autograd.grad(mine, (a, b), create_graph=True)
        oa, ob = torch.autograd.grad(oracle, (a, b), create_graph=True)
        assert torch.allclose(torch.stack([da, db]), torch.stack([oa, ob]))
        assert torch.allclose(torch.autograd.grad(da, b, retain_graph=True)[0],
                              torch.autograd.grad(oa, b, retain_graph=True)[0])
    calls.clear()
    torch_backend.differentiate_as(fn, reference, (a, b.detach()), wrt=(1,))
    with torch.no_grad():
        torch_backend.differentiate_as(fn, reference, (a, b), wrt=(1,))
    assert calls == ["fn", "fn"]  # b without a graph: fn alone
    assert numpy_backend.differentiate_as(lambda x, y: x * y, None, (2.0, 3.0), wrt=(1,)) == 6.0


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_loop_fns_oracle(backend):
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.5, 1.5, size=(3, 2, 2)), rng.uniform(0.5, 1.5, size=(3, 2, 2))
    fns, xa, xb = BACKENDS[backend].LOOP_FNS, to_backend(backend, a), to_backend(backend, b)
    assert_same(fns.matmul(xa, xb), np.einsum("tij,tjk->tik", a, b))
    assert_same(fns.matmul(xa[0], xb[0]), a[0] @ b[0])
    assert_same(fns.exp(xa), np.exp(a))
    assert_same(fns.log(xa), np.log(a))
    assert_same(fns.cat([xa, xb]), np.concatenate([a, b]))
    assert [to_np(u).tolist() for u in fns.unbind(xa)] == [u.tolist() for u in a]
    assert_same(fns.total(xa), a.sum(0))
    assert_same(fns.max2(xa), a.max(axis=(-2, -1), keepdims=True))
    assert_same(fns.max1(xa), a.max(axis=-1, keepdims=True))
    assert_same(fns.sum(xa, -1, True), a.sum(-1, keepdims=True))
    assert fns.smallest(xa) == a.min()


def test_jax_guarded_takes_safe_inputs_that_are_tracers_under_grad():
    # The safe inputs of ``guarded`` are often made from traced arrays (zeros like the log
    # weights); closed over by the custom derivative they leaked into the jaxpr under
    # jax.grad ("No constant handler for type: DynamicJaxprTracer", issue 27 item 16).
    # Oracle: d/dx 3 sqrt(x) = 1.5 / sqrt(x), and its composition through a scan.
    from backends.jax_control import guarded

    def fn(y):
        return jnp.sqrt(y), y > 0

    inner = jax.jit(lambda y: guarded(fn, (y,), (jnp.full_like(y, 1.0) + 0.0 * y,))[0] * 3.0)
    assert np.isclose(float(jax.grad(inner)(4.0)), 1.5 / 2.0)
    twice = jax.grad(lambda x: jax.lax.scan(lambda c, _: (inner(c), None), x,
                                            jnp.arange(2))[0])(4.0)
    # d/dx 3 sqrt(3 sqrt(x)) = 3 / (2 sqrt(3 sqrt(x))) * 1.5 / sqrt(x)
    assert np.isclose(float(twice), 3 / (2 * np.sqrt(6.0)) * 0.75)
