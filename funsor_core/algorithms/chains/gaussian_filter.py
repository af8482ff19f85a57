"""Gaussian chains with their boundaries summed inside: Kalman filters on arrays.

``contract_markov_gaussian`` evaluates ``Contraction(logaddexp, add, V, (mp, *others))``
for a Gaussian ``MarkovProduct`` ``mp`` when ``V`` integrates its first prev states (or
last curr states) out: the Gaussian factors of those states (a prior over the first state)
are the boundary: the filter's first carry (or, of another rank, folded into the first
step). The sequential carry is a Gaussian over ``[glob, state]`` only: a Kalman filter,
whose step is one QR of a ``(dp + dg + rank) x (2 dp + dg)`` system instead of composing
two transition densities (``3 dp + dg`` wide). Global reals (a sensor bias) ride along in
the carry and stay free.

The parallel strategy composes the steps by ``scan_gaussian``'s tree, then the boundaries.
Under jax the whole computation is one compiled kernel (``lax.scan`` for the filter),
cached by its static structure; the first eager call of a structure on host arrays runs in
numpy instead (a program run once never earns back seconds of compilation).

Example:
    >>> from interpretations import lazy
    >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2),
    ...                 inputs={"x": fc.Real, "y": fc.Real})
    >>> with lazy:
    ...     mp = fc.MarkovProduct(ops.logaddexp, ops.add, g, fc.Variable("t", fc.Bint[3]),
    ...                           {"x": "y"})
    >>> prior = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> value, rest, names = contract_markov_gaussian(ops.logaddexp, ops.add,
    ...                                               frozenset({"x", "y"}), mp, [prior])
    >>> # x0 twice (prior and step 0: sqrt(pi)), x1, x2 twice (sqrt(pi)), x3 once (sqrt(2 pi))
    >>> bool(np.isclose(value.data, 1.5 * np.log(np.pi) + 0.5 * np.log(2 * np.pi)))
    True
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import chain_problem, resolve_strategy
from funsor_core.algorithms.chains.gaussian_scan import (
    GaussianChain,
    _power,
    _tree,
    canonical_rank,
    compose,
    diverged,
    gaussian_chain_parts,
    gaussian_result,
)
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.algebra import dense_sum
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian
from funsor_core.atoms.gaussian.host import host_copies
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import cached

__all__ = ["boundary_arrays", "contract_markov_gaussian"]

_DIVERGED = ("cannot marginalize the chain's inner states: their precision is singular "
             "somewhere (the integral diverges); add information on them")


def _classify(others, fp, fc, glob, batch, reduced_vars):
    # Boundary factors: Gaussians over (some of) the first prevs (last currs), the globals
    # and batch names; everything else stays outside the chain.
    left, right, rest = [], [], []
    for t in others:
        reals = {n for n, d in t.inputs.items() if d.dtype == "real"}
        bints = {n for n, d in t.inputs.items() if d.dtype != "real"}
        if isinstance(t, Gaussian) and bints <= batch and reals & fp and reals <= fp | glob:
            left.append(t)
        elif isinstance(t, Gaussian) and bints <= batch and reals & fc and reals <= fc | glob:
            right.append(t)
        else:
            rest.append(t)
    outside = set().union(*(t.inputs for t in rest))
    use_left = fp <= reduced_vars and not outside & fp
    use_right = fc <= reduced_vars and not outside & fc
    if not use_left:
        rest += left
        left = []
    if not use_right:
        rest += right
        right = []
    return use_left, use_right, left, right, rest


def boundary_arrays(terms, layout: dict, proto, rank_low: int):
    """The sum of Gaussian ``terms`` as ``(w, s, k)`` arrays over ``layout`` (batch dims,
    then the rows in the filter carry's order), of rank at least ``rank_low``; flat (no
    information) where there is no term.

    Example:
        >>> w, s, k = boundary_arrays([], {"x": fc.Real}, np.zeros(1), 0)
        >>> s.shape
        (1, 0)
    """
    batch = tuple(d.size for d in layout.values() if d.dtype != "real")
    dim = sum(d.num_elements for d in layout.values() if d.dtype == "real")
    ws, ss = [], []
    for g in terms:
        w, s = align_gaussian(layout, g, expand=True)
        ws.append(w)
        ss.append(s)
    if not ws:
        w, s = ops.new_zeros(proto, batch + (0,)), ops.new_zeros(proto, batch + (dim, 0))
    else:
        w = ops.cat(ws, -1) if len(ws) > 1 else ws[0]
        s = ops.cat(ss, -1) if len(ss) > 1 else ss[0]
    return canonical_rank(w, s, ops.new_zeros(proto, batch), rank_low, 10 ** 9)


def _index(f, t):
    return tuple(x[t] for x in f)


def _filter(chain, left, right, sizes, check, scan, optimistic=False):
    # Forward (with a left boundary) or backward (right only) filter; the carry is
    # (w, s, k) over [glob, state] (forward) or [state, glob] (backward), of rank dp + dg.
    f = (chain.w, chain.s, chain.k)
    width = sizes["m"] + sizes["g"]
    if left is not None:
        def step(c, x):
            out = compose(c, ("g", "m"), x, ("m", "g", "c"), ("g", "c"), sizes, check,
                          optimistic)
            return canonical_rank(*out, width, width)

        carry = _loop(step, *_start(left, f, width, step, False), False, scan)
        if right is None:
            return carry
        return _last(carry, right, sizes, check, optimistic)

    def back(c, x):
        out = compose(x, ("p", "g", "m"), c, ("m", "g"), ("p", "g"), sizes, check, optimistic)
        return canonical_rank(*out, width, width)

    return _loop(back, *_start(right, f, width, back, True), True, scan)


def _start(bound, f, width: int, step, reverse: bool):
    # The loop's first carry and steps. A boundary of the carry's shape (rank dp + dg, rows
    # already in the carry's order) is the first carry, so every step runs in the loop and
    # nothing is sliced off the steps; otherwise the first step is composed with it outside.
    n = f[0].shape[0]
    if bound[1].shape[-1] == width and bound[1].dtype == f[1].dtype:
        return bound, f, n
    t, rest = (n - 1, slice(0, n - 1)) if reverse else (0, slice(1, n))
    return step(bound, _index(f, t)), tuple(x[rest] for x in f), n - 1


def _last(carry, right, sizes, check, optimistic):
    # The right boundary composed with a forward filter's carry [g, m]. Without globals
    # and with no information in the boundary (rank 0), this integrates the carry's state:
    # its square root is R.T of the last step's QR, already triangular, so no QR is needed.
    w, s, k = carry
    if sizes["g"] or right[1].shape[-1]:
        return compose(carry, ("g", "m"), right, ("m", "g"), ("g",), sizes, check, optimistic)
    w2, s2, log_norm = gm.marginalize(w, s, range(sizes["m"]), check=check is not None,
                                      names=check, optimistic=optimistic, triangular=True)
    return w2, s2, ops.add(ops.add(k, right[2]), log_norm)


def _loop(fn, carry, xs, n, reverse, scan):
    if n == 0:
        return carry
    if scan is not None:
        return scan(lambda c, x: (fn(c, x), None), carry, xs, reverse=reverse)[0]
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        carry = fn(carry, _index(xs, t))
    return carry


def _ends(total, left, right, sizes, check):
    # A composed chain (p, g, c) with its boundaries.
    if left is not None:
        total = compose(left, ("g", "m"), total, ("m", "g", "c"), ("g", "c"), sizes, check)
        if right is None:
            return total
        return compose(total, ("g", "m"), right, ("m", "g"), ("g",), sizes, check)
    return compose(total, ("p", "g", "m"), right, ("m", "g"), ("p", "g"), sizes, check)


def _run(strategy, check, scan, chain, left, right, optimistic=False):
    sizes = {"p": chain.dp, "g": chain.dg, "m": chain.dp, "c": chain.dp}
    dim = 2 * chain.dp + chain.dg
    if chain.power is None and strategy == "sequential":
        return _filter(chain, left, right, sizes, check, scan, optimistic)
    w, s, k = canonical_rank(chain.w, chain.s, chain.k, dim, dim)
    if chain.power is not None:
        total = _power(_index((w, s, k), 0), chain.power, sizes, check)
    else:
        matrix = GaussianChain(w, s, k, chain.dp, chain.dg, None, None, None, None)
        total = _tree(matrix, sizes, check)
    return _ends(total, left, right, sizes, check)


@cached("chains.gaussian_filter.programs", maxsize=256)
def _compiled(strategy, dp, dg, power, has_left, has_right, backend):

    def fn(w, s, k, left, right):
        chain = GaussianChain(w, s, k, dp, dg, power, None, None, None)
        return _run(strategy, None, backend.scan, chain, left if has_left else None,
                    right if has_right else None)

    if strategy != "sequential" or power is not None:
        return backend.jit(fn)

    # The filter runs first without the rank tests of its steps wherever a cheap bound shows
    # they would change nothing (a third of a Kalman step); a step the bound cannot decide
    # makes the total NaN, and the filter then runs again with the tests (lax.cond). The
    # second run is checkpointed: reverse mode keeps only its inputs, and recomputes it only
    # when it is the branch taken.
    exact = backend.checkpoint(fn)

    def optimistic(w, s, k, left, right):
        chain = GaussianChain(w, s, k, dp, dg, power, None, None, None)
        result = _run(strategy, None, backend.scan, chain, left if has_left else None,
                      right if has_right else None, optimistic=True)
        constant = ops.detach(result[-1])
        undecided = ops.any(constant != constant)
        return backend.cond(undecided, lambda _: exact(w, s, k, left, right),
                                lambda _: result, None)

    return backend.jit(optimistic)


# Eager (untraced) calls of a compiling backend's chain kernel on host arrays run op by op
# in numpy until they have done about one compilation's worth of work; then the structure
# (shapes included) compiles. Compiling costs seconds per new shape (a 100-step Kalman
# filter: 2-3 s of XLA against 10 ms of numpy), which a program run a few times never earns
# back, and a loop earns back once it has paid as much on the host (ski rental: at most
# twice the cost of the better choice in hindsight). Decided by counts of array entries, not
# clocks, so a program takes the same route on every machine. The first call of a structure
# runs on the host up to HOST_EAGER_MAX entries; later ones while the host runs of that
# structure stay within HOST_BUDGET entries in all (a 100-step scalar chain: ~100 calls,
# about a second of numpy). benchmarks/latency.py has the rows.
HOST_EAGER_MAX = 1 << 20
HOST_BUDGET = 1 << 16


@cached("chains.gaussian_filter.host_runs", maxsize=256)
def _host_runs(key) -> list:
    return [0, 0]  # eager calls of this structure run on the host, and their entries in all


def _leaves(arrays) -> list:
    out = []
    for a in arrays:
        if isinstance(a, (tuple, list)):
            out.extend(_leaves(a))
        elif a is not None:
            out.append(a)
    return out


def _host_eager(problem, structure: tuple, arrays) -> bool:
    # Whether this eager call runs in numpy (see HOST_BUDGET).
    if problem.device != "cpu":
        return False
    leaves = _leaves(arrays)
    if not all(ops.is_concrete(a) for a in leaves):
        return False
    shapes = tuple(tuple(a.shape) for a in leaves)
    entries = sum(math.prod(shape) for shape in shapes)
    runs = _host_runs(structure + shapes + tuple(str(a.dtype) for a in leaves))
    limit = HOST_EAGER_MAX if runs[0] == 0 else HOST_BUDGET
    if runs[1] + entries > limit:
        return False
    runs[0] += 1
    runs[1] += entries
    return True


def _to_host(a):
    if isinstance(a, (tuple, list)):
        return type(a)(_to_host(x) for x in a)
    return None if a is None else ops.to_numpy(a)


def _run_on_host(chain, left, right, label, batch_size, requested):
    # The numpy kernel on host copies (the same _run the numpy backend calls, with numpy's
    # strategy), its results returned as arrays of the chain's backend and dtype.
    proto = chain.w
    host = [_to_host(a) for a in (chain.w, chain.s, chain.k, left, right)]
    copy = GaussianChain(*host[:3], chain.dp, chain.dg, chain.power, None, None, None)
    problem = chain_problem(host[0], chain.dp, batch_size, chain.duration, True, True)
    strategy = resolve_strategy(requested, problem)
    return tuple(ops.new_array(proto, a) for a in _run(strategy, label, None, copy, host[3],
                                                       host[4]))


def contract_markov_gaussian(red_op, bin_op, reduced_vars: frozenset, mp, others: list):
    """``Contraction(red_op, bin_op, reduced_vars, (mp, *others))`` for a Gaussian chain whose
    first prev or last curr states are integrated out, with the Gaussian factors of those
    states folded in as boundaries (see the module docstring).

    Returns ``(value, rest, remaining_vars)`` as ``markov_tensor.contract_markov_tensor``,
    or None when no boundary is integrated inside the chain.

    Example:
        A random walk ``exp(-(y - x)^2 / 2)`` over 3 steps after ``exp(-x^2 / 2)``: each of
        the four factors integrates to ``sqrt(2 pi)``.

        >>> from interpretations import lazy
        >>> step = fc.Gaussian(white_vec=np.zeros((3, 1)),
        ...                    prec_sqrt=np.tile([[1.0], [-1.0]], (3, 1, 1)),
        ...                    inputs={"t": fc.Bint[3], "x": fc.Real, "y": fc.Real})
        >>> with lazy:
        ...     mp = fc.MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x": "y"})
        >>> prior = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> value, rest, names = contract_markov_gaussian(ops.logaddexp, ops.add,
        ...                                               frozenset("xy"), mp, [prior])
        >>> bool(np.isclose(value.data, 4 * 0.5 * np.log(2 * np.pi))), rest, names
        (True, [], frozenset())
    """
    if red_op not in (ops.logaddexp, ops.sample) or bin_op not in (None, ops.add):
        return None
    chain = gaussian_chain_parts(mp.sum_op, mp.prod_op, mp.trans, mp.time, mp.step)
    if chain is None:
        return None
    free = mp.free_names
    fp = {free[p] for p, _ in mp.step}
    fc = {free[c] for _, c in mp.step}
    names = list(chain.reals)
    dp, dg = chain.dp, chain.dg
    prevs = names[:len(mp.step)]
    glob = names[len(mp.step):len(names) - len(mp.step)]
    currs = names[len(names) - len(mp.step):]
    use_left, use_right, left, right, rest = _classify(
        others, fp, fc, set(glob), set(chain.batch), reduced_vars)
    if not (use_left or use_right):
        return None
    proto = chain.w
    bounds = []
    globs = [(n, chain.reals[n]) for n in glob]
    for use, terms, states, forward in ((use_left, left, prevs, True),
                                        (use_right, right, currs, False)):
        if not use:
            bounds.append(None)
            continue
        states = [(free[n], chain.reals[n]) for n in states]
        # Rows in the filter carry's order: [glob, state] forward, [state, glob] backward.
        rows = globs + states if forward else states + globs
        bounds.append(boundary_arrays(terms, {**chain.batch, **dict(rows)}, proto, 0))
    left_arr, right_arr = bounds
    backend = backend_of(proto)
    batch_size = math.prod(d.size for d in chain.batch.values())
    problem = chain_problem(proto, dp, batch_size, chain.duration, True, True)
    strategy = resolve_strategy(mp.strategy, problem)
    label = f"the chain's states ({', '.join(c for _, c in mp.step)})"
    structure = (strategy, dp, dg, chain.power, use_left, use_right, backend.NAME)
    if backend.COMPILES and _host_eager(problem, structure, (chain.w, chain.s, chain.k,
                                                             left_arr, right_arr)):
        w, s, k = _run_on_host(chain, left_arr, right_arr, label, batch_size, mp.strategy)
    elif backend.COMPILES:
        w, s, k = _compiled(strategy, dp, dg, chain.power, use_left, use_right, backend)(
            chain.w, chain.s, chain.k, left_arr, right_arr)
        if diverged(k):  # eager jax: rerun with the checks, to raise as numpy does
            _run(strategy, label, None, chain, left_arr, right_arr)
            raise ValueError(_DIVERGED)
    else:
        w, s, k = _run(strategy, label, None, chain, left_arr, right_arr)
    # The carry's rows: [glob, curr] after a forward filter, [prev, glob] after a backward
    # one, [glob] with both boundaries.
    reals = {}
    if use_left and use_right:
        reals.update((n, chain.reals[n]) for n in glob)
    elif use_left:
        reals.update((n, chain.reals[n]) for n in glob)
        reals.update((free[n], chain.reals[n]) for n in currs)
    else:
        reals.update((free[n], chain.reals[n]) for n in prevs)
        reals.update((n, chain.reals[n]) for n in glob)
    value, rest = _fold_constants(gaussian_result(w, s, k, chain.batch, reals), rest)
    summed = (fp if use_left else set()) | (fc if use_right else set())
    return value, rest, reduced_vars - summed


def _fold_constants(value, rest: list) -> tuple:
    # The contraction that follows adds the chain's value and the terms beside it before
    # reducing anything, so adding the real Tensors among them to a Tensor value here is
    # exact; done only where the arrays are small and eager on a compiling backend (they add
    # on the host, atoms.gaussian.host, instead of compiling a generic add per shape).
    if type(value) is not Tensor or host_copies(value.data) is None:
        return value, rest
    same = [type(t) is Tensor and t.output == value.output for t in rest]
    if not any(same):
        return value, rest
    value = dense_sum([value] + [t for t, s in zip(rest, same) if s])
    return value, [t for t, s in zip(rest, same) if not s]
