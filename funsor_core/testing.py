"""Helpers for tests: comparing funsors, random funsors and arrays, einsum examples.

Random arrays are drawn from numpy's global generator (so ``np.random.seed`` makes a test
reproducible on every backend) and converted to the active backend (``fc.get_backend()``).

Example:
    >>> from funsor_core.testing import assert_close, random_tensor
    >>> f = random_tensor({"i": fc.Bint[2]})
    >>> assert_close(f + 0.0, f)
"""

from __future__ import annotations

import contextlib
import itertools
import numbers
from collections import namedtuple
from typing import Any

import numpy as np
import opt_einsum

from funsor_core import ops
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor, is_array
from funsor_core.distribution import MultivariateNormal
from funsor_core.domains import Bint, Domain, Real
from funsor_core.engine.backend import backend_module, backend_of
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.base import Align, Funsor, Number

__all__ = [
    "assert_close", "check_funsor", "random_tensor", "random_gaussian", "randn", "rand",
    "randint", "zeros", "ones", "make_einsum_example", "make_chain_einsum", "make_hmm_einsum",
    "make_plated_hmm_einsum", "random_scale_tril", "random_mvn",
    "assert_equiv", "empty", "id_from_inputs", "iter_subsets", "ActualExpected",
    "DesugarGetitem", "desugar_getitem", "requires_backend", "excludes_backend", "xfail_param",
    "xfail_if_not_implemented", "xfail_if_not_found",
]


# ---------------------------------------------------------------------------------------------
# Comparison.
def _to_numpy(x: Any) -> np.ndarray:
    if isinstance(x, numbers.Number):
        return np.asarray(x)
    if is_array(x):
        return np.asarray(ops.to_numpy(x))
    return np.asarray(x)


def _assert_arrays_close(actual, expected, atol: float, rtol: float, what: str) -> None:
    a, e = _to_numpy(actual), _to_numpy(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != expected {e.shape}"
    if a.dtype == bool or e.dtype == bool or (
            np.issubdtype(a.dtype, np.integer) and np.issubdtype(e.dtype, np.integer)):
        assert (a == e).all(), f"{what}: {a} != expected {e}"
        return
    if atol is None and rtol is None:  # as funsor: no tolerance given, no value check
        return
    np.testing.assert_allclose(a, e, atol=atol or 0.0, rtol=rtol or 0.0, equal_nan=True,
                               err_msg=what)


def assert_close(actual: Any, expected: Any, atol: float | None = 1e-6,
                 rtol: float | None = 1e-6) -> None:
    """Assert that two funsors (or arrays of any backend, or numbers) are numerically equal:
    ``|actual - expected| <= atol + rtol * |expected|`` elementwise. ``rtol=None`` checks the
    absolute difference alone, as in funsor (``atol=None`` the relative one alone).

    Tensors must have the same inputs (as sets; ``actual`` is aligned to ``expected``'s
    order), output and data; a lazy ``Align`` (input order only) is looked through.
    Gaussians are compared by ``info_vec`` and ``precision``, not by their square roots, plus
    any other array fields they share.

    Example:
        >>> a = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> assert_close(a.align(("j", "i")), a)
        >>> assert_close(np.ones(2), [1.0, 1.0 + 1e-9])
        >>> assert_close(np.array([1e6]), np.array([1e6 + 0.5]), rtol=None, atol=1.0)
        >>> assert_close({"x": fc.Number(1.0)}, {"x": fc.Number(1.0 + 1e-9)})  # dicts too
    """
    if isinstance(expected, dict):  # as funsor's: the same keys, values close
        assert isinstance(actual, dict), f"cannot compare a {type(actual).__name__} with a dict"
        assert actual.keys() == expected.keys(), (
            f"keys {list(actual)} != expected {list(expected)}")
        for key, value in expected.items():
            assert_close(actual[key], value, atol, rtol)
        return
    if not isinstance(actual, Funsor) and not isinstance(expected, Funsor):
        _assert_arrays_close(actual, expected, atol, rtol, "arrays")
        return
    assert isinstance(actual, Funsor) and isinstance(expected, Funsor), (
        f"cannot compare a {type(actual).__name__} with a {type(expected).__name__}")
    # A lazy Align only orders inputs, and inputs are compared by name: look through it.
    while type(actual) is Align:
        actual = actual.arg
    while type(expected) is Align:
        expected = expected.arg
    assert type(actual) is type(expected), (
        f"type {type(actual).__name__} != expected {type(expected).__name__}")
    assert actual.inputs.keys() == expected.inputs.keys(), (
        f"inputs {dict(actual.inputs)} != expected {dict(expected.inputs)}")
    for name, domain in expected.inputs.items():
        assert actual.inputs[name] is domain, (
            f"input '{name}' is {actual.inputs[name]}, expected {domain}")
    assert actual.output is expected.output, (
        f"output {actual.output} != expected {expected.output}")
    if actual is expected:
        return
    # The data of an atom by its class's own check (along the MRO); a compound term (a sum
    # g + t, a lazy term): the same structure, children close.
    check = next((_CLOSE_CHECKS[c] for c in type(actual).__mro__ if c in _CLOSE_CHECKS),
                 _assert_terms_close)
    check(actual, expected, atol, rtol)


def _assert_numbers_close(actual, expected, atol, rtol) -> None:
    _assert_arrays_close(actual.data, expected.data, atol, rtol, "Number data")


def _assert_tensors_close(actual, expected, atol, rtol) -> None:
    if tuple(actual.inputs) != tuple(expected.inputs):
        actual = actual.align(tuple(expected.inputs))
    _assert_arrays_close(actual.data, expected.data, atol, rtol, "Tensor data")


def _assert_gaussians_close(actual, expected, atol, rtol) -> None:
    # The natural parameters (not their square roots, which are not unique) and every other
    # shared array field.
    if tuple(actual.inputs) != tuple(expected.inputs):
        actual = actual.align(tuple(expected.inputs))
    fields = ["info_vec", "precision"]
    for name in getattr(type(expected), "_fields", ()):
        if name in fields or name in ("white_vec", "prec_sqrt", "inputs"):
            continue
        if is_array(getattr(expected, name, None)):
            fields.append(name)
    for name in fields:
        _assert_arrays_close(getattr(actual, name), getattr(expected, name), atol, rtol,
                             f"Gaussian {name}")


def _assert_deltas_close(actual, expected, atol, rtol) -> None:
    a, e = dict(actual.terms), dict(expected.terms)
    assert a.keys() == e.keys(), f"Delta names {sorted(a)} != expected {sorted(e)}"
    for name, (point, log_density) in e.items():
        assert_close(a[name][0], point, atol, rtol)
        assert_close(a[name][1], log_density, atol, rtol)


def _assert_terms_close(actual, expected, atol, rtol) -> None:
    assert len(actual._args) == len(expected._args), f"{actual!r} is not {expected!r}"
    for x, y in zip(actual._args, expected._args):
        _assert_args_close(x, y, atol, rtol, actual)


def _assert_args_close(x, y, atol, rtol, term) -> None:
    if isinstance(x, Funsor) or isinstance(y, Funsor):
        assert_close(x, y, atol, rtol)
    elif type(x) is tuple or type(y) is tuple:
        assert type(x) is type(y) and len(x) == len(y), f"argument {x!r} != expected {y!r}"
        for xi, yi in zip(x, y):
            _assert_args_close(xi, yi, atol, rtol, term)
    elif is_array(x) or is_array(y):
        _assert_arrays_close(x, y, atol, rtol, f"{type(term).__name__} argument")
    else:
        assert x == y, f"argument {x!r} != expected {y!r} in {type(term).__name__}"


# How assert_close compares the data of two atoms of one class.
_CLOSE_CHECKS = {Number: _assert_numbers_close, Tensor: _assert_tensors_close,
                 Gaussian: _assert_gaussians_close, Delta: _assert_deltas_close}


def check_funsor(x: Funsor, inputs: dict, output: Domain, data: Any = None) -> None:
    """Assert that ``x`` is a funsor with these inputs (any order), output and (if given) data
    (compared in the order of ``inputs``).

    Example:
        >>> f = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> check_funsor(f, {"j": fc.Bint[3], "i": fc.Bint[2]}, fc.Real, np.zeros((3, 2)))
    """
    assert isinstance(x, Funsor), f"not a funsor: {x!r}"
    assert dict(x.inputs) == dict(inputs), f"inputs {dict(x.inputs)} != expected {dict(inputs)}"
    assert x.output is output, f"output {x.output} != expected {output}"
    if data is not None:
        if tuple(x.inputs) != tuple(inputs):
            x = x.align(tuple(inputs))
        _assert_arrays_close(x.data, data, 0.0, 0.0, "data")


# ---------------------------------------------------------------------------------------------
# Random arrays on the active backend.
def _shape(shape) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def randn(*shape) -> Any:
    """Standard normal samples of ``shape`` on the active backend.

    Example:
        >>> randn(2, 3).shape
        (2, 3)
    """
    return backend_module().asarray(np.random.standard_normal(_shape(shape)), "real")


def rand(*shape) -> Any:
    """Uniform samples on [0, 1) of ``shape`` on the active backend.

    Example:
        >>> bool((rand(4) < 1).all())
        True
    """
    return backend_module().asarray(np.random.random_sample(_shape(shape)), "real")


def randint(low: int, high: int, shape=(), size=None) -> Any:
    """Uniform integers in ``[low, high)`` of ``shape`` (or funsor's ``size=``) on the active
    backend.

    Example:
        >>> x = randint(0, 3, (5,))
        >>> bool(((x >= 0) & (x < 3)).all())
        True
    """
    shape = size if size is not None else shape
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return backend_module().asarray(np.random.randint(low, high, size=shape), "int")


def zeros(*shape) -> Any:
    """Real zeros of ``shape`` on the active backend.

    Example:
        >>> zeros(2).shape
        (2,)
    """
    return backend_module().asarray(np.zeros(_shape(shape)), "real")


def ones(*shape) -> Any:
    """Real ones of ``shape`` on the active backend.

    Example:
        >>> float(ones(2, 2).sum())
        4.0
    """
    return backend_module().asarray(np.ones(_shape(shape)), "real")


# ---------------------------------------------------------------------------------------------
# Random funsors.
def random_tensor(inputs: dict, output: Domain = Real) -> Tensor:
    """A Tensor with these Bint inputs and output: normal reals, or uniform ints of a Bint.

    Example:
        >>> f = random_tensor({"i": fc.Bint[2]}, fc.Bint[3])
        >>> f.output, bool(((f.data >= 0) & (f.data < 3)).all())
        (Bint[3], True)
    """
    inputs = dict(inputs)
    shape = tuple(d.size for d in inputs.values()) + output.shape
    if output.dtype == "real":
        data = randn(shape)
    else:
        data = randint(0, output.dtype, shape)
    return Tensor(data, inputs, output.dtype)


def random_gaussian(inputs: dict):
    """A random well-conditioned Gaussian with these inputs (Bint batch inputs, real inputs),
    whose log density is 0 at its mean.

    Example:
        >>> random_gaussian({"i": fc.Bint[2], "x": fc.Real}).inputs
        {'i': Bint[2], 'x': Real}
    """
    inputs = dict(inputs)
    batch = tuple(d.size for d in inputs.values() if d.dtype != "real")
    dim = sum(d.num_elements for d in inputs.values() if d.dtype == "real")
    rank = dim + 1
    noise = np.random.standard_normal(batch + (dim, rank)) * 0.5
    eye = np.broadcast_to(np.eye(dim, rank) * 1.5, batch + (dim, rank))
    # white_vec = loc @ prec_sqrt puts the maximum, log density 0, at a random mean ``loc``
    # (funsor's tests evaluate a random Gaussian at its own mean and expect 0).
    loc = np.random.standard_normal(batch + (dim,))
    white_vec = backend_module().asarray(np.einsum("...d,...dr->...r", loc, eye + noise), "real")
    prec_sqrt = backend_module().asarray(eye + noise, "real")
    return Gaussian(white_vec=white_vec, prec_sqrt=prec_sqrt, inputs=inputs)


# -- distributions (issue #17) ------------------------------------------------------------------
def random_scale_tril(*shape) -> Any:
    """A random lower triangular matrix with a positive diagonal, of ``shape`` (``(..., n,
    n)``, given as ints or one tuple) on the active backend: a valid ``scale_tril``.

    Example:
        >>> L = random_scale_tril(2, 3, 3)
        >>> L.shape, bool((np.diagonal(L, axis1=-2, axis2=-1) > 0).all()), bool(L[0, 0, 1] == 0)
        ((2, 3, 3), True, True)
    """
    shape = _shape(shape)
    x = np.random.standard_normal(shape)
    n = shape[-1]
    diag = np.exp(0.5 * np.random.standard_normal(shape[:-1]))
    data = 0.5 * np.tril(x, -1) + diag[..., None] * np.eye(n)
    return backend_module().asarray(data, "real")


def random_mvn(batch_shape, dim: int, diag: bool = False):
    """A random multivariate normal of batch shape ``batch_shape`` and event size ``dim``: as
    funsor's helper, the backend's distribution object where it has a library of them
    (``torch.distributions``; numpyro's on jax, if installed), else (numpy) a
    ``MultivariateNormal`` funsor built under ``reflect`` with batch output shape
    ``batch_shape`` and event ``Reals[dim]``. ``diag=True``: a diagonal covariance.

    Example:
        >>> d = random_mvn((2,), 3)
        >>> type(d).__name__, d.inputs
        ('MultivariateNormal', {'value': Reals[2, 3]})
    """
    batch_shape = tuple(batch_shape)
    loc = randn(batch_shape + (dim,))
    scale_tril = random_scale_tril(batch_shape + (dim, dim))
    if diag:
        scale_tril = ops.diag_embed(ops.diagonal(scale_tril, -2, -1))
    library = getattr(backend_module(), "distributions", None)
    try:
        library = library and library()
    except ImportError:  # jax without numpyro
        library = None
    if library is not None:
        return library.MultivariateNormal(loc, scale_tril=scale_tril)
    loc, scale_tril = Tensor(loc), Tensor(scale_tril)
    with reflect:
        return MultivariateNormal(loc, scale_tril)


# ---------------------------------------------------------------------------------------------
# Einsum examples, with funsor's return conventions (its tests unpack them).
def make_einsum_example(equation: str, fill=None, sizes=(2, 3)):
    """Random operands for an einsum ``equation`` such as ``"ab,bc->ac"``.

    The distinct letters, in sorted order, take their sizes from ``sizes`` in turn. Returns
    ``(inputs, outputs, sizes, operands, funsor_operands)``: the input index strings, the list
    of output strings (one, unless the equation names several after ``->``, separated by
    commas), a dict letter -> size, arrays on the active backend (every entry ``fill`` if
    given, else standard normal), and the same arrays as Tensors whose inputs are named by the
    letters. A torch operand also carries its letters as ``_pyro_dims``, which Pyro's
    ``pyro.ops.contract.einsum`` reads.

    Example:
        >>> inputs, outputs, sizes, operands, fs = make_einsum_example("ab,bc->ac")
        >>> inputs, outputs, sizes, operands[1].shape, fs[1].inputs
        (['ab', 'bc'], ['ac'], {'a': 2, 'b': 3, 'c': 2}, (3, 2), {'b': Bint[3], 'c': Bint[2]})
    """
    if "->" not in equation:
        raise ValueError(f"einsum example {equation!r} needs an explicit output: write e.g. "
                         "'ab,bc->ac'")
    lhs, rhs = equation.split("->")
    inputs, outputs = lhs.split(","), rhs.split(",")
    letters = sorted(set(lhs + rhs) - set(","))
    size_of = {c: sizes[k % len(sizes)] for k, c in enumerate(letters)}
    operands, funsor_operands = [], []
    for dims in inputs:
        shape = tuple(size_of[c] for c in dims)
        data = randn(shape) if fill is None else ones(shape) * fill
        if backend_of(data).PYRO_EINSUM_DIMS:
            data._pyro_dims = dims  # Pyro's einsum names the dims of its operands this way
        operands.append(data)
        funsor_operands.append(Tensor(data, {c: Bint[size_of[c]] for c in dims}))
    return inputs, outputs, size_of, operands, funsor_operands


def _symbols(count: int, start: int = 0) -> list:
    # opt_einsum's symbols: a-z, A-Z, then non-ASCII characters, so equations of any length
    # can be written (our einsum re-letters each pairwise step for the backends).
    return [opt_einsum.get_symbol(k) for k in range(start, start + count)]


def make_chain_einsum(num_steps: int) -> str:
    """The einsum equation of a Markov chain of ``num_steps`` steps, reduced to a scalar: an
    initial factor over the first state, then one pairwise factor per step.

    Example:
        >>> make_chain_einsum(2)
        'a,ab,bc->'
    """
    s = _symbols(num_steps + 1)
    return ",".join([s[0]] + [s[t] + s[t + 1] for t in range(num_steps)]) + "->"


def make_hmm_einsum(num_steps: int) -> str:
    """The einsum equation of a hidden Markov model of ``num_steps`` steps, reduced to a
    scalar: the chain of ``make_chain_einsum`` plus one observation factor per new state.

    Example:
        >>> make_hmm_einsum(2)
        'a,ab,b,bc,c->'
    """
    s = _symbols(num_steps + 1)
    terms = [s[0]]
    for t in range(num_steps):
        terms += [s[t] + s[t + 1], s[t + 1]]
    return ",".join(terms) + "->"


def make_plated_hmm_einsum(num_steps: int, num_obs_plates: int = 1,
                           num_hidden_plates: int = 0) -> tuple:
    """A plated HMM as ``(equation, plates)``: the chain's transition factors lie in
    ``num_hidden_plates`` plates, its observation factors in ``num_obs_plates`` plates (the
    hidden plates among them). Plate letters come first in the alphabet, state letters after.

    Example:
        >>> make_plated_hmm_einsum(2, num_obs_plates=1)
        ('c,cd,da,de,ea->', 'a')
    """
    if num_obs_plates < num_hidden_plates:
        raise ValueError(f"the hidden plates ({num_hidden_plates}) must be among the "
                         f"observation plates ({num_obs_plates})")
    obs = "".join(_symbols(num_obs_plates))
    hidden = "".join(_symbols(num_hidden_plates))
    s = _symbols(num_steps + 1, start=num_obs_plates + 1)
    terms = [s[0]]
    for t in range(num_steps):
        terms += [s[t] + s[t + 1] + hidden, s[t + 1] + obs]
    return ",".join(terms) + "->", "".join(sorted(set(obs + hidden)))


# ---------------------------------------------------------------------------------------------
# funsor 0.4.8's test plumbing, for test files written against ``funsor.testing``. pytest is
# imported when a helper that needs it is called: funsor-core does not depend on it.
def assert_equiv(x: Funsor, y: Funsor) -> None:
    """Assert that ``x`` has ``y``'s inputs (in any order), output and values.

    Example:
        >>> f = random_tensor({"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> assert_equiv(f.align(("j", "i")), f)
    """
    check_funsor(x, y.inputs, y.output, y.data)


def empty(*shape) -> Any:
    """An array of ``shape`` of the active backend whose values are not to be read (zeros).

    Example:
        >>> empty(2, 3).shape
        (2, 3)
    """
    return zeros(*shape)


def id_from_inputs(inputs) -> str:
    """A short pytest id for a mapping (or pairs) of inputs: each name and its shape.

    Example:
        >>> id_from_inputs({"i": fc.Bint[2], "x": fc.Reals[3]}), id_from_inputs({})
        ('i,x3', '()')
    """
    items = list(inputs.items() if hasattr(inputs, "items") else inputs)
    if not items:
        return "()"
    return ",".join(name + "".join(map(str, domain.shape)) for name, domain in items)


def iter_subsets(iterable, *, min_size: int | None = None, max_size: int | None = None):
    """Every subset of ``iterable`` as a tuple, smallest first, sizes ``min_size`` to
    ``max_size`` (default: all).

    Example:
        >>> list(iter_subsets("ab"))
        [(), ('a',), ('b',), ('a', 'b')]
    """
    items = tuple(iterable)
    low = 0 if min_size is None else min_size
    high = len(items) if max_size is None else max_size
    for size in range(low, high + 1):
        yield from itertools.combinations(items, size)


class ActualExpected(namedtuple("ActualExpected", ["actual", "expected"])):
    """A pair whose repr shows the expected value, then the actual one (an assertion message
    formatted only when it fails).

    Example:
        >>> print(repr(ActualExpected(1, 2)))
        Expected:
        2
        Actual:
        1
    """

    def __repr__(self) -> str:
        return f"Expected:\n{self.expected}\nActual:\n{self.actual}"


class DesugarGetitem:
    """``desugar_getitem[...]`` returns the index it is given, as a tuple when it is one.

    Example:
        >>> desugar_getitem[1:3, ..., None]
        (slice(1, 3, None), Ellipsis, None)
    """

    def __getitem__(self, index):
        return index


desugar_getitem = DesugarGetitem()


def requires_backend(*backends: str, reason: str | None = None):
    """A pytest mark that skips a test unless the active backend is one of ``backends``.

    Example:
        >>> mark = requires_backend("torch", "jax")  # numpy is active: skip
        >>> mark.args, mark.kwargs["reason"]
        ((True,), 'needs backend torch or jax')
    """
    import pytest

    from funsor_core.engine.backend import get_backend
    return pytest.mark.skipif(get_backend() not in backends,
                              reason=reason or f"needs backend {' or '.join(backends)}")


def excludes_backend(*backends: str, reason: str | None = None):
    """A pytest mark that skips a test when the active backend is one of ``backends``.

    Example:
        >>> mark = excludes_backend("numpy")  # numpy is active: skip
        >>> mark.args, mark.kwargs["reason"]
        ((True,), 'not for backend numpy')
    """
    import pytest

    from funsor_core.engine.backend import get_backend
    return pytest.mark.skipif(get_backend() in backends,
                              reason=reason or f"not for backend {' or '.join(backends)}")


def xfail_param(*args, **kwargs):
    """``pytest.param(*args)`` marked ``xfail(**kwargs)``, for a parametrize list.

    Example:
        >>> p = xfail_param("torch", 3, reason="no kernel")
        >>> p.values, p.marks[0].name, p.marks[0].kwargs
        (('torch', 3), 'xfail', {'reason': 'no kernel'})
    """
    import pytest
    return pytest.param(*args, marks=[pytest.mark.xfail(**kwargs)])


@contextlib.contextmanager
def xfail_if_not_implemented(msg: str = "Not implemented", *, match: str | None = None):
    """Turn a ``NotImplementedError`` raised in the block (whose text contains ``match``, when
    given) into pytest's xfail.

    Example:
        >>> import pytest
        >>> try:
        ...     with xfail_if_not_implemented("lazy", match="rule"):
        ...         raise NotImplementedError("no rule")
        ... except pytest.xfail.Exception as e:
        ...     print(e)
        lazy: no rule
    """
    try:
        yield
    except NotImplementedError as e:
        if match is not None and match not in str(e):
            raise
        import pytest
        pytest.xfail(reason=f"{msg}: {e}")


@contextlib.contextmanager
def xfail_if_not_found(msg: str = "Not implemented"):
    """Turn an ``AttributeError`` raised in the block into pytest's xfail.

    Example:
        >>> import pytest
        >>> try:
        ...     with xfail_if_not_found("no such method"):
        ...         fc.Number(1.0).no_such_method()
        ... except pytest.xfail.Exception as e:
        ...     print(str(e).split(":")[0])
        no such method
    """
    try:
        yield
    except AttributeError as e:
        import pytest
        pytest.xfail(reason=f"{msg}: {e}")
