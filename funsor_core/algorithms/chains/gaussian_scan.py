"""Array kernels of Gaussian Markov products: Kalman-style chains in square-root form.

A step of a Gaussian chain is ``g(prev, glob, curr) + k`` with ``g`` a Gaussian (``white_vec``
``w``, ``prec_sqrt`` ``s``) over the real state ``prev`` (``dp`` coordinates), the global
reals ``glob`` shared by every step (``dg``, not eliminated: a sensor bias) and ``curr``, and
``k`` a constant per step. The chain is aligned once to arrays with a leading time axis, rows
in the order ``[prev, glob, curr]``, and every step's rank made exactly ``D = 2 dp + dg``
(compressed, or padded with rows of no information), so that composing two steps always
gives rank ``D`` again: the sequential carry has one fixed structure, and ``lax.scan`` runs
it under jax.

Composing ``A(p, g, m)`` with ``B(m, g, c)`` stacks both square roots over ``[m, p, g, c]``
and integrates ``m`` out by one QR (``gaussian.arrays.marginalize``); the constants add,
with the integral's log normalizer. With a boundary (a Gaussian over the first prev states,
or the last curr states, summed out) the sequential carry is a filter over ``[g, m]`` only.

Example:
    >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2),
    ...                 inputs={"x": fc.Real, "y": fc.Real})
    >>> t = g + fc.Tensor(np.zeros(3), {"t": fc.Bint[3]})  # exp(-(x^2 + y^2) / 2) per step
    >>> parts = gaussian_chain_parts(ops.logaddexp, ops.add, t, fc.Variable("t", fc.Bint[3]),
    ...                              (("x", "y"),))
    >>> r = markov_gaussian(parts, (("x", "y"),), (("x", "y"),), "parallel")
    >>> # x0, x3 appear once (integral sqrt(2 pi)), x1, x2 twice (sqrt(pi))
    >>> bool(np.isclose(r.reduce(ops.logaddexp).data, np.log(2 * np.pi) + np.log(np.pi)))
    True
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import chain_problem, resolve_strategy
from funsor_core.algorithms.chains.gaussian_gram import gram_tree, gram_tree_traced
from funsor_core.algorithms.chains.power import repeated_squaring
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.algebra import is_gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian
from funsor_core.atoms.gaussian.host import host_copies, to_backend, widest
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import cached
from funsor_core.terms.base import Binary, Number

__all__ = ["GaussianChain", "gaussian_chain_parts", "gaussian_terms", "markov_gaussian",
           "compose", "canonical_rank", "diverged", "gaussian_result", "block_product"]


class GaussianChain:
    """A Gaussian chain on arrays: ``w`` ``(T, *batch, D)``, ``s`` ``(T, *batch, D, D)``,
    ``k`` ``(T, *batch)``, rows ``[prev, glob, curr]``; ``power`` is T for a chain whose one
    step repeats (then the time axis has length 1).

    Example:
        >>> GaussianChain.__slots__[:3]
        ('w', 's', 'k')
    """

    __slots__ = ("w", "s", "k", "dp", "dg", "power", "batch", "reals", "duration")

    def __init__(self, w, s, k, dp, dg, power, batch, reals, duration):
        self.w, self.s, self.k = w, s, k
        self.dp, self.dg, self.power = dp, dg, power
        self.batch, self.reals, self.duration = batch, reals, duration


def gaussian_chain_parts(sum_op, prod_op, trans, time, step: tuple) -> GaussianChain | None:
    """The chain's arrays, or None when the chain is not a real Gaussian chain in the
    ``(logaddexp, add)`` semiring (a discrete step pair, another semiring, another term).

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2),
        ...                 inputs={"x": fc.Real, "y": fc.Real})
        >>> c = gaussian_chain_parts(ops.logaddexp, ops.add, g, fc.Variable("t", fc.Bint[4]),
        ...                          (("x", "y"),))
        >>> c.s.shape, c.power
        ((1, 2, 2), 4)
    """
    if sum_op not in (ops.logaddexp, ops.sample) or prod_op is not ops.add or not step:
        return None
    split = gaussian_terms(trans)
    if split is None:
        return None
    gaussians, dense = split
    names = [n for pair in step for n in pair]
    reals_of = {}
    for g in gaussians:
        reals_of.update((n, d) for n, d in g.inputs.items() if d.dtype == "real")
    if any(reals_of.get(n) is None for n in names):
        return None
    tname, duration = time.name, time.output.size
    prevs, currs = [p for p, _ in step], [c for _, c in step]
    glob = [n for n in reals_of if n not in names]
    bints = {}
    for term in (*gaussians, *dense):
        for n, d in term.inputs.items():
            if d.dtype != "real" and n != tname:
                bints.setdefault(n, d)
    has_time = tname in trans.inputs
    head = {tname: time.output} if has_time else {}
    layout = {**head, **bints}
    layout.update((n, reals_of[n]) for n in prevs + glob + currs)
    tensors = [t for t in dense if isinstance(t, Tensor)]
    host = host_copies(*(a for g in gaussians for a in (g.white_vec, g.prec_sqrt)),
                       *(t.data for t in tensors))  # small eager arrays: atoms.gaussian.host
    pairs = ([(g.white_vec, g.prec_sqrt) for g in gaussians] if host is None
             else list(zip(host[:2 * len(gaussians):2], host[1:2 * len(gaussians):2])))
    if host is not None:
        dense = [Tensor.make(h, t.inputs, t.dtype, t._ikey, t.output)
                 for t, h in zip(tensors, host[2 * len(gaussians):])] + [
            t for t in dense if not isinstance(t, Tensor)]
    # A sum of Gaussians is the concatenation of their square roots (rows stacked).
    aligned = [align_gaussian(layout, g, expand=True, arrays=pair)
               for g, pair in zip(gaussians, pairs)]
    w = aligned[0][0] if len(aligned) == 1 else ops.cat([a[0] for a in aligned], -1)
    s = aligned[0][1] if len(aligned) == 1 else ops.cat([a[1] for a in aligned], -1)
    if not has_time:
        w, s = w[None], s[None]
    shape = tuple(s.shape[:-2])
    k = ops.new_zeros(w, shape)
    for t in dense:
        if isinstance(t, Tensor):
            k = ops.add(k, ops.reshape(align_tensor({**head, **bints}, t, expand=True), shape))
        else:
            k = ops.add(k, t.data)
    dp = sum(reals_of[n].num_elements for n in prevs)
    dg = sum(reals_of[n].num_elements for n in glob)
    # Rank between dp (a filter step always has enough rows) and the dim (compressed).
    w, s, k = canonical_rank(w, s, k, dp, 2 * dp + dg)
    if host is not None:
        w, s, k = to_backend(widest(*(g.white_vec for g in gaussians), *(t.data for t in tensors)),
                             (w, s, k))
    power = None if has_time or duration == 1 else duration
    reals = {n: reals_of[n] for n in prevs + glob + currs}
    return GaussianChain(w, s, k, dp, dg, power, bints, reals, duration)


def gaussian_terms(trans) -> tuple[list, list] | None:
    """``(gaussians, dense)``: the Gaussian and the Tensor/Number terms of a step that is a
    sum of them with at least one Gaussian, built eagerly (a ``Contraction``) or under
    ``lazy`` (a tree of ``Binary(add)``); None for any other term.

    Example:
        >>> from interpretations import lazy
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> with lazy:
        ...     step = g + g + fc.Number(1.0)
        >>> [len(part) for part in gaussian_terms(step)]
        [2, 1]
    """
    gaussians, dense, todo = [], [], [trans]
    while todo:
        term = todo.pop()
        if isinstance(term, Gaussian):
            gaussians.append(term)
        elif isinstance(term, (Tensor, Number)):
            dense.append(term)
        elif type(term) is Binary and term.op is ops.add:
            todo += [term.rhs, term.lhs]
        elif is_gaussian_sum(term):
            todo += reversed(term.terms)
        else:
            return None
    return (gaussians, dense) if gaussians else None


def canonical_rank(w, s, k, low: int, high: int):
    """A square root of rank between ``low`` and ``high``: a wider one is compressed (its
    constant moves to ``k``), a narrower one padded with zero columns (no information, the
    density is unchanged). Decided from shapes only, so it is the same under ``jax.jit``.

    Example:
        >>> w, s, k = canonical_rank(np.ones(1), np.ones((2, 1)), np.zeros(()), 2, 2)
        >>> s.shape
        (2, 2)
    """
    rank = s.shape[-1]
    if rank > high:
        w, s, shift = gm.compress(w, s)
        rank = s.shape[-1]
        k = ops.add(k, shift)
    if rank < low:
        batch = tuple(s.shape[:-2])
        w = ops.cat([w, ops.new_zeros(w, batch + (low - rank,))], -1)
        s = ops.cat([s, ops.new_zeros(s, batch + (s.shape[-2], low - rank))], -1)
    return w, s, k


# -- composing two factors ---------------------------------------------------------------------
def _embed(s, blocks: tuple, sizes: dict, order: tuple):
    # The rows of ``s`` (its blocks in ``blocks`` order) placed in ``order``, with zero rows
    # (no information) for the blocks it lacks.
    starts, at = {}, 0
    for b in blocks:
        starts[b] = at
        at += sizes[b]
    batch, rank = tuple(s.shape[:-2]), s.shape[-1]
    parts = []
    for b in order:
        if not sizes[b]:
            continue
        if b in starts:
            parts.append(s[..., starts[b]:starts[b] + sizes[b], :])
        else:
            parts.append(ops.new_zeros(s, batch + (sizes[b], rank)))
    return parts[0] if len(parts) == 1 else ops.cat(parts, -2)


def compose(a, a_blocks: tuple, b, b_blocks: tuple, out: tuple, sizes: dict, check,
            optimistic: bool = False, maximize: bool = False):
    """Integrate block ``"m"`` out of the sum of factors ``a`` and ``b``.

    Each factor is ``(w, s, k)``; ``a_blocks``/``b_blocks`` name the blocks of its rows in
    order, ``out`` the blocks of the result's rows; ``sizes`` maps blocks to their sizes.
    ``check``: None to give ``+inf`` where the integral diverges, else a label for the
    ``ValueError`` raised on concrete arrays. ``maximize``: the max over ``"m"`` instead of
    the integral (the same elimination, less the integral's ``0.5 dm log 2 pi -
    log|R_m|``). ``optimistic``: see ``arrays.marginalize``
    (traced arrays: a NaN constant where the rank tests would have had to run).

    Example:
        >>> w, s = gm.from_mean_covariance(np.zeros(2), np.eye(2))
        >>> z = np.zeros(())
        >>> r = compose((w, s, z), ("p", "m"), (w, s, z), ("m", "c"), ("p", "c"),
        ...             {"p": 1, "m": 1, "c": 1}, None)
        >>> # f = -(p^2 + m^2) / 2 - (m^2 + c^2) / 2; log int exp(-m^2) dm = log sqrt(pi)
        >>> r[1].shape, bool(np.isclose(r[2], 0.5 * np.log(np.pi)))
        ((2, 2), True)
    """
    order = ("m",) + out
    wa, sa, ka = a
    wb, sb, kb = b
    s = ops.cat([_embed(sa, a_blocks, sizes, order), _embed(sb, b_blocks, sizes, order)], -1)
    w = ops.cat([wa, wb], -1)
    dm = sizes["m"]
    if dm == 0:
        w2, s2, shift = gm.compress(w, s)
        return w2, s2, ops.add(ops.add(ka, kb), shift)
    w2, s2, log_norm = gm.marginalize(w, s, range(dm), check=check is not None, names=check,
                                      optimistic=optimistic)
    if maximize:
        log_norm = _max_constant(log_norm, s[..., :dm, :], dm)
    return w2, s2, ops.add(ops.add(ka, kb), log_norm)


def _max_constant(log_norm, s_m, dm: int):
    # max_m f = log int exp f dm - 0.5 dm log 2 pi + 0.5 log det(S_m S_m'); +inf stays +inf
    # (a direction of m that nothing bounds).
    half_logdet = ops.mul(0.5, ops.logdet(ops.matmul(s_m, ops.transpose(s_m, -1, -2))))
    value = ops.add(ops.sub(log_norm, 0.5 * dm * math.log(2 * math.pi)), half_logdet)
    return ops.where(log_norm == math.inf, log_norm, value)


# -- the two strategies ------------------------------------------------------------------------
def _mm(a, b, sizes, check, maximize: bool = False):
    return compose(a, ("p", "g", "m"), b, ("m", "g", "c"), ("p", "g", "c"), sizes, check,
                   maximize=maximize)


def _index(f, t):
    return tuple(x[t] for x in f)


def _tree(chain, sizes, check):
    f = (chain.w, chain.s, chain.k)
    tails = []
    while f[0].shape[0] > 1:
        n = f[0].shape[0]
        if n % 2:
            tails.append(_index(f, n - 1))
            f = tuple(x[:n - 1] for x in f)
        f = _mm(tuple(x[0::2] for x in f), tuple(x[1::2] for x in f), sizes, check)
    result = _index(f, 0)
    for tail in reversed(tails):
        result = _mm(result, tail, sizes, check)
    return result


def _power(f, n: int, sizes, check):
    return repeated_squaring(lambda a, b: _mm(a, b, sizes, check), f, n)


def _loop(fn, carry, xs, scan):
    if scan is not None:
        return scan(lambda c, x: (fn(c, x), None), carry, xs)[0]
    for t in range(xs[0].shape[0]):
        carry = fn(carry, _index(xs, t))
    return carry


def _sequential(chain, sizes, check, scan):
    f = (chain.w, chain.s, chain.k)
    if f[0].shape[0] == 1:
        return _index(f, 0)
    return _loop(lambda acc, x: _mm(acc, x, sizes, check), _index(f, 0),
                 tuple(x[1:] for x in f), scan)


def _run(strategy, check, scan, chain):
    # Every step of rank exactly D, so that composing two always gives rank D again.
    dim = 2 * chain.dp + chain.dg
    w, s, k = canonical_rank(chain.w, chain.s, chain.k, dim, dim)
    chain = GaussianChain(w, s, k, chain.dp, chain.dg, chain.power, chain.batch, chain.reals,
                          chain.duration)
    sizes = {"p": chain.dp, "g": chain.dg, "m": chain.dp, "c": chain.dp}
    if chain.power is not None:
        return _power(_index((chain.w, chain.s, chain.k), 0), chain.power, sizes, check)
    if strategy == "sequential":
        return _sequential(chain, sizes, check, scan)
    return _tree(chain, sizes, check)


@cached("chains.gaussian_scan.programs", maxsize=256)
def _compiled(strategy, dp, dg, power, backend):
    def fn(w, s, k):
        chain = GaussianChain(w, s, k, dp, dg, power, None, None, None)
        if strategy != "sequential" and power is None and w.shape[0] > 1:
            # The tree in Gram form, the QR tree in a cond where its checks fail.
            dim = 2 * dp + dg
            out = gram_tree_traced(*canonical_rank(w, s, k, dim, dim), dp, dg,
                                   lambda: _run(strategy, None, backend.scan, chain))
            if out is not None:
                return out
        return _run(strategy, None, backend.scan, chain)

    return backend.jit(fn)


def block_product(w, s, k, dp: int, dg: int, strategy: str) -> tuple:
    """The product ``(w, s, k)`` of the steps of a Gaussian chain given as arrays with a
    leading time axis (rows ``[prev, glob, curr]``), by this module's kernel (compiled once
    per structure where the backend compiles), for callers that split the time themselves
    (``algorithms.sharding``).

    Example:
        >>> w, s = gm.from_mean_covariance(np.zeros(2), np.eye(2))
        >>> r = block_product(w[None], s[None], np.zeros(1), 1, 0, "sequential")
        >>> r[1].shape
        (2, 2)
    """
    backend = backend_of(w)
    if backend.COMPILES:
        return _compiled(strategy, dp, dg, None, backend)(w, s, k)
    return _run(strategy, None, None, GaussianChain(w, s, k, dp, dg, None, None, None, None))


def markov_gaussian(chain: GaussianChain, step: tuple, step_names: tuple, strategy):
    """The Markov product of a Gaussian chain: ``Gaussian + Tensor`` over the batch inputs
    and the free names of the first prev and last curr states (and the globals).

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2),
        ...                 inputs={"x": fc.Real, "y": fc.Real})
        >>> c = gaussian_chain_parts(ops.logaddexp, ops.add, g, fc.Variable("t", fc.Bint[2]),
        ...                          (("x", "y"),))
        >>> sorted(markov_gaussian(c, (("x", "y"),), (("x", "y"),), "sequential").inputs)
        ['x', 'y']
    """
    w = chain.w
    backend = backend_of(w)
    batch = math.prod(d.size for d in chain.batch.values())
    problem = chain_problem(w, chain.dp, batch, chain.duration, False, True)
    strategy = resolve_strategy(strategy, problem)
    label = f"the chain's inner states ({', '.join(c for _, c in step)})"
    host = _host_gram(strategy, chain, backend) if backend.COMPILES else None
    if host is not None:
        w2, s2, k2 = host
    elif backend.COMPILES:
        w2, s2, k2 = _compiled(strategy, chain.dp, chain.dg, chain.power, backend)(
            chain.w, chain.s, chain.k)
        if diverged(k2):  # eager jax: rerun with the checks, to raise as numpy does
            _run(strategy, label, None, chain)
            raise ValueError(f"cannot marginalize {label}: the integral diverges")
    else:
        w2, s2, k2 = _eager_run(strategy, label, chain)
    free = {}
    for (p, c), (fp, fcurr) in zip(step, step_names):
        free[p], free[c] = fp, fcurr
    reals = {free.get(n, n): d for n, d in chain.reals.items()}
    return gaussian_result(w2, s2, k2, chain.batch, reals)


def _eager_run(strategy, label, chain):
    # The tree in Gram form where its checks pass (a Cholesky of the shared state's block
    # per merge instead of a QR of the stacked system and its rank tests), else the QR path.
    if strategy != "sequential" and chain.power is None and chain.w.shape[0] > 1:
        dim = 2 * chain.dp + chain.dg
        w, s, k = canonical_rank(chain.w, chain.s, chain.k, dim, dim)
        out = gram_tree(w, s, k, chain.dp, chain.dg)
        if out is not None:
            return out
    return _run(strategy, label, None, chain)


def _host_gram(strategy, chain, backend):
    # Concrete arrays of a compiling backend on the CPU (eager jax): the Gram tree on numpy
    # views, as numpy runs it, instead of compiling the kernel with both of its branches
    # (the compile is seconds; numpy's tree of a 100-step chain is a few ms). None where it
    # declines or the arrays are traced or on a device: the compiled kernel runs.
    view = getattr(backend, "host_view", None)
    if (view is None or strategy == "sequential" or chain.power is not None
            or chain.w.shape[0] < 2):
        return None
    arrays = [view(x) for x in (chain.w, chain.s, chain.k)]
    if any(a is None for a in arrays):
        return None
    host = GaussianChain(*arrays, chain.dp, chain.dg, None, None, None, None)
    dim = 2 * chain.dp + chain.dg
    out = gram_tree(*canonical_rank(host.w, host.s, host.k, dim, dim), chain.dp, chain.dg)
    return None if out is None else to_backend(widest(chain.w, chain.s), out)


def diverged(k) -> bool:
    """Whether a compiled chain's constant ``k`` is concrete (eager, not traced under
    ``jax.jit``) and ``+inf`` somewhere: an integral diverged, which the compiled kernel does
    not check (a traced value cannot raise), but an eager array can and must.

    Example:
        >>> diverged(np.array([0.0, np.inf])), diverged(np.zeros(2))
        (True, False)
    """
    return ops.known_true(k, lambda a: ops.any(a == math.inf))


def gaussian_result(w, s, k, batch: dict, reals: dict):
    """``Gaussian + Tensor`` over the Bint inputs ``batch`` and the real inputs ``reals`` (in
    the order of the rows of ``s``), built through the constructors.

    Example:
        >>> r = gaussian_result(np.zeros(1), np.ones((1, 1)), np.zeros(()), {}, {"x": fc.Real})
        >>> type(r).__name__, r.inputs
        ('Contraction', {'x': Real})
    """
    if not reals:
        proto, host = k, host_copies(w, k)  # small eager arrays: atoms.gaussian.host
        if host is not None:
            w, k = host
        value = ops.add(k, ops.mul(-0.5, ops.sum(w * w, -1)))
        return Tensor(value if host is None else to_backend(proto, (value,))[0], dict(batch))
    inputs = dict(batch)
    inputs.update(reals)
    return Gaussian(white_vec=w, prec_sqrt=s, inputs=inputs) + Tensor(k, dict(batch))
