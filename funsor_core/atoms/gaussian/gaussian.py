"""The Gaussian atom: a batched quadratic log density over named real inputs.

``Gaussian(white_vec=, prec_sqrt=, inputs=)`` stands for::

    f(x) = -0.5 * || x @ prec_sqrt - white_vec ||^2

where ``x`` is the concatenation (in input order) of every real input flattened, ``prec_sqrt``
has shape ``batch + (dim, rank)`` and ``white_vec`` ``batch + (rank,)``; ``batch`` lists the
sizes of the Bint inputs in order (as in ``Tensor``). This is funsor 0.4.8's convention: the
density is not normalized, ``max_x f(x) = 0`` when consistent, and ``rank`` may differ from
``dim``. This module holds the atom and its layout helpers (alignment by name); the algebra
on funsors is ``algebra``, on arrays ``arrays``; sampling is
``funsor_core.atoms.sampling``; the rules live in ``interpretations/exact/gaussian.py``.

Example:
    >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2), inputs={"x": fc.Reals[2]})
    >>> g.inputs, g.output
    ({'x': Reals[2]}, Real)
    >>> round(float(g.log_normalizer.data), 6)  # log(2 pi)
    1.837877
"""

from __future__ import annotations

import functools
import math
from contextlib import contextmanager

from funsor_core import ops
from funsor_core.atoms.gaussian import arrays as gm
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian.linalg import BlockMatrix, BlockVector
from funsor_core.atoms.tensor import Tensor, align_tensor, is_array
from funsor_core.domains import Domain, Real, broadcast_shape
from funsor_core.engine.backend import backend_module, backend_name_of
from funsor_core.terms.base import DomainError, Funsor

__all__ = ["Gaussian", "BlockMatrix", "BlockVector", "align_gaussian", "real_offsets",
           "gaussian_batch_inputs", "COMPRESSION_THRESHOLD", "gaussian_layout"]

# A sum of Gaussians is compressed (QR) once its rank exceeds this multiple of its dim, as in
# funsor 0.4.8: cheap concatenation most of the time, bounded memory always.
COMPRESSION_THRESHOLD = 2

_NO_PREC = ("Gaussian needs a precision: give prec_sqrt=, precision=, covariance= or "
            "scale_tril=, e.g. Gaussian(mean=m, covariance=c, inputs={'x': Reals[2]})")
_NO_LOC = ("Gaussian needs a location: give white_vec= (with prec_sqrt=), info_vec= (with "
           "precision=) or mean= (with covariance=, scale_tril= or precision=)")


def real_offsets(inputs: dict) -> tuple[dict, int]:
    """Offsets of the real inputs in the flattened vector ``x``, and its dim.

    Example:
        >>> real_offsets({"i": fc.Bint[2], "x": fc.Real, "y": fc.Reals[2, 3]})
        ({'x': 0, 'y': 1}, 7)
    """
    offsets, dim = {}, 0
    for name, domain in inputs.items():
        if domain.dtype == "real":
            offsets[name] = dim
            dim += domain.num_elements
    return offsets, dim


@functools.lru_cache(maxsize=4096)
def gaussian_layout(ikey: tuple) -> tuple[tuple, dict, int]:
    """``(batch items, real offsets, dim)`` of a Gaussian's input items, cached.

    Rules call this on ``g._ikey`` instead of recomputing the layout per call; the dict is
    shared, so callers must not mutate it.

    Example:
        >>> gaussian_layout((("i", fc.Bint[2]), ("x", fc.Reals[3])))
        ((('i', Bint[2]),), {'x': 0}, 3)
    """
    offsets, dim = real_offsets(dict(ikey))
    return tuple((k, d) for k, d in ikey if d.dtype != "real"), offsets, dim


def gaussian_batch_inputs(inputs: dict) -> dict:
    """The Bint inputs of a Gaussian's inputs, in order (its batch dims).

    Example:
        >>> gaussian_batch_inputs({"x": fc.Real, "i": fc.Bint[2]})
        {'i': Bint[2]}
    """
    return {k: d for k, d in inputs.items() if d.dtype != "real"}


def _as_array(x, name: str, backend: str | None = None):
    if x is None or is_array(x):
        return x
    if isinstance(x, Tensor) and not x.inputs:
        return x.data
    try:
        return backend_module(backend).asarray(x, "real")
    except Exception as e:
        raise TypeError(f"Gaussian {name}= must be an array, got {type(x).__name__}") from e


MIXED_PARAMETERS = (
    "Gaussian parameters hold arrays of two backends: {found}. One term must use one backend, "
    "and nothing is converted silently (that would drop autograd); convert one first, e.g. "
    "torch.as_tensor(mean) or np.asarray(covariance)."
)


def _one_backend(named: dict) -> str | None:
    """The backend of the array parameters (None if none is an array); TypeError if mixed."""
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
    "is singular, indefinite or not symmetric). Pass a symmetric positive definite matrix, "
    "e.g. add a small multiple of the identity; a density that is flat along some direction "
    "is written with white_vec= and a prec_sqrt= of fewer columns than rows."
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
    import numpy as np

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


def _batch_where(bad) -> str:
    # " (at batch index (1, 0))" for the first offending batch entry, "" for unbatched arrays.
    import numpy as np

    bad = np.asarray(bad)
    if not bad.ndim:
        return ""
    return f" (at batch index {tuple(int(i) for i in np.argwhere(bad)[0])})"


def _nonfinite(x, event_ndim: int):
    """Per batch entry: whether any entry is NaN or infinite (an array of the backend)."""
    bad = ops.invert(ops.isfinite(x))
    axes = tuple(range(-event_ndim, 0))
    return ops.any(bad, axis=axes) if axes else bad


def _check_factor(scale: str, white_vec, prec_sqrt, asymmetric=None):
    """Check the square-root form computed from finite user parameters.

    A non-finite factor means the matrix could not be factorized (jax's Cholesky answers NaN
    where numpy and torch raise). Concrete arrays raise ValueError naming ``scale``. Traced
    (jax.jit) values cannot be read: there, the batch entries whose factor is not finite,
    or whose matrix was not symmetric (``asymmetric``, traced booleans), become NaN
    throughout, so a bad parameter can only ever give NaN, never a wrong number.
    """
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


def _canonical_checked(named: dict):
    """``_to_canonical`` of user-given parameters, with errors that name the parameter."""
    if "prec_sqrt" in named:
        return _to_canonical(named)  # already a square-root factor: nothing to factorize
    scale = next((n for n in ("covariance", "precision", "scale_tril") if n in named), None)
    checked = {n: x for n, x in named.items() if n in _EVENT_NDIM}
    concrete = all(ops.is_concrete(x) for x in checked.values())
    if concrete:  # NaN first: a factorization of NaN entries reports the wrong problem
        for name, x in checked.items():
            # On the host: under jax.grad inside jax.jit even an op on a concrete array
            # (detach included) gives a tracer, whose values cannot be read.
            bad = _nonfinite(ops.to_numpy(x), _EVENT_NDIM[name])
            if bad.any():
                raise ValueError(NOT_FINITE.format(name=name, where=_batch_where(bad)))
    # Cholesky reads one triangle: an asymmetric matrix would be taken for another one.
    asymmetric = _check_symmetric(scale, named[scale]) if scale in _SYMMETRIC else None
    try:
        white_vec, prec_sqrt = _to_canonical(named)
    except Exception as e:  # numpy's LinAlgError, torch's _LinAlgError (a RuntimeError)
        if scale is None or "LinAlgError" not in type(e).__name__:
            raise
        message = SINGULAR_SCALE_TRIL if scale == "scale_tril" else NOT_POSITIVE_DEFINITE
        raise ValueError(message.format(name=scale, where="")) from e
    return _check_factor(scale, white_vec, prec_sqrt, asymmetric)


def _check_inputs(inputs) -> tuple:
    if inputs is None:
        raise ValueError("Gaussian needs inputs=, e.g. {'x': Reals[2]} (Bint inputs are batch "
                         "dims, real inputs are the coordinates of the density)")
    items = tuple(inputs.items()) if isinstance(inputs, dict) else tuple(inputs)
    names = [k for k, _ in items]
    if len(set(names)) != len(names):
        raise DomainError(f"Gaussian inputs repeat a name: {names}")
    for name, domain in items:
        if not isinstance(name, str) or not isinstance(domain, Domain):
            raise TypeError(f"Gaussian inputs map names to domains, got {name!r}: {domain!r}")
        if domain.dtype != "real" and domain.shape:
            raise DomainError(f"Gaussian input '{name}' is {domain}; batch inputs must be "
                              "Bint[n] and coordinates Real or Reals[...]")
    return items


class Gaussian(Funsor):
    """A batched Gaussian log density in square-root information form.

    Args:
        white_vec: batch + (rank,); with ``prec_sqrt``: batch + (dim, rank).
        inputs: mapping of names to domains. Bint inputs are batch dims (leftmost dims of the
            arrays, in order); real inputs (``Real``, ``Reals[n]``, ``Reals[n, m]``) are
            flattened, in order, into the density's vector of ``dim`` coordinates.
        info_vec, precision: natural parameters instead (``-0.5 x'Px + i'x + const``).
        mean, covariance / scale_tril / precision: moments instead (``f(mean) = 0``).
            A ``precision`` or ``covariance`` must be symmetric: one whose triangles differ
            beyond roundoff raises ``ValueError`` (funsor 0.4.8 reads the lower triangle and
            ignores the other); under ``jax.jit``, where values cannot be read, such batch
            entries become NaN.

    Arrays whose batch dims have size 1 (or are missing on the left) are broadcast. Under
    ``exact``, a Gaussian of rank above ``COMPRESSION_THRESHOLD * dim`` is compressed and the
    constructor returns ``Gaussian + Tensor`` (the constant split off), as funsor 0.4.8 does;
    ``Gaussian.set_compression_threshold`` changes that multiple for a block of code.

    Example:
        >>> g = fc.Gaussian(info_vec=np.array([1.0]), precision=np.array([[2.0]]),
        ...                 inputs={"x": fc.Real})
        >>> g.info_vec, g.precision, g.mean
        (array([1.]), array([[2.]]), array([0.5]))
    """

    __slots__ = ("white_vec", "prec_sqrt", "_ikey")
    fields = ("white_vec", "prec_sqrt", "inputs")
    arrays = ("white_vec", "prec_sqrt")
    _atom = True
    sort_rank = 20
    # Ranks above compression_threshold * dim are compressed (see set_compression_threshold).
    compression_threshold = COMPRESSION_THRESHOLD

    @classmethod
    @contextmanager
    def set_compression_threshold(cls, threshold: float):
        """Within the block, compress a Gaussian once ``rank > threshold * dim``.

        Compression (a QR factorization) keeps memory bounded when many Gaussians are added
        (ranks concatenate), at the cost of a factorization; a large threshold defers it, a
        threshold of 1 keeps every Gaussian at most square. The old value is restored on exit,
        also when the block raises. The threshold is read when a Gaussian is built, so under
        ``jax.jit`` it applies at trace time.

        Example:
            >>> x = {"x": fc.Real}
            >>> g = fc.Gaussian(white_vec=np.ones(3), prec_sqrt=np.ones((1, 3)), inputs=x)
            >>> type(g).__name__  # rank 3 > 2 * dim: compressed, the constant split off
            'Contraction'
            >>> with fc.Gaussian.set_compression_threshold(5):
            ...     g = fc.Gaussian(white_vec=np.ones(3), prec_sqrt=np.ones((1, 3)), inputs=x)
            >>> type(g).__name__, g.rank, fc.Gaussian.compression_threshold
            ('Gaussian', 3, 2)
        """
        if not isinstance(threshold, (int, float)) or not threshold > 0:
            raise ValueError(f"compression threshold must be a positive number, got {threshold!r}")
        old = cls.compression_threshold
        cls.compression_threshold = threshold
        try:
            yield
        finally:
            cls.compression_threshold = old

    @classmethod
    def _prepare(cls, white_vec=None, prec_sqrt=None, inputs=None, *, info_vec=None,
                 precision=None, mean=None, covariance=None, scale_tril=None):
        if type(inputs) is tuple and is_array(white_vec) and is_array(prec_sqrt) and not (
                info_vec is not None or precision is not None or mean is not None
                or covariance is not None or scale_tril is not None):
            items = _check_inputs(inputs)  # the canonical form: just validate shapes
            if type(white_vec) is not type(prec_sqrt):
                _one_backend({"white_vec": white_vec, "prec_sqrt": prec_sqrt})
        else:
            items = _check_inputs(inputs)
            named = {"white_vec": white_vec, "prec_sqrt": prec_sqrt, "info_vec": info_vec,
                     "precision": precision, "mean": mean, "covariance": covariance,
                     "scale_tril": scale_tril}
            backend = _one_backend(named)
            named = {n: _as_array(a, n, backend) for n, a in named.items() if a is not None}
            white_vec, prec_sqrt = _canonical_checked(named)
        return _check_shapes(white_vec, prec_sqrt, items)

    @staticmethod
    def _cons_key(args):
        return (id(args[0]), id(args[1]), args[2])

    def _setup(self):
        self._ikey = inputs = self._args[2]
        self.inputs = dict(inputs)
        self.output = Real

    @classmethod
    def make(cls, white_vec, prec_sqrt, inputs: dict | None = None,
             ikey: tuple | None = None) -> Gaussian:
        """Build a Gaussian from arrays a rule just computed, skipping checks and rules.

        ``inputs`` as a dict, or ``ikey``: its items as a tuple (then no copy is made).
        """
        self = object.__new__(cls)
        self._init(white_vec, prec_sqrt, ikey if ikey is not None else tuple(inputs.items()))
        return self

    # -- structure -----------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Number of real coordinates (sum of the real inputs' sizes)."""
        return self.prec_sqrt.shape[-2]

    @property
    def rank(self) -> int:
        """Number of columns of ``prec_sqrt`` (rows of information)."""
        return self.prec_sqrt.shape[-1]

    @property
    def batch_inputs(self) -> dict:
        """The Bint inputs (batch dims), in order."""
        return dict(gaussian_layout(self._ikey)[0])

    @property
    def real_inputs(self) -> dict:
        """The real inputs (coordinates), in order."""
        return {k: d for k, d in self.inputs.items() if d.dtype == "real"}

    @property
    def is_full_rank(self) -> bool:
        """Whether ``rank >= dim`` (necessary, not sufficient, to normalize)."""
        return self.rank >= self.dim

    # -- derived quantities --------------------------------------------------------------------
    @property
    def info_vec(self):
        """``prec_sqrt @ white_vec``: batch + (dim,)."""
        return gm.to_info(self.white_vec, self.prec_sqrt)[0]

    @property
    def precision(self):
        """``prec_sqrt @ prec_sqrt.T``: batch + (dim, dim)."""
        return ops.matmul(self.prec_sqrt, ops.transpose(self.prec_sqrt, -1, -2))

    @property
    def log_normalizer(self) -> Tensor:
        """``log ∫ exp f(x) dx`` over all real inputs: a Tensor over the Bint inputs."""
        data = gm.log_normalizer(self.white_vec, self.prec_sqrt)
        return Tensor.make(data, self.batch_inputs)

    @property
    def mean(self):
        """The mean (= mode) of the normalized density: batch + (dim,); needs full rank."""
        return gm.mean(self.white_vec, self.prec_sqrt)

    @property
    def covariance(self):
        """The covariance ``precision^{-1}``: batch + (dim, dim); needs full rank."""
        return gm.covariance(self.prec_sqrt)

    @property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance: batch + (dim, dim); needs full rank."""
        la.require_full_rank(self.prec_sqrt, "a scale_tril")
        return la.inverse_cholesky(self.precision)

    # funsor 0.4.8 names these with a leading underscore; the same values under its names.
    _info_vec = info_vec
    _precision = precision
    _mean = mean
    _covariance = covariance
    _scale_tril = scale_tril


def _check_shapes(white_vec, prec_sqrt, items: tuple) -> tuple:
    inputs = dict(items)
    batch_inputs = gaussian_batch_inputs(inputs)
    batch = tuple(d.size for d in batch_inputs.values())
    _, dim = real_offsets(inputs)
    real = {k: str(d) for k, d in inputs.items() if d.dtype == "real"}
    ws, ps = tuple(white_vec.shape), tuple(prec_sqrt.shape)
    if len(ps) < 2 or ps[-2] != dim:
        raise DomainError(
            f"Gaussian prec_sqrt of shape {ps} must end in (dim, rank) with dim = {dim}, the "
            f"total size of the real inputs {real}")
    if len(ws) < 1 or ws[-1] != ps[-1]:
        raise DomainError(f"Gaussian white_vec of shape {ws} must end in rank = {ps[-1]} "
                          f"(the last dim of prec_sqrt, shape {ps})")
    for shape, what in ((ws[:-1], "white_vec"), (ps[:-2], "prec_sqrt")):
        try:
            ok = len(shape) <= len(batch) and broadcast_shape(shape, batch) == batch
        except ValueError:
            ok = False
        if not ok:
            raise DomainError(
                f"Gaussian {what} has batch shape {shape} but its Bint inputs "
                f"{ {k: str(d) for k, d in batch_inputs.items()} } need {batch} (size-1 dims "
                "broadcast)")
    if ws[:-1] != batch:
        white_vec = ops.expand(white_vec, batch + ws[-1:])
    if ps[:-2] != batch:
        prec_sqrt = ops.expand(prec_sqrt, batch + ps[-2:])
    return white_vec, prec_sqrt, items


# ---------------------------------------------------------------------------------------------
# Alignment by name: pure functions of arrays and input mappings.
def align_gaussian(new_inputs: dict, g: Gaussian, expand: bool = False):
    """``(white_vec, prec_sqrt)`` of ``g`` in the layout of ``new_inputs``.

    Batch dims follow the Bint inputs of ``new_inputs`` (size 1 where ``g`` lacks one, or
    expanded with ``expand``); coordinates follow its real inputs, with zero rows (no
    information) for real inputs ``g`` lacks.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> w, s = align_gaussian({"y": fc.Real, "x": fc.Real}, g)
        >>> s
        array([[0.],
               [1.]])
    """
    old_batch = g.batch_inputs
    new_batch = gaussian_batch_inputs(new_inputs)
    white_vec, prec_sqrt = g.white_vec, g.prec_sqrt
    if list(old_batch) != list(new_batch) or expand:
        white_vec = align_tensor(new_batch, Tensor.make(white_vec, old_batch), expand=expand)
        prec_sqrt = align_tensor(new_batch, Tensor.make(prec_sqrt, old_batch), expand=expand)
    old_offsets, old_dim = real_offsets(g.inputs)
    new_offsets, new_dim = real_offsets(new_inputs)
    if old_offsets != new_offsets or old_dim != new_dim:
        index = []
        for name in old_offsets:
            if name not in new_offsets:
                raise ValueError(f"cannot align: real input '{name}' is not in "
                                 f"{list(new_inputs)}")
            size = g.inputs[name].num_elements
            index.extend(range(new_offsets[name], new_offsets[name] + size))
        white_vec, prec_sqrt = gm.embed(white_vec, prec_sqrt, index, new_dim)
    return white_vec, prec_sqrt


def merge_gaussian_inputs(*terms: Funsor) -> dict:
    """Union of the inputs of several terms: Bint inputs first, then real ones, each in order.

    Example:
        >>> merge_gaussian_inputs(fc.Variable("x", fc.Real), fc.Variable("i", fc.Bint[2]))
        {'i': Bint[2], 'x': Real}
    """
    from funsor_core.terms.base import merge_inputs

    inputs: dict = {}
    for t in terms:
        inputs = merge_inputs(inputs, t.inputs, "add")
    batch = {k: d for k, d in inputs.items() if d.dtype != "real"}
    batch.update((k, d) for k, d in inputs.items() if d.dtype == "real")
    return batch


def batch_shape_of(inputs: dict) -> tuple:
    """Sizes of the Bint inputs, in order."""
    return tuple(d.size for d in inputs.values() if d.dtype != "real")


def common_batch(*arrays_and_event_ndims) -> tuple:
    """Broadcast batch shape of arrays given as ``(array, event_ndim)`` pairs."""
    return broadcast_shape(*(tuple(a.shape[: len(a.shape) - n]) for a, n in arrays_and_event_ndims))


LOG_2PI = math.log(2 * math.pi)
