"""Monte Carlo samples of the atoms: ``sample(term, sampled_vars, sample_inputs, rng_key)``.

A sample of a log density ``f`` over names ``V`` is a funsor ``s`` with the same free inputs
such that ``Integrate(s, h, V)`` is an unbiased estimate of ``Integrate(f, h, V)`` for any
``h``: a ``Delta`` at the drawn points plus a log weight. As in funsor 0.4.8:

- ``Tensor``: a categorical draw of its Bint inputs in ``V`` (jointly, from the normalized
  ``exp f``), batched over its other inputs; the weight is ``logsumexp_V f``, the total mass.
  On jax (and torch with gradients) the weight carries a DiCE factor
  ``log p(x) - detach(log p(x))``, zero in value, so gradients are unbiased too.
- ``Gaussian``: a reparameterized draw of its real inputs in ``V``; the weight is the log
  normalizer (when others are kept, ``g(x) - log q(x)`` with ``q`` the sampled marginal).
- ``Gaussian + Tensor`` over Bint names too (a mixture): the Bint names from their marginal,
  then the real ones given them (``sample_joint``).
- ``f(y=h(x))``, a substitution of a function of sampled names: ``y`` drawn from ``f``, then
  the sample's Delta changes variables to ``x`` (with the log-Jacobian).
- ``Delta``: already a sample; it is returned as it is.
- Any other term class registers its own sampler (``register_sampler``): the distribution
  families of ``funsor_core.distribution`` draw their value (reparameterized where the family
  and backend allow).

``sample_inputs`` (names to ``Bint[n]``) adds independent draws along new batch inputs; the
estimate is then the mean over them.

``rng_key``: an int seed (any backend), a numpy ``Generator``, a torch ``Generator``, or a jax
PRNG key (also traced, under ``jax.jit``); None uses the backend's global state.

Example:
    >>> t = fc.Tensor(np.log(np.array([0.25, 0.75])), {"i": fc.Bint[2]})
    >>> s = sample(t, "i", {"n": fc.Bint[4]}, rng_key=0)
    >>> sorted(s.inputs)
    ['i', 'n']
"""

from __future__ import annotations

import math
from collections.abc import Callable

from funsor_core import ops
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.algebra import (
    CHECK_RANK,
    gaussian_sum,
    is_gaussian_sum,
    split_gaussian_sum,
)
from funsor_core.atoms.gaussian.atom import Gaussian, real_offsets
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import FastCache
from funsor_core.sampling.keys import KeyStream
from funsor_core.terms.base import Funsor, Number, Subs, register_term_hook
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.inputs import DomainError
from funsor_core.terms.reshaping import Independent
from funsor_core.terms.traversal import reinterpret

__all__ = ["sample", "sample_gaussian", "sample_tensor", "sample_joint", "backend_and_key",
           "extract_samples", "register_sampler", "find_sampler", "SAMPLERS"]

_NO_SAMPLER = (
    "cannot sample {names} from a {cls}: sample() knows Tensor, Gaussian, Gaussian + Tensor "
    "and Delta. Evaluate the term to one of these first (e.g. under `exact`), or sample its "
    "factors one at a time."
)

_SAMPLE_INPUT_CLASH = (
    "sample_inputs {name!r}: {domain} clashes with the term's input {name!r} of domain {have}; "
    "a sample input names new independent draws, so give it a fresh name (e.g. "
    "{{'particle': {domain}}}), or {have} to draw one sample per value of {name!r}."
)


def sample(term: Funsor, sampled_vars, sample_inputs=None, rng_key=None) -> Funsor:
    """Draw ``sampled_vars`` from the log density ``term`` (see the module docstring).

    Args:
        term: a Tensor, Gaussian, Gaussian + Tensor, or Delta (a log density), or a term
            of a class with a registered sampler (``register_sampler``: the distribution
            families of ``funsor_core.distribution``).
        sampled_vars: a name, or a set of names, of inputs of ``term``; others are ignored.
        sample_inputs: mapping of new names to ``Bint[n]``: independent draws along them.
        rng_key: an int seed, a numpy or torch ``Generator``, a jax PRNG key, or None.

    Returns:
        A funsor with ``term``'s inputs and ``sample_inputs``: a Delta over the sampled names
        plus a log weight; ``term`` itself when no name of ``sampled_vars`` is an input.

    Raises:
        NotImplementedError: for terms other than the atoms above.

    Example:
        >>> d = fc.Delta("x", fc.Number(1.0))
        >>> sample(d, "x") is d
        True
    """
    names = frozenset({sampled_vars} if isinstance(sampled_vars, str) else sampled_vars)
    names = frozenset(getattr(v, "name", v) for v in names) & term.inputs.keys()
    if not names:
        return term
    sample_inputs = sample_inputs or {}
    for k, d in sample_inputs.items():
        if k in term.inputs and term.inputs[k] != d:
            raise DomainError(_SAMPLE_INPUT_CLASH.format(name=k, domain=d, have=term.inputs[k]))
    # one already an input (of the same domain) indexes the draws already, as in funsor
    sample_inputs = {k: d for k, d in sample_inputs.items() if k not in term.inputs}
    for k, d in sample_inputs.items():
        if not isinstance(getattr(d, "dtype", None), int):  # Real, Reals[n], not a domain
            raise ValueError(f"sample_inputs {k!r}: {d} is not a Bint[n]; draws are indexed by "
                             "a finite batch input")
    cls = type(term)
    sampler = _SAMPLER_OF.get(cls, _MISSING)
    if sampler is _MISSING:
        sampler = find_sampler(cls)
    if sampler is not None:
        drawn = sampler(term, names, sample_inputs, rng_key)
        if drawn is not None:
            return drawn
    if not cls._atom:
        # A lazy term (built under reflect or lazy) is evaluated by the active interpretation
        # first, as funsor does; sampled if that gives a term with a sampler.
        evaluated = reinterpret(term)
        if evaluated is not term:
            return sample(evaluated, names, sample_inputs, rng_key)
    raise NotImplementedError(_NO_SAMPLER.format(names=sorted(names), cls=cls.__name__))


# -- the samplers, one per term class ---------------------------------------------------------
# A sampler ``(term, names, sample_inputs, rng_key) -> Funsor | None`` is registered on a term
# class and found along the term class's MRO (once per class); None declines (a lazy term is
# then evaluated and sampled again).
SAMPLERS: dict[type, Callable] = {}
_SAMPLER_CACHE = FastCache("sampling.sampler", 256)
_SAMPLER_OF = _SAMPLER_CACHE.data
_MISSING = object()


def register_sampler(cls: type) -> Callable[[Callable], Callable]:
    """Register the sampler of the terms of class ``cls`` (and its subclasses without their
    own); a term class outside this module (a distribution family) registers its own.

    Example:
        >>> from funsor_core.atoms.delta import Delta
        >>> find_sampler(Delta).__name__
        'sample_delta'
    """
    def register(sampler: Callable) -> Callable:
        SAMPLERS[cls] = sampler
        _SAMPLER_CACHE.clear()  # a subclass may have resolved to a base class's sampler
        return sampler

    return register


def find_sampler(cls: type) -> Callable | None:
    """The sampler registered on the first class of ``cls``'s MRO that has one (or None).

    Example:
        >>> find_sampler(fc.Tensor).__name__, find_sampler(fc.Variable)
        ('sample_tensor', None)
    """
    sampler = next((SAMPLERS[c] for c in cls.__mro__ if c in SAMPLERS), None)
    _SAMPLER_CACHE.put(cls, sampler)
    return sampler


@register_sampler(Delta)
def sample_delta(term: Delta, names: frozenset, sample_inputs: dict, rng_key=None) -> Funsor:
    """A point mass is already a sample: ``term`` itself."""
    return term


def _all_real(term: Funsor, names: frozenset) -> bool:
    inputs = term.inputs
    return all(inputs[k].dtype == "real" for k in names)


@register_sampler(Gaussian)
def sample_gaussian_term(g: Gaussian, names: frozenset, sample_inputs: dict, rng_key=None):
    """Real ``names``: ``sample_gaussian``; some Bint names too: ``sample_joint`` (a mixture,
    discrete names first)."""
    if _all_real(g, names):
        return sample_gaussian(g, names, sample_inputs, rng_key)
    return sample_joint(g, names, sample_inputs, rng_key)


@register_sampler(Contraction)
def sample_gaussian_sum(term: Contraction, names: frozenset, sample_inputs: dict,
                        rng_key=None):
    """A Gaussian plus Tensors over Bint inputs (``is_gaussian_sum``): the Gaussian drawn and
    the Tensors kept as a weight, or ``sample_joint`` when Bint names are sampled too; a sum
    with Deltas (an earlier sample) draws the rest (``_sample_delta_sum``); any other
    contraction declines (None)."""
    if not is_gaussian_sum(term):
        return _sample_delta_sum(term, names, sample_inputs, rng_key)
    if len(split_gaussian_sum(term)[0]) > 1:  # a sum moment_matching kept side by side
        term = gaussian_sum(*term.terms)
        if isinstance(term, Gaussian):
            return sample_gaussian_term(term, names, sample_inputs, rng_key)
    if not _all_real(term, names):
        return sample_joint(term, names, sample_inputs, rng_key)
    # Sample g, keep t as a weight. The weights join the sample's own weight before it meets
    # the Delta: one sum of a point mass and a weight to normalize instead of one per weight.
    (g,), dense = split_gaussian_sum(term)
    delta, weight = _draw_gaussian(g, names, sample_inputs, rng_key)
    for t in dense:
        weight = weight + t
    return delta + weight


def _sample_delta_sum(term: Contraction, names: frozenset, sample_inputs: dict, rng_key):
    """``Delta(x, p) + f``: the point masses are already draws of their names, so only the
    rest is sampled, over the other names. ``f`` has ``x = p`` substituted (the sum's value
    wherever its Delta has mass), so that a sample of a sample is again a sample. None for a
    contraction that is not an unreduced sum holding a Delta."""
    if term.reduced_vars or term.bin_op is not ops.add:
        return None
    deltas = [t for t in term.terms if isinstance(t, Delta)]
    if not deltas:
        return None
    points = {k: p for d in deltas for k, p in extract_samples(d).items()}
    rest = [t for t in term.terms if not isinstance(t, Delta)]
    drawn = rest[0](**points) if rest else Number(0.0)
    for t in rest[1:]:
        drawn = drawn + t(**points)
    drawn = sample(drawn, names - points.keys(), sample_inputs, rng_key)
    for d in deltas:
        drawn = d + drawn
    return drawn


# ---------------------------------------------------------------------------------------------
# Random numbers from the arrays' backend.
def _module_and_key(proto, rng_key):
    """The backend module of ``proto`` and ``rng_key`` as that backend takes it."""
    module = backend_of(proto)
    if rng_key is None or isinstance(rng_key, int):
        if rng_key is not None and rng_key < 0:
            raise ValueError(f"rng_key must be a non-negative int seed, got {rng_key}")
        return module, (module.new_rng_key(rng_key) if isinstance(rng_key, int) else None)
    own = backend_of(rng_key, None)
    if own is None or isinstance(rng_key, (bool, float)):
        raise TypeError(f"rng_key must be None, an int seed, a numpy or torch Generator or a "
                        f"jax key, got {type(rng_key).__name__} {rng_key!r:.40}")
    if own is not module:
        # funsor's jax idiom: a raw key as a host array of two uint32s (jax's samplers take it)
        values = own.seed_values(rng_key) if hasattr(rng_key, "shape") else None
        if values is not None and module.is_raw_key(values):
            return module, module.asarray(values)
        raise TypeError(f"rng_key is a {type(rng_key).__name__} ({own.NAME}), but the term "
                        f"holds {module.NAME} arrays: pass an int seed or a {module.NAME} key")
    # e.g. a jax-style key (an array of uint32s) seeds a numpy Generator, as funsor allows.
    return module, module.as_rng_key(rng_key)


def backend_and_key(proto, rng_key):
    """The backend module of the array ``proto`` and ``rng_key`` as that backend takes it (an
    int seed becomes a fresh key or Generator; None stays None: the global state).

    Example:
        >>> module, key = backend_and_key(np.zeros(2), 0)
        >>> module.NAME, type(key).__name__
        ('numpy', 'Generator')
    """
    return _module_and_key(proto, rng_key)


def _standard_normal(proto, shape: tuple, rng_key):
    # In proto's float dtype: backends draw in their default one (numpy float64), and a
    # float32 Gaussian's samples (and Monte Carlo estimates) must stay float32.
    module, key = _module_and_key(proto, rng_key)
    x = ops.new_array(proto, module.randn(shape, key))
    if x.dtype == proto.dtype:
        return x
    return x.to(proto.dtype) if hasattr(x, "to") and not hasattr(x, "astype") else \
        x.astype(proto.dtype)


def _uniform(proto, shape: tuple, rng_key):
    module, key = _module_and_key(proto, rng_key)
    return ops.new_array(proto, module.rand(shape, key))


# ---------------------------------------------------------------------------------------------
@register_sampler(Tensor)
def sample_tensor(t: Tensor, names: frozenset, sample_inputs: dict, rng_key=None) -> Funsor:
    """Categorical draw of the Bint inputs ``names`` of the log weights ``t`` (jointly).

    Uses the Gumbel-max trick: ``argmax_k (logit_k + G_k)`` with ``G_k = -log(-log U_k)``
    iid is distributed as ``softmax(logits)``, batched with no Python loop and no host read,
    so it runs under ``jax.jit``. The joint index is then unravelled into one Bint point per
    name. Returns ``Delta(points) + logsumexp_names t`` (with a DiCE factor where gradients
    may flow).

    Example:
        >>> t = fc.Tensor(np.array([0.0, -np.inf]), {"i": fc.Bint[2]})
        >>> delta, log_weight = sample_tensor(t, frozenset("i"), {}, rng_key=0).terms
        >>> int(delta.terms[0][1][0].data), float(log_weight.data)
        (0, 0.0)
    """
    if t.dtype != "real" or t.output.shape:
        raise ValueError(f"sample() needs a real scalar Tensor (log weights), got output "
                         f"{t.output}")
    batch = {k: d for k, d in t.inputs.items() if k not in names}
    event = {k: d for k, d in t.inputs.items() if k in names}
    empty = [k for k, d in event.items() if d.size == 0]
    if empty:  # sizes are static: decided structurally, under jax.jit too
        raise ValueError(f"sample(): {empty} are Bint[0], so there is no value to draw")
    logits = align_tensor({**batch, **event}, t, expand=True)
    batch_shape = tuple(d.size for d in batch.values())
    sample_shape = tuple(d.size for d in sample_inputs.values())
    # The event size spelled out: -1 is ambiguous when a batch dim is 0 (an empty plate).
    flat = ops.reshape(logits, batch_shape + (math.prod(d.size for d in event.values()),))
    u = _uniform(flat, sample_shape + tuple(flat.shape), rng_key)
    gumbel = ops.neg(ops.log(ops.neg(ops.log(u))))
    flat_b = ops.reshape(flat, (1,) * len(sample_shape) + tuple(flat.shape))
    index = ops.argmax(ops.add(flat_b, gumbel), -1)  # sample_shape + batch_shape
    sb_inputs = {**sample_inputs, **batch}
    terms, rest = [], index
    for name, domain in reversed(list(event.items())):  # row-major: the last name varies fastest
        terms.append((name, (Tensor(rest % domain.size, sb_inputs, domain.size), Number(0.0))))
        rest = rest // domain.size
    delta = Delta(tuple(reversed(terms)))
    return delta + _log_weight(flat, index, sample_inputs, batch)


def _log_weight(flat, index, sample_inputs: dict, batch: dict) -> Tensor:
    """The total mass ``logsumexp flat`` over batch inputs; with a DiCE factor (zero in value)
    when gradients may flow (jax, torch with ``requires_grad``)."""
    total = ops.logsumexp(flat, -1)
    if not backend_of(flat).tracks_gradients(flat):
        return Tensor(total, batch)
    shape = tuple(index.shape)
    flat_b = ops.expand(ops.reshape(flat, (1,) * len(sample_inputs) + tuple(flat.shape)),
                        shape + tuple(flat.shape[-1:]))
    # log p of the drawn index, gathered by a one-hot mask (where, not a product: -inf * 0).
    hit = ops.eq(ops.new_arange(index, 0, flat.shape[-1], 1), ops.getitem(index, (Ellipsis, None)))
    log_prob = ops.sum(ops.where(hit, flat_b, ops.full_like(flat_b, 0.0)), -1)
    dice = ops.sub(log_prob, ops.detach(log_prob))
    return Tensor(ops.add(ops.detach(total), dice), {**sample_inputs, **batch})


# ---------------------------------------------------------------------------------------------
def sample_gaussian(g: Gaussian, names: frozenset, sample_inputs: dict, rng_key=None) -> Funsor:
    """Reparameterized draw of the real inputs ``names`` of ``g``.

    Returns ``Delta(x) + log Z`` when every real input is sampled (``log Z``: the log
    normalizer), else ``Delta(x) + g(x) - log q(x) + log Z`` with ``q`` the normalized
    marginal of the sampled names: in both cases ``logaddexp`` over the sampled names (mean
    over ``sample_inputs``) estimates that of ``g`` without bias.

    Example:
        >>> g = fc.Gaussian(mean=np.ones(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> s = sample_gaussian(g, frozenset("x"), {"n": fc.Bint[3]}, rng_key=0)
        >>> sorted(s.inputs)
        ['n', 'x']
    """
    delta, weight = _draw_gaussian(g, names, sample_inputs, rng_key)
    return delta + weight


def _draw_gaussian(g: Gaussian, names: frozenset, sample_inputs: dict, rng_key):
    """``sample_gaussian``'s two parts: the Delta at the drawn points and its log weight."""
    sampled = [k for k in g.inputs if k in names and g.inputs[k].dtype == "real"]
    others = frozenset(k for k in g.real_inputs if k not in names)
    marginal = g.reduce(ops.logaddexp, others) if others else g
    (q,), _ = split_gaussian_sum(marginal)
    batch = {**sample_inputs, **q.batch_inputs}
    noise = _standard_normal(q.white_vec, tuple(d.size for d in batch.values()) + (q.dim,),
                             rng_key)
    if others:
        la.require_full_rank(q.prec_sqrt, "a sample")
        r_upper, z, _ = la.triangularize(la.mT(q.prec_sqrt), q.white_vec)
        log_z = g.log_normalizer
    else:  # q is g: one QR gives the draws and the normalizer
        r_upper, z, log_z = gm.factor(q.white_vec, q.prec_sqrt, check=CHECK_RANK[0],
                                      names=lambda: _labels(g, names))
        log_z = Tensor.make(log_z, q.batch_inputs)
    x = _reparameterize(r_upper, z, noise, len(sample_inputs))
    offsets, _ = real_offsets(q.inputs)
    points = {}
    for name in sampled:
        domain = g.inputs[name]
        part = x
        if domain.num_elements != q.dim:  # one of several inputs: its slice of coordinates
            part = ops.getitem(x, (Ellipsis, slice(offsets[name],
                                                   offsets[name] + domain.num_elements)))
        if len(domain.shape) != 1:  # a Real or a matrix, from its flat coordinates
            part = ops.reshape(part, tuple(part.shape[:-1]) + domain.shape)
        points[name] = Tensor.make(part, batch)
    delta = Delta(tuple((k, (v, Number(0.0))) for k, v in points.items()))
    if not others:
        return delta, log_z
    return delta, g(**points) + (log_z - marginal(**points))


def _labels(g: Gaussian, names: frozenset) -> list[str]:
    """One label per sampled coordinate, for a rank error (as ``marginalize_gaussian``'s)."""
    return [k if d.num_elements == 1 else f"{k}[{i}]"
            for k, d in g._ikey if k in names for i in range(d.num_elements)]


def _reparameterize(r_upper, z, noise, ns: int):
    """``x = R^{-1} (z + noise) ~ N(mean, precision^{-1})`` (``arrays.sample``, with ``R, z``
    of ``arrays.factor``) for noise of shape ``sample + batch + (dim,)`` with ``ns`` sample
    dims: the draws are the columns of one triangular solve per batch entry, not one small
    solve per draw (1,000 particles of a 10-d Gaussian: one solve with 1,000 right-hand
    sides)."""
    if ns == 0:
        return la.solve_upper(r_upper, ops.add(z, noise))
    batch, dim = tuple(z.shape[:-1]), z.shape[-1]
    sample = tuple(noise.shape[:ns])
    nb = len(batch)
    to_cols = tuple(range(ns, ns + nb + 1)) + tuple(range(ns))  # batch + (dim,) + sample
    cols = ops.reshape(ops.permute(noise, to_cols), batch + (dim, math.prod(sample)))
    x = ops.triangular_solve(ops.add(cols, ops.getitem(z, (Ellipsis, None))), r_upper,
                             upper=True)
    x = ops.reshape(x, batch + (dim,) + sample)
    back = tuple(range(nb + 1, nb + 1 + ns)) + tuple(range(nb + 1))
    return ops.permute(x, back)


@register_sampler(Subs)
def sample_subs(term: Subs, names: frozenset, sample_inputs: dict, rng_key=None):
    """``f(y=h(x))`` sampled over ``x``: draw ``y`` from ``f``, then substitute ``y = h(x)``
    into the sample, whose Delta changes variables (``Delta(y, p)(y=log(x))`` is a point mass
    at ``x = exp(p)`` with the log-Jacobian as its log density). None when no substituted
    value depends on ``names``."""
    subs = dict(term.subs)
    inner = frozenset(k for k, v in subs.items() if v.inputs.keys() & names)
    if not inner:
        return None
    own = names & (term.arg.inputs.keys() - subs.keys())
    drawn = sample(term.arg, inner | own, sample_inputs, rng_key)
    return drawn(**subs)


@register_sampler(Independent)
def sample_independent(term: Independent, names: frozenset, sample_inputs: dict,
                       rng_key=None):
    """``Independent(f, x, i, x_i)`` sampled over ``x``: each row ``x_i`` drawn from ``f``
    (``i`` a batch input of that draw), then the rows stacked into one point mass at ``x``
    and the log weights summed over ``i`` (the plate is a product of independent factors).
    None when ``x`` is not sampled."""
    reals_var, bint_var, diag_var = term.reals_var, term.bint_var, term.diag_var
    if reals_var not in names:
        return None
    drawn = sample(term.fn, (names - {reals_var}) | {diag_var}, sample_inputs, rng_key)
    parts = drawn.terms if isinstance(drawn, Contraction) and not drawn.reduced_vars else (drawn,)
    rows = [t for t in parts if isinstance(t, Delta) and diag_var in t.fresh]
    if len(rows) != 1 or isinstance(drawn, Contraction) and drawn.bin_op is not ops.add:
        return None
    rest = [t for t in parts if t is not rows[0]]
    result = Independent(rows[0], reals_var, bint_var, diag_var)
    for t in rest:  # sum_i w_i; a weight constant over the plate counts once per row
        result = result + (t.reduce(ops.add, bint_var) if bint_var in t.inputs
                           else t * term.fn.inputs[bint_var].size)
    return result


def sample_joint(term: Funsor, names: frozenset, sample_inputs: dict, rng_key=None) -> Funsor:
    """Draw Bint and real ``names`` of a Gaussian plus Tensors ``p(i, x)``: first the Bint
    names from their marginal ``m(i) = log ∫ exp p(i, x) dx`` (every real input integrated),
    then the real names from the conditional ``p(i_s, x) - m(i_s)``.

    Returns ``Delta(i_s) + log_weight + sample of the conditional`` (``log_weight``: the
    total mass ``logsumexp_i m``, with a DiCE factor where gradients flow), so that summing
    over ``names`` estimates that of ``p`` without bias, as for the atoms.

    Example:
        >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> s = sample_joint(g, frozenset({"i", "x"}), {"n": fc.Bint[3]}, rng_key=0)
        >>> sorted(s.inputs), sorted(extract_samples(s))
        (['i', 'n', 'x'], ['i', 'x'])
    """
    keys = rng_key if isinstance(rng_key, KeyStream) else KeyStream(rng_key)
    reals = frozenset(k for k, d in term.inputs.items() if d.dtype == "real")
    discrete = names - reals
    marginal = term.reduce(ops.logaddexp, reals)
    drawn = sample_tensor(marginal, discrete, sample_inputs, keys.next(marginal))
    points = extract_samples(drawn)
    conditional = term(**points) - marginal(**points)
    if names & reals:
        conditional = sample(conditional, names & reals, sample_inputs, keys.next(conditional))
    return drawn + conditional


def extract_samples(discrete_density: Funsor) -> dict:
    """The points of the Deltas in a sample (a Delta, or a sum of Deltas and weights), as a
    dict from names to points (funsor's ``funsor.montecarlo.extract_samples``).

    Weights (Tensors, Numbers, Gaussians and other terms of a sum) contribute nothing.

    Raises:
        ValueError: for a reduction (``Contraction`` with reduced variables), whose points
            are not free.

    Example:
        >>> t = fc.Tensor(np.array([0.0, -np.inf]), {"i": fc.Bint[2]})
        >>> int(extract_samples(sample(t, "i", rng_key=0))["i"].data)
        0
    """
    if isinstance(discrete_density, Delta):
        return {name: point for name, (point, _) in discrete_density.terms}
    if isinstance(discrete_density, Contraction):
        if discrete_density.reduced_vars:
            raise ValueError(f"cannot extract samples from a reduction over "
                             f"{sorted(discrete_density.reduced_vars)}: its points are bound")
        points: dict = {}
        for term in discrete_density.terms:
            points.update(extract_samples(term))
        return points
    return {}


register_term_hook("sample", sample)
