"""A Gaussian's user-given parameters: conversion of one location (``white_vec=``,
``info_vec=``, ``mean=``) and one scale (``prec_sqrt=``, ``precision=``, ``covariance=``,
``scale_tril=``) to the square-root form, with checks of their values that name the
parameter. ``Gaussian``'s constructor (``funsor_core.atoms.gaussian.atom``) calls
``canonical_checked``.

Example:
    >>> w, s = canonical_checked({"mean": np.ones(1), "covariance": np.array([[4.0]])})
    >>> w, s
    (array([0.5]), array([[0.5]]))
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.tensor import Tensor, is_array
from funsor_core.engine.backend import backend_module, backend_name_of, backend_of
from funsor_core.engine.floats import float_info

__all__ = ["as_array", "canonical_checked", "widened", "one_backend"]

_NO_PREC = ("Gaussian needs a precision: give prec_sqrt=, precision=, covariance= or "
            "scale_tril=, e.g. Gaussian(mean=m, covariance=c, inputs={'x': Reals[2]})")
_NO_LOC = ("Gaussian needs a location: give white_vec= (with prec_sqrt=), info_vec= (with "
           "precision=) or mean= (with covariance=, scale_tril= or precision=)")


def as_array(x, name: str, backend: str | None = None):
    """``x`` as an array of ``backend`` (default: the active one): an array or None as it
    is, a Tensor without inputs as its data, anything else converted, or a TypeError that
    names the parameter.

    Example:
        >>> as_array([1, 2], "mean"), as_array(fc.Tensor(np.ones(2)), "mean")
        (array([1., 2.]), array([1., 1.]))
        >>> as_array(object(), "mean")
        Traceback (most recent call last):
        ...
        TypeError: Gaussian mean= must be an array, got object
    """
    if x is None or is_array(x):
        return x
    if isinstance(x, Tensor) and not x.inputs:
        return x.data
    try:
        return backend_module(backend).asarray(x, "real")
    except Exception as e:
        raise TypeError(f"Gaussian {name}= must be an array, got {type(x).__name__}") from e


NOT_REAL = ("Gaussian {name}= must hold real numbers (a floating or integer array), got "
            "dtype {dtype}; booleans, complex numbers and strings have no Gaussian meaning. "
            "Cast it first, e.g. {name}=x.astype(float) for 0/1 values.")
# Floating array dtypes seen (32 bits or more), so the check is one set lookup (integer arrays
# are promoted).
REAL_DTYPES: set = set()


def check_real_dtypes(named: dict) -> None:
    """TypeError naming the first parameter whose array is not real (bool, complex, str).

    Example:
        >>> check_real_dtypes({"white_vec": np.array([True])})
        Traceback (most recent call last):
        ...
        TypeError: Gaussian white_vec= must hold real numbers (a floating or integer array), ...
    """
    for name, x in named.items():
        dtype = x.dtype
        if dtype in REAL_DTYPES:
            continue
        text = str(dtype)
        if ops.is_floating(x):
            continue  # (a float narrower than 32 bits is widened: ``promote_integers``)
        if "int" not in text or "complex" in text:
            raise TypeError(NOT_REAL.format(name=name, dtype=text))


def widened(x):
    """``x``, or ``x`` in float32 where it holds floats narrower than 32 bits (float16,
    bfloat16): a Gaussian's QR factorizations, triangular solves and rank decisions need
    float32's digits, and no backend has them in 16 bits. Integer arrays and wider floats
    are returned as they are; dtypes are static, so the same under ``jax.jit``.

    Example:
        >>> widened(np.ones(2, np.float16)).dtype
        dtype('float32')
    """
    dtype = x.dtype
    if dtype in REAL_DTYPES or not ops.is_floating(x):
        return x
    if float_info(dtype).bits >= 32:
        REAL_DTYPES.add(dtype)
        return x
    return backend_of(x).as_float32(x)


def promote_integers(named: dict) -> dict:
    """Integer arrays as floats, as numpy's linear algebra takes them (torch's ``cholesky``
    and ``qr`` refuse a ``Long`` tensor deep inside): one rule on every backend. An integer
    array takes the float dtype of a floating parameter beside it (torch promotes an int
    tensor times a float scalar tensor so), else the backend's default float; a float
    narrower than 32 bits is ``widened`` to float32.

    Example:
        >>> promote_integers({"covariance": np.eye(2, dtype=int)})["covariance"].dtype
        dtype('float64')
    """
    if all(x.dtype in REAL_DTYPES for x in named.values()):
        return named
    proto = next((x for x in named.values() if x.dtype in REAL_DTYPES), None)
    one = None if proto is None else ops.new_full(proto, (), 1.0)
    return {n: x if x.dtype in REAL_DTYPES else widened(x) if ops.is_floating(x) else
            ops.astype(x, "real") if one is None else ops.mul(x, one) for n, x in named.items()}


MIXED_PARAMETERS = (
    "Gaussian parameters hold arrays of two backends: {found}. One term must use one backend, "
    "and nothing is converted silently (that would drop autograd); convert one first, e.g. "
    "torch.as_tensor(mean) or np.asarray(covariance)."
)


def one_backend(named: dict) -> str | None:
    """The backend of the array parameters (None if none is an array); TypeError if mixed.

    Example:
        >>> one_backend({"mean": np.zeros(2), "covariance": None}), one_backend({"mean": None})
        ('numpy', None)
    """
    found: dict = {}
    for name, x in named.items():
        if isinstance(x, Tensor) and not x.inputs:
            x = x.data
        if x is not None and is_array(x):
            found.setdefault(backend_name_of(x), []).append(f"{name}=")
    if len(found) > 1:
        listed = " and ".join(f"{b} ({', '.join(n)})" for b, n in found.items())
        raise TypeError(MIXED_PARAMETERS.format(found=listed))
    return next(iter(found), None)


# -- checks of the values of user-given parameters -----------------------------------------------
NOT_FINITE = ("Gaussian {name}= has NaN or infinite entries{where}; every parameter must be "
              "finite (a point mass is a Delta, a flat direction is a missing row of prec_sqrt)")
NOT_POSITIVE_DEFINITE = (
    "Gaussian {name}= is not positive definite{where}: its Cholesky factorization fails (it "
    "is singular, indefinite, not symmetric, or a pivot is within roundoff of zero at its "
    "dtype). Pass a symmetric positive definite matrix, e.g. add a small multiple of the "
    "identity; a density that is flat along some direction is written with white_vec= and a "
    "prec_sqrt= of fewer columns than rows."
)
SINGULAR_SCALE_TRIL = (
    "Gaussian scale_tril= is singular{where}: its diagonal must be nonzero (a zero scale is a "
    "point mass, which is a Delta, not a Gaussian)"
)


NOT_SYMMETRIC = (
    "Gaussian {name}= is not symmetric{where}: |{name}[{i}, {j}] - {name}[{j}, {i}]| = {asym:.3g} "
    "while its largest entry is {scale:.3g}. A covariance or precision matrix is symmetric; "
    "pass (m + m.T) / 2 if the asymmetry is roundoff, or check which triangle is right "
    "(funsor 0.4.8 silently uses the lower one)."
)
# Asymmetry allowed, in units of dim * eps * max|entry|: roundoff of a matrix product such
# as L @ L.T (its two triangles summed in different orders), not a typo.
SYMMETRY_RTOL = 1024.0


def _asymmetry(x):
    """``(asym, scale)`` per batch entry: ``max|x - x.T|`` and ``max|x|`` (backend arrays)."""
    diff = ops.abs(ops.sub(x, ops.transpose(x, -1, -2)))
    return ops.amax(diff, (-2, -1)), ops.amax(ops.abs(x), (-2, -1))


def _symmetry_tolerance(x) -> float:
    eps = {2: 2.0 ** -10, 4: 2.0 ** -23}.get(x.dtype.itemsize, 2.0 ** -52)
    return SYMMETRY_RTOL * max(x.shape[-1], 1) * eps


def _check_symmetric(name: str, x):
    """Raise NOT_SYMMETRIC for a concrete matrix whose triangles differ beyond roundoff.

    Returns None, or (under jax tracing, where values cannot be read) the traced batch
    booleans of the entries that are not symmetric, for ``_check_factor`` to make NaN.
    """
    if type(x) is np.ndarray:
        host = x
    elif ops.is_concrete(x):
        host = ops.to_numpy(x)  # detached
    else:
        asym, scale = _asymmetry(ops.detach(x))
        return ops.gt(asym, ops.mul(scale, _symmetry_tolerance(x)))
    if (host == host.swapaxes(-1, -2)).all():  # exactly symmetric: the common case
        return None
    tol = _symmetry_tolerance(x)
    diff = np.abs(host - np.swapaxes(host, -1, -2)).max((-2, -1))
    scale = np.abs(host).max((-2, -1))
    bad = diff > tol * scale
    if bad.any():
        flat = int(np.argmax(np.reshape(bad, -1)))
        entry = host.reshape((-1,) + host.shape[-2:])[flat]
        i, j = np.unravel_index(int(np.argmax(np.abs(entry - entry.T))), entry.shape)
        i, j = (int(i), int(j)) if i > j else (int(j), int(i))
        raise ValueError(NOT_SYMMETRIC.format(
            name=name, where=_batch_where(bad), i=i, j=j,
            asym=float(np.reshape(diff, -1)[flat]), scale=float(np.reshape(scale, -1)[flat])))
    return None


NOT_LOWER = (
    "Gaussian scale_tril= is not lower triangular{where}: scale_tril[{i}, {j}] = {value:.3g} "
    "lies above the diagonal, and a lower Cholesky factor L (covariance = L @ L.T) would "
    "ignore it. Pass np.tril(m), or covariance=m @ m.T if m is a full square root.")


def _check_lower(x):
    """Raise NOT_LOWER for a concrete ``scale_tril`` with nonzero entries above the diagonal.

    Returns None, or (traced) the batch booleans of such entries, for ``_check_factor``.
    """
    if not ops.is_concrete(x):
        return ops.gt(ops.amax(ops.abs(ops.triu(ops.detach(x), 1)), (-2, -1)), 0.0)
    host = ops.to_numpy(x)
    upper = np.triu(host, 1)
    if not upper.any():
        return None
    bad = upper.any((-2, -1))
    entry = upper.reshape((-1,) + upper.shape[-2:])[int(np.argmax(np.reshape(bad, -1)))]
    i, j = np.unravel_index(int(np.argmax(np.abs(entry))), entry.shape)
    raise ValueError(NOT_LOWER.format(where=_batch_where(bad), i=int(i), j=int(j),
                                      value=float(entry[i, j])))


def _batch_where(bad) -> str:
    # " (at batch index (1, 0))" for the first offending batch entry, "" for unbatched arrays.
    bad = np.asarray(bad)
    if not bad.ndim:
        return ""
    return f" (at batch index {tuple(int(i) for i in np.argwhere(bad)[0])})"


def _nonfinite(x, event_ndim: int):
    """Per batch entry: whether any entry is NaN or infinite (an array of the backend)."""
    bad = ops.invert(ops.isfinite(x))
    axes = tuple(range(-event_ndim, 0))
    return ops.any(bad, axis=axes) if axes else bad


def _pivots_lost(scale: str, matrix, prec_sqrt):
    """Per batch entry: whether a Cholesky pivot of ``matrix`` is within roundoff of zero.

    Cholesky's backward error is ``|dM| <~ dim * eps * max diag(M)``; a pivot ``d_k^2`` below
    ``eps * max diag(M)`` (the bound without its ``dim`` factor, so that matrices torch and jax
    factorize at that dtype keep working) is indistinguishable from a singular matrix:
    the factorization then succeeds or fails by the rounding of ``M`` (numpy factorizes
    float32 in float64 and succeeds where torch and jax fail), and a success gives a finite
    number where the density is flat (a precision ``A A'`` with ``A`` tall and thin). The
    factor's diagonal gives the pivots: ``d_k`` for ``precision = L L'`` (``prec_sqrt = L``),
    ``1 / d_k`` for ``covariance = L L'`` (``prec_sqrt = L^{-T}``). Arrays of the backend
    (traced under ``jax.jit``), or numpy arrays for numpy input.
    """
    eps = {2: 2.0 ** -10, 4: 2.0 ** -23}.get(matrix.dtype.itemsize, 2.0 ** -52)
    d = ops.abs(ops.diagonal(prec_sqrt))
    piv = ops.mul(d, d)
    if scale == "covariance":
        piv = ops.reciprocal(piv)
    bound = ops.mul(ops.amax(ops.abs(ops.diagonal(matrix)), -1), eps)
    return ops.le(ops.amin(piv, -1), bound)


def _host_pivots_lost(scale: str, matrix: np.ndarray, prec_sqrt: np.ndarray) -> np.ndarray:
    """``_pivots_lost`` of numpy arrays, in plain numpy (a Gaussian build is ~70 us)."""
    eps = {2: 2.0 ** -10, 4: 2.0 ** -23}.get(matrix.dtype.itemsize, 2.0 ** -52)
    piv = np.square(np.diagonal(prec_sqrt, 0, -2, -1))
    if scale == "covariance":
        with np.errstate(divide="ignore"):
            piv = 1.0 / piv
    # (initial values: a Gaussian of no real coordinates, dim 0, loses no pivot)
    bound = np.abs(np.diagonal(matrix, 0, -2, -1)).max(-1, initial=0.0) * eps
    return np.asarray(piv.min(-1, initial=np.inf) <= bound)


def _check_factor(scale: str, white_vec, prec_sqrt, asymmetric=None):
    """Check the square-root form computed from finite user parameters.

    A non-finite factor means the matrix could not be factorized (jax's Cholesky answers NaN
    where numpy and torch raise). Concrete arrays raise ValueError naming ``scale``. Traced
    (jax.jit) values cannot be read: there, the batch entries whose factor is not finite,
    or whose matrix was not symmetric (``asymmetric``, traced booleans), become NaN
    throughout, so a bad parameter can only ever give NaN, never a wrong number.
    """
    if asymmetric is None and all(ops.is_concrete(x) and np.isfinite(ops.to_numpy(x)).all()
                                  for x in (prec_sqrt, white_vec)):
        return white_vec, prec_sqrt  # the common case, read on the host in one call each
    bad = ops.or_(_nonfinite(prec_sqrt, 2), _nonfinite(white_vec, 1))
    if asymmetric is not None:
        bad = ops.or_(bad, asymmetric)
    if ops.is_concrete(bad):
        bad = ops.to_numpy(bad)
        if bad.any():
            message = SINGULAR_SCALE_TRIL if scale == "scale_tril" else NOT_POSITIVE_DEFINITE
            raise ValueError(message.format(name=scale, where=_batch_where(bad)))
        return white_vec, prec_sqrt
    white_vec = ops.where(bad[..., None], ops.full_like(white_vec, float("nan")), white_vec)
    prec_sqrt = ops.where(bad[..., None, None], ops.full_like(prec_sqrt, float("nan")),
                          prec_sqrt)
    return white_vec, prec_sqrt


_SYMMETRIC = ("covariance", "precision")
_EVENT_NDIM = {"info_vec": 1, "mean": 1, "precision": 2, "covariance": 2, "scale_tril": 2}


_LOCATIONS = ("white_vec", "info_vec", "mean")
_SCALES = ("prec_sqrt", "precision", "covariance", "scale_tril")


def _to_canonical(named: dict):
    """Convert one location and one scale parameter to ``(white_vec, prec_sqrt)``.

    Any location (``info_vec``, ``mean``) goes with any scale (``prec_sqrt``, ``precision``,
    ``covariance``, ``scale_tril``), as in funsor 0.4.8; ``white_vec`` is a coordinate in the
    columns of one particular factor, so it goes with ``prec_sqrt`` only.
    """
    locs = [n for n in _LOCATIONS if n in named]
    scales = [n for n in _SCALES if n in named]
    if not scales:
        raise ValueError(_NO_PREC)
    if not locs:
        raise ValueError(_NO_LOC)
    if len(locs) > 1 or len(scales) > 1:
        raise ValueError("Gaussian takes one location (white_vec=, info_vec= or mean=) and one "
                         f"scale (prec_sqrt=, precision=, covariance= or scale_tril=), got "
                         f"{sorted(named)}")
    (loc, scale), value = (locs[0], scales[0]), named[locs[0]]
    if loc == "white_vec" and scale != "prec_sqrt":
        raise ValueError(f"white_vec= goes with prec_sqrt= only (it is a coordinate in that "
                         f"factor's columns), got {scale}=; use info_vec= or mean= instead")
    if scale == "prec_sqrt":
        prec_sqrt = named["prec_sqrt"]
        if loc == "white_vec":
            return value, prec_sqrt
        return la.from_loc_prec_sqrt(loc, value, prec_sqrt)
    if loc == "info_vec":
        return la.from_info_scale(value, scale, named[scale])
    if scale == "covariance":
        return gm.from_mean_covariance(value, named[scale])
    if scale == "scale_tril":
        return gm.from_mean_scale_tril(value, named[scale])
    return gm.from_mean_precision(value, named[scale])


def _check_event_shapes(named: dict) -> None:
    # A location of dim n needs an (n, n) scale; a mismatch failed inside a matmul or a
    # solve. Shapes are static, so this holds under jax.jit too.
    loc = next((n for n in _LOCATIONS if n in named), None)
    scale = next((n for n in _SCALES if n in named), None)
    if loc is None or scale is None:
        return
    v, m = tuple(np.shape(named[loc])), tuple(np.shape(named[scale]))
    n = v[-1] if v else None
    if n is None:
        raise ValueError(f"Gaussian: {loc}= must end in the dim of the real inputs (shape "
                         f"(..., dim), e.g. (1,) for one Real), got shape {v}")
    if len(m) < 2 or m[-2:] != (n, n):
        raise ValueError(f"Gaussian: {loc}= of shape {v} (dim {n}) needs {scale}= of shape "
                         f"(..., {n}, {n}), got {m}")


def canonical_checked(named: dict):
    """``_to_canonical`` of user-given parameters, with errors that name the parameter:
    ``(white_vec, prec_sqrt)`` with ``prec_sqrt @ prec_sqrt.T`` the precision and
    ``white_vec = prec_sqrt.T @ mean``.

    Example:
        >>> mean, cov = np.array([1.0, 2.0]), np.array([[4.0, 1.0], [1.0, 2.0]])
        >>> w, s = canonical_checked({"mean": mean, "covariance": cov})
        >>> np.allclose(s @ s.T, np.linalg.inv(cov)), np.allclose(w, s.T @ mean)
        (True, True)
        >>> canonical_checked({"mean": mean, "covariance": np.ones((2, 2))})
        Traceback (most recent call last):
        ...
        ValueError: Gaussian covariance= is not positive definite: ...
    """
    if "prec_sqrt" in named:
        return _to_canonical(named)  # already a square-root factor: nothing to factorize
    _check_event_shapes(named)
    scale = next((n for n in ("covariance", "precision", "scale_tril") if n in named), None)
    checked = {n: x for n, x in named.items() if n in _EVENT_NDIM}
    concrete = all(ops.is_concrete(x) for x in checked.values())
    if concrete:  # NaN first: a factorization of NaN entries reports the wrong problem
        for name, x in checked.items():
            # On the host: under jax.grad inside jax.jit even an op on a concrete array
            # (detach included) gives a tracer, whose values cannot be read.
            host = ops.to_numpy(x)
            if not np.isfinite(host).all():  # where, per batch entry, only to say so
                bad = _nonfinite(host, _EVENT_NDIM[name])
                raise ValueError(NOT_FINITE.format(name=name, where=_batch_where(bad)))
    # Cholesky reads one triangle: an asymmetric matrix would be taken for another one.
    asymmetric = _check_symmetric(scale, named[scale]) if scale in _SYMMETRIC else None
    if scale == "scale_tril":  # Cholesky-based algebra reads its lower triangle only
        asymmetric = _check_lower(named[scale])
    try:
        white_vec, prec_sqrt = _to_canonical(named)
    except Exception as e:  # numpy's LinAlgError, torch's _LinAlgError (a RuntimeError)
        if scale is None or "LinAlgError" not in type(e).__name__:
            raise
        message = SINGULAR_SCALE_TRIL if scale == "scale_tril" else NOT_POSITIVE_DEFINITE
        raise ValueError(message.format(name=scale, where="")) from e
    if scale in _SYMMETRIC:
        matrix = named[scale]
        if type(matrix) is np.ndarray and type(prec_sqrt) is np.ndarray:
            lost = _host_pivots_lost(scale, matrix, prec_sqrt)  # numpy: no dispatch cost
        else:
            lost = _pivots_lost(scale, ops.detach(matrix), ops.detach(prec_sqrt))
        if type(lost) is np.ndarray or ops.is_concrete(lost):
            lost = ops.to_numpy(lost)
            if lost.any():
                raise ValueError(NOT_POSITIVE_DEFINITE.format(name=scale,
                                                              where=_batch_where(lost)))
        else:
            asymmetric = lost if asymmetric is None else ops.or_(asymmetric, lost)
    return _check_factor(scale, white_vec, prec_sqrt, asymmetric)
