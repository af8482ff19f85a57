"""The Gaussian atom: a batched quadratic log density over named real inputs.

``Gaussian(white_vec=, prec_sqrt=, inputs=)`` stands for::

    f(x) = -0.5 * || x @ prec_sqrt - white_vec ||^2

where ``x`` is the concatenation (in input order) of every real input flattened, ``prec_sqrt``
has shape ``batch + (dim, rank)`` and ``white_vec`` ``batch + (rank,)``; ``batch`` lists the
sizes of the Bint inputs in order (as in ``Tensor``). This is funsor 0.4.8's convention: the
density is not normalized, ``max_x f(x) = 0`` when consistent, and ``rank`` may differ from
``dim``. This module holds the atom and its layout helpers (alignment by name); the user's
parameters are converted and checked by ``parameters``; the algebra on funsors is
``algebra``, on arrays ``arrays``; sampling is
``funsor_core.sampling.draw``; the rules live in ``interpretations/exact/gaussian.py``.

Example:
    >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2), inputs={"x": fc.Reals[2]})
    >>> g.inputs, g.output
    ({'x': Reals[2]}, Real)
    >>> round(float(g.log_normalizer.data), 6)  # log(2 pi)
    1.837877
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from funsor_core import ops
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.linalg import BlockMatrix, BlockVector
from funsor_core.atoms.gaussian.parameters import (
    REAL_DTYPES,
    as_array,
    canonical_checked,
    check_real_dtypes,
    one_backend,
    promote_integers,
)
from funsor_core.atoms.tensor import Tensor, align_tensor, is_array
from funsor_core.domains import Domain, Real, broadcast_shape
from funsor_core.engine.cache import cached
from funsor_core.engine.interpreter import interpret
from funsor_core.engine.protocol import FunsorMeta
from funsor_core.terms.base import DomainError, Funsor

__all__ = ["Gaussian", "BlockMatrix", "BlockVector", "align_gaussian", "real_offsets",
           "gaussian_batch_inputs", "COMPRESSION_THRESHOLD", "gaussian_layout",
           "evaluate_unbatched"]

# A sum of Gaussians is compressed (QR) once its rank exceeds this multiple of its dim, as in
# funsor 0.4.8: cheap concatenation most of the time, bounded memory always.
COMPRESSION_THRESHOLD = 2

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


@cached("gaussian.layout", maxsize=4096, fast=True)
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


def _check_inputs(inputs) -> tuple:
    if inputs is None:
        raise ValueError("Gaussian needs inputs=, e.g. {'x': Reals[2]} (Bint inputs are batch "
                         "dims, real inputs are the coordinates of the density)")
    items = tuple(inputs.items()) if isinstance(inputs, dict) else tuple(inputs)
    try:
        return _checked_items(items)  # a structure seen before: checked once
    except TypeError:  # an unhashable entry: the checks below name it
        pass
    return _check_items(items)


@cached("gaussian.atom.checked_items", maxsize=1024, fast=True)
def _checked_items(items: tuple) -> tuple:
    return _check_items(items)


def _check_items(items: tuple) -> tuple:
    if not all(isinstance(item, tuple) and len(item) == 2 for item in items):
        raise TypeError(f"Gaussian inputs map names to domains, e.g. {{'x': Reals[2]}} or "
                        f"[('x', Reals[2])], got {items!r}")
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


class _GaussianMeta(FunsorMeta):
    """Builds a Gaussian as every term is built, and records on it what its construction
    shows of the structure of ``prec_sqrt`` (``Gaussian._triangular``)."""

    def __call__(cls, *args, **kwargs):
        args = cls._prepare(*args, **kwargs)
        result = interpret(cls, args)
        if (kwargs.get("scale_tril") is not None or kwargs.get("covariance") is not None) and (
                isinstance(result, Gaussian) and result.prec_sqrt is args[1]):
            # prec_sqrt = L^{-T}: a triangular solve that reads only the lower triangle of L
            # (torch, jax, scipy and our numpy kernel alike) gives an upper triangular factor.
            object.__setattr__(result, "_triangular", "upper")
        return result


class Gaussian(Funsor, metaclass=_GaussianMeta):
    """A batched Gaussian log density in square-root information form.

    Args:
        white_vec: batch + (rank,); with ``prec_sqrt``: batch + (dim, rank).
        inputs: mapping of names to domains. Bint inputs are batch dims (leftmost dims of the
            arrays, in order); real inputs (``Real``, ``Reals[n]``, ``Reals[n, m]``) are
            flattened, in order, into the density's vector of ``dim`` coordinates.
        info_vec, precision: natural parameters instead: ``-0.5 x'Px + i'x - 0.5 i'P^-1 i``,
            whose maximum is 0 (the square-root form keeps no other constant, as funsor
            0.4.8's does; add a Tensor for one).
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

    # _triangular: "upper" when prec_sqrt is known, from how it was built, to be square upper
    # triangular (from covariance= or scale_tril=); None when nothing is known. Not a field:
    # the same arrays are the same density either way, and terms built by rules have None.
    # _normalizer (unset unless known): the Tensor t built with it, -log ∫ exp g over all its
    # reals (a Normal's ``g + t``), so that g + t integrates to 1 by construction.
    __slots__ = ("white_vec", "prec_sqrt", "_ikey", "_triangular", "_normalizer")
    fields = ("white_vec", "prec_sqrt", "inputs")
    arrays = ("white_vec", "prec_sqrt")
    plain = ("inputs",)  # (name, domain) pairs: no child terms to walk
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
        if type(inputs) in (tuple, dict) and is_array(white_vec) and is_array(prec_sqrt) and not (
                info_vec is not None or precision is not None or mean is not None
                or covariance is not None or scale_tril is not None):
            items = _check_inputs(inputs)  # the canonical form: just validate shapes
            if type(white_vec) is not type(prec_sqrt):
                one_backend({"white_vec": white_vec, "prec_sqrt": prec_sqrt})
            if white_vec.dtype not in REAL_DTYPES or prec_sqrt.dtype not in REAL_DTYPES:
                named = {"white_vec": white_vec, "prec_sqrt": prec_sqrt}
                check_real_dtypes(named)
                white_vec, prec_sqrt = promote_integers(named).values()
        else:
            items = _check_inputs(inputs)
            named = {"white_vec": white_vec, "prec_sqrt": prec_sqrt, "info_vec": info_vec,
                     "precision": precision, "mean": mean, "covariance": covariance,
                     "scale_tril": scale_tril}
            backend = one_backend(named)
            named = {n: as_array(a, n, backend) for n, a in named.items() if a is not None}
            check_real_dtypes(named)
            _check_parameter_batches(named, items)
            white_vec, prec_sqrt = canonical_checked(promote_integers(named))
        return _check_shapes(white_vec, prec_sqrt, items)

    @staticmethod
    def _cons_key(args):
        return (id(args[0]), id(args[1]), args[2])

    def _setup(self):
        self._ikey = inputs = self._args[2]
        self._triangular = None
        self.inputs = dict(inputs)
        self.output = Real

    @classmethod
    def make(cls, white_vec, prec_sqrt, inputs: dict | None = None,
             ikey: tuple | None = None) -> Gaussian:
        """Build a Gaussian from arrays a rule just computed, skipping checks and rules.

        ``inputs`` as a dict, or ``ikey``: its items as a tuple (then no copy is made).

        Example:
            >>> g = fc.Gaussian.make(np.zeros(1), np.ones((1, 1)), {"x": fc.Real})
            >>> g.precision  # prec_sqrt @ prec_sqrt.T = 1 * 1
            array([[1.]])
        """
        self = object.__new__(cls)
        self._init(white_vec, prec_sqrt, ikey if ikey is not None else tuple(inputs.items()))
        return self

    # -- structure -----------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Number of real coordinates (sum of the real inputs' sizes).

        Example:
            >>> fc.Gaussian(mean=np.zeros(3), covariance=np.eye(3),
            ...             inputs={"x": fc.Reals[2], "y": fc.Real}).dim  # 2 + 1
            3
        """
        return self.prec_sqrt.shape[-2]

    @property
    def rank(self) -> int:
        """Number of columns of ``prec_sqrt`` (rows of information).

        Example:
            >>> g = fc.Gaussian(white_vec=np.zeros(1), prec_sqrt=np.ones((2, 1)),
            ...                 inputs={"x": fc.Reals[2]})  # information on x[0] + x[1] only
            >>> g.rank, g.dim
            (1, 2)
        """
        return self.prec_sqrt.shape[-1]

    @property
    def batch_inputs(self) -> dict:
        """The Bint inputs (batch dims), in order.

        Example:
            >>> fc.Gaussian(mean=np.zeros((4, 2)), covariance=np.eye(2),
            ...             inputs={"i": fc.Bint[4], "x": fc.Reals[2]}).batch_inputs
            {'i': Bint[4]}
        """
        return dict(gaussian_layout(self._ikey)[0])

    @property
    def real_inputs(self) -> dict:
        """The real inputs (coordinates), in order.

        Example:
            >>> fc.Gaussian(mean=np.zeros((4, 2)), covariance=np.eye(2),
            ...             inputs={"i": fc.Bint[4], "x": fc.Reals[2]}).real_inputs
            {'x': Reals[2]}
        """
        return {k: d for k, d in self.inputs.items() if d.dtype == "real"}

    @property
    def is_full_rank(self) -> bool:
        """Whether ``rank >= dim`` (necessary, not sufficient, to normalize).

        Example:
            >>> fc.Gaussian(white_vec=np.zeros(1), prec_sqrt=np.ones((2, 1)),
            ...             inputs={"x": fc.Reals[2]}).is_full_rank  # rank 1 < dim 2
            False
        """
        return self.rank >= self.dim

    # -- derived quantities --------------------------------------------------------------------
    @property
    def info_vec(self):
        """``prec_sqrt @ white_vec``: batch + (dim,); ``precision @ mean`` at full rank.

        Example:
            >>> g = fc.Gaussian(mean=np.array([3.0]), covariance=np.array([[0.5]]),
            ...                 inputs={"x": fc.Real})
            >>> g.info_vec  # (1 / 0.5) * 3
            array([6.])
        """
        return gm.to_info(self.white_vec, self.prec_sqrt)[0]

    @property
    def precision(self):
        """``prec_sqrt @ prec_sqrt.T``: batch + (dim, dim).

        Example:
            >>> fc.Gaussian(mean=np.array([3.0]), covariance=np.array([[0.5]]),
            ...             inputs={"x": fc.Real}).precision  # 1 / 0.5
            array([[2.]])
        """
        return ops.matmul(self.prec_sqrt, ops.transpose(self.prec_sqrt, -1, -2))

    @property
    def log_normalizer(self) -> Tensor:
        """``log ∫ exp f(x) dx`` over all real inputs: a Tensor over the Bint inputs.

        Example:
            >>> g = fc.Gaussian(mean=np.array([3.0]), covariance=np.array([[0.5]]),
            ...                 inputs={"x": fc.Real})  # exp f(x) = exp(-(x - 3)^2)
            >>> round(float(g.log_normalizer), 6), round(0.5 * float(np.log(np.pi)), 6)
            (0.572365, 0.572365)
        """
        data = gm.log_normalizer(self.white_vec, self.prec_sqrt,
                                 triangular=getattr(self, "_triangular", None))
        return Tensor.make(data, self.batch_inputs)

    @property
    def mean(self):
        """The mean (= mode) of the normalized density: batch + (dim,); needs full rank.

        Example:
            >>> fc.Gaussian(info_vec=np.array([1.0]), precision=np.array([[2.0]]),
            ...             inputs={"x": fc.Real}).mean  # precision^-1 @ info_vec
            array([0.5])
        """
        return gm.mean(self.white_vec, self.prec_sqrt)

    @property
    def covariance(self):
        """The covariance ``precision^{-1}``: batch + (dim, dim); needs full rank.

        Example:
            >>> fc.Gaussian(mean=np.zeros(2), covariance=np.diag([4.0, 1.0]),
            ...             inputs={"x": fc.Reals[2]}).covariance
            array([[4., 0.],
                   [0., 1.]])
        """
        return gm.covariance(self.prec_sqrt)

    @property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance: batch + (dim, dim); needs full rank.

        Example:
            >>> fc.Gaussian(mean=np.zeros(2), covariance=np.diag([4.0, 1.0]),
            ...             inputs={"x": fc.Reals[2]}).scale_tril  # sqrt of the diagonal
            array([[2., 0.],
                   [0., 1.]])
        """
        la.require_full_rank(self.prec_sqrt, "a scale_tril")
        return la.inverse_cholesky(self.precision)

    # funsor 0.4.8 names these with a leading underscore; the same values under its names.
    _info_vec = info_vec
    _precision = precision
    _mean = mean
    _covariance = covariance
    _scale_tril = scale_tril


# A pytree transform may replace the arrays (an optimizer's update of prec_sqrt is dense), so
# the structure known from the construction does not travel with them: unflattened, it is unset.
Gaussian._derived = tuple(n for n in Gaussian._derived if n not in ("_triangular", "_normalizer"))


def _check_shapes(white_vec, prec_sqrt, items: tuple) -> tuple:
    batch, dim = _batch_and_dim(items)
    ws, ps = tuple(white_vec.shape), tuple(prec_sqrt.shape)
    if not (len(ps) >= 2 and ps[-2] == dim and len(ws) >= 1 and ws[-1] == ps[-1]
            and _broadcasts(ws[:-1], batch) and _broadcasts(ps[:-2], batch)):
        _raise_shapes(ws, ps, items)
    if ws[:-1] != batch:
        white_vec = ops.expand(white_vec, batch + ws[-1:])
    if ps[:-2] != batch:
        prec_sqrt = ops.expand(prec_sqrt, batch + ps[-2:])
    return white_vec, prec_sqrt, items


@cached("gaussian.atom.batch_and_dim", maxsize=1024, fast=True)
def _batch_and_dim(items: tuple) -> tuple:
    """The batch shape (sizes of the Bint inputs) and ``dim`` of a Gaussian's input items."""
    inputs = dict(items)
    return tuple(d.size for d in gaussian_batch_inputs(inputs).values()), real_offsets(inputs)[1]


def _broadcasts(shape: tuple, batch: tuple) -> bool:
    if shape == batch:
        return True
    try:
        return len(shape) <= len(batch) and broadcast_shape(shape, batch) == batch
    except ValueError:
        return False


def _check_parameter_batches(named: dict, items: tuple) -> None:
    # mean=, covariance=, ... whose batch dims disagree with the Bint inputs failed inside the
    # factorization with "output shapes ((4,), (3,)) do not broadcast together": say which
    # parameter and which inputs. Shapes are static, so this holds under jax.jit too.
    batch, _ = _batch_and_dim(items)
    for name, x in named.items():
        shape = tuple(x.shape)[:-1 if name in ("white_vec", "info_vec", "mean") else -2]
        if not _broadcasts(shape, batch):
            bints = {k: str(d) for k, d in gaussian_batch_inputs(dict(items)).items()}
            raise DomainError(f"Gaussian {name}= of shape {tuple(x.shape)} has batch shape "
                              f"{shape} but its Bint inputs {bints} need {batch} (size-1 dims "
                              "broadcast)")


def _raise_shapes(ws: tuple, ps: tuple, items: tuple):
    """Raise the DomainError that names what is wrong with these array shapes."""
    inputs = dict(items)
    batch_inputs = gaussian_batch_inputs(inputs)
    batch, dim = _batch_and_dim(items)
    real = {k: str(d) for k, d in inputs.items() if d.dtype == "real"}
    if len(ps) < 2 or ps[-2] != dim:
        bints = {k: str(d) for k, d in inputs.items() if d.dtype != "real"}
        note = (f"; the Bint inputs {bints} are batch dims, not coordinates (a real variable "
                "has a Real or Reals[...] domain)" if bints else "")
        raise DomainError(
            f"Gaussian prec_sqrt of shape {ps} must end in (dim, rank) with dim = {dim}, the "
            f"total size of the real inputs {real}{note}")
    if len(ws) < 1 or ws[-1] != ps[-1]:
        raise DomainError(f"Gaussian white_vec of shape {ws} must end in rank = {ps[-1]} "
                          f"(the last dim of prec_sqrt, shape {ps})")
    for shape, what in ((ws[:-1], "white_vec"), (ps[:-2], "prec_sqrt")):
        if not _broadcasts(shape, batch):
            raise DomainError(
                f"Gaussian {what} has batch shape {shape} but its Bint inputs "
                f"{ {k: str(d) for k, d in batch_inputs.items()} } need {batch} (size-1 dims "
                "broadcast)")
    raise AssertionError("unreachable: the shapes were found wrong")


# ---------------------------------------------------------------------------------------------
# Alignment by name: pure functions of arrays and input mappings.
def align_gaussian(new_inputs: dict, g: Gaussian, expand: bool = False, arrays=None):
    """``(white_vec, prec_sqrt)`` of ``g`` in the layout of ``new_inputs``; ``arrays`` stand
    in for ``g``'s own (host copies of them, ``atoms.gaussian.host``).

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
    white_vec, prec_sqrt = (g.white_vec, g.prec_sqrt) if arrays is None else arrays
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


def evaluate_unbatched(g: Gaussian, values: dict) -> Tensor | None:
    """``g(**values)`` for a Gaussian of one real input and no batch inputs, given by a
    Tensor (a Monte Carlo guide at its particles): ``-0.5 ||x S - w||^2`` straight from the
    value's array, with no alignment to a batch. None for any other case.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> evaluate_unbatched(g, {"x": fc.Tensor(np.array([1.0, 2.0]), {"n": fc.Bint[2]})}).data
        array([-0.5, -2. ])
    """
    if len(g._ikey) != 1 or len(values) != 1:
        return None
    ((name, domain),) = g._ikey
    value = values.get(name)
    if type(value) is not Tensor or domain.dtype != "real":
        return None
    data = value.data
    if len(domain.shape) != 1:  # a Real or a matrix: flattened to the coordinate vector
        data = ops.reshape(data, tuple(data.shape[:len(value._ikey)]) + (domain.num_elements,))
    diff = ops.sub(g.white_vec, la.vm_values(data, g.prec_sqrt)[0])
    return Tensor.make(ops.mul(-0.5, ops.sum(ops.mul(diff, diff), -1)), value.inputs)


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
