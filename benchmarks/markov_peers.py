"""The programs ``benchmarks/markov.py`` times: hand-written torch and jax code, dynamax,
funsor 0.4.8 and funsor-core, for an HMM log likelihood and a Kalman filter log likelihood.

All compute the same numbers (``markov.py`` checks them against each other before timing).

HMM: states ``x_{-1} .. x_{T-1}``; ``init`` (K,) log weights of ``x_{-1}``, ``trans`` (K, K)
log transition weights, ``obs`` (T, B, K) log likelihoods of the observation at step t given
``x_t``; B independent sequences share ``init`` and ``trans``. The log likelihood is
``log sum_x exp(init[x_{-1}] + sum_t trans[x_{t-1}, x_t] + obs[t, b, x_t])``, one per b.

Kalman: ``x_t = F x_{t-1} + N(0, Q)``, ``y_t = H x_t + N(0, R)``, ``x_{-1} ~ N(m0, P0)``.
"""

from __future__ import annotations

import math

import numpy as np

# -- HMM: hand-written torch ----------------------------------------------------------------------


def torch_hmm_sequential(init, trans, obs):
    import torch

    alpha = init.expand(obs.shape[1], -1)
    for t in range(obs.shape[0]):
        alpha = torch.logsumexp(alpha[:, :, None] + trans, dim=-2) + obs[t]
    return torch.logsumexp(alpha, dim=-1)


def _torch_log_matmul(a, b):
    import torch

    return torch.logsumexp(a[..., :, :, None] + b[..., None, :, :], dim=-2)


def torch_hmm_log_depth(init, trans, obs):
    import torch

    mats = trans + obs[:, :, None, :]  # (T, B, K, K)
    tails = []
    while mats.shape[0] > 1:
        n = mats.shape[0]
        if n % 2:
            tails.append(mats[-1])
            mats = mats[:-1]
        mats = _torch_log_matmul(mats[0::2], mats[1::2])
    total = mats[0]
    for tail in reversed(tails):
        total = _torch_log_matmul(total, tail)
    return torch.logsumexp(init[:, None] + total, dim=(-2, -1))


# -- HMM: hand-written jax (to be jitted) ---------------------------------------------------------


def jax_hmm_sequential(init, trans, obs):
    import jax
    import jax.numpy as jnp

    def step(alpha, o):
        return jax.nn.logsumexp(alpha[:, :, None] + trans, axis=-2) + o, None

    alpha0 = jnp.broadcast_to(init, (obs.shape[1], init.shape[0]))
    alpha, _ = jax.lax.scan(step, alpha0, obs)
    return jax.nn.logsumexp(alpha, axis=-1)


def jax_hmm_sequential_scaled(init, trans, obs):
    # Probability space with a max shift per step, as dynamax's filter: K exps per step.
    import jax
    import jax.numpy as jnp

    shift = trans.max(0)
    e = jnp.exp(trans - shift)

    def step(alpha, o):
        m = alpha.max(-1, keepdims=True)
        return jnp.log(jnp.exp(alpha - m) @ e) + m + shift + o, None

    alpha0 = jnp.broadcast_to(init, (obs.shape[1], init.shape[0]))
    alpha, _ = jax.lax.scan(step, alpha0, obs)
    return jax.nn.logsumexp(alpha, axis=-1)


def jax_hmm_log_depth(init, trans, obs):
    import jax

    def mm(a, b):
        return jax.nn.logsumexp(a[..., :, :, None] + b[..., None, :, :], axis=-2)

    mats = trans + obs[:, :, None, :]
    tails = []
    while mats.shape[0] > 1:
        n = mats.shape[0]
        if n % 2:
            tails.append(mats[-1])
            mats = mats[:-1]
        mats = mm(mats[0::2], mats[1::2])
    total = mats[0]
    for tail in reversed(tails):
        total = mm(total, tail)
    return jax.nn.logsumexp(init[:, None] + total, axis=(-2, -1))


def jax_hmm_eager_loop(init, trans, obs):
    """The hand-written loop run op by op (no jit): the eager-jax baseline."""
    import jax

    alpha = init
    for t in range(obs.shape[0]):
        alpha = jax.nn.logsumexp(alpha[..., :, None] + trans, axis=-2) + obs[t]
    return jax.nn.logsumexp(alpha, axis=-1)


# -- HMM: dynamax ---------------------------------------------------------------------------------


def dynamax_hmm(parallel: bool):
    """dynamax's HMM filter (sequential or parallel), vmapped over the batch, or None."""
    try:
        import jax
        import jax.numpy as jnp

        _dynamax_compat()
        if parallel:
            from dynamax.hidden_markov_model.parallel_inference import hmm_filter
        else:
            from dynamax.hidden_markov_model.inference import hmm_filter
    except Exception:
        return None

    def run(init, trans, obs):
        # dynamax starts at x_0 (no transition before the first observation): its initial
        # distribution is ours pushed through one transition, computed inside the timing.
        log_p0 = jax.nn.logsumexp(init[:, None] + trans, axis=0)
        z0 = jax.nn.logsumexp(log_p0)
        p0 = jnp.exp(log_p0 - z0)
        a = jnp.exp(trans)

        def one(o):
            return hmm_filter(p0, a, o).marginal_loglik

        return jax.vmap(one, in_axes=1)(obs) + z0

    return run


# -- HMM: funsor 0.4.8 ----------------------------------------------------------------------------


def funsor_hmm(backend: str):
    """funsor 0.4.8's MarkovProduct program (as funsor.pyro.hmm writes it), or None."""
    try:
        import funsor
        import funsor.util

        funsor.set_backend(backend)
    except Exception:
        return None
    import sys
    from collections import OrderedDict

    if funsor.util._JAX_COMPILED_FUNCTION_TYPE is None and "jax" in sys.modules:
        # funsor 0.4.8 fills this only when its own backend is jax, but reads it whenever jax
        # is imported: with funsor-core's jax loaded in the same process, its torch backend
        # would fail on isinstance(x, None).
        import jax

        funsor.util._JAX_COMPILED_FUNCTION_TYPE = type(jax.jit(lambda: 0))

    from funsor.sum_product import MarkovProduct

    def run(init, trans, obs):
        T, B, K = obs.shape
        i = funsor.Tensor(init, OrderedDict(x_prev=funsor.Bint[K]))
        a = funsor.Tensor(trans, OrderedDict(x_prev=funsor.Bint[K], x_curr=funsor.Bint[K]))
        o = funsor.Tensor(obs, OrderedDict(time=funsor.Bint[T], b=funsor.Bint[B],
                                           x_curr=funsor.Bint[K]))
        chain = MarkovProduct(funsor.ops.logaddexp, funsor.ops.add, a + o, "time",
                              {"x_prev": "x_curr"})
        chain = chain.reduce(funsor.ops.logaddexp, "x_curr")
        return (i + chain).reduce(funsor.ops.logaddexp, "x_prev").data

    return run


# -- HMM: funsor-core -----------------------------------------------------------------------------


def funsor_core_hmm(strategy=None):
    """The HMM log likelihood as a funsor-core program: the chain is built lazily (so that its
    shared transition matrix and per-step observations stay apart), and contracting it with
    its initial factor, summing every state, evaluates it as a filter."""
    import funsor_core as fc
    from funsor_core import ops
    from interpretations import lazy

    def run(init, trans, obs):
        T, B, K = obs.shape
        i = fc.Tensor(init, {"x_prev": fc.Bint[K]})
        a = fc.Tensor(trans, {"x_prev": fc.Bint[K], "x_curr": fc.Bint[K]})
        o = fc.Tensor(obs, {"time": fc.Bint[T], "b": fc.Bint[B], "x_curr": fc.Bint[K]})
        with lazy:
            chain = fc.MarkovProduct(ops.logaddexp, ops.add, a + o, "time",
                                     {"x_prev": "x_curr"}, strategy=strategy)
        return (i + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"}).data

    return run


def numpy_hmm_oracle(init, trans, obs):
    alpha = np.broadcast_to(init, (obs.shape[1], init.shape[0]))
    for t in range(obs.shape[0]):
        z = alpha[:, :, None] + trans
        m = z.max(1, keepdims=True)
        alpha = (np.log(np.exp(z - m).sum(1)) + m[:, 0]) + obs[t]
    m = alpha.max(-1, keepdims=True)
    return np.log(np.exp(alpha - m).sum(-1)) + m[:, 0]


# -- Kalman ---------------------------------------------------------------------------------------


def kalman_model(rng, dim=4, obs_dim=2, steps=100):
    a = rng.normal(size=(dim, dim))
    f = 0.95 * a / np.abs(np.linalg.eigvals(a)).max()
    q = 0.1 * np.eye(dim) + 0.05 * np.ones((dim, dim)) / dim
    h = rng.normal(size=(obs_dim, dim))
    r = 0.5 * np.eye(obs_dim)
    m0, p0 = np.zeros(dim), np.eye(dim)
    x = rng.multivariate_normal(m0, p0)
    ys = []
    for _ in range(steps):
        x = f @ x + rng.multivariate_normal(np.zeros(dim), q)
        ys.append(h @ x + rng.multivariate_normal(np.zeros(obs_dim), r))
    return dict(F=f, Q=q, H=h, R=r, m0=m0, P0=p0, ys=np.array(ys))


def numpy_kalman(F, Q, H, R, m0, P0, ys):
    m, p, total = m0, P0, 0.0
    for y in ys:
        m, p = F @ m, F @ p @ F.T + Q
        s = H @ p @ H.T + R
        e = y - H @ m
        c = np.linalg.cholesky(s)
        z = np.linalg.solve(c, e)
        total += -0.5 * (z @ z) - np.log(np.diag(c)).sum() - 0.5 * len(y) * math.log(2 * math.pi)
        k = np.linalg.solve(s, H @ p).T
        m, p = m + k @ e, p - k @ H @ p
    return total


def jax_kalman(F, Q, H, R, m0, P0, ys):
    import jax
    import jax.numpy as jnp

    def step(carry, y):
        m, p, total = carry
        m, p = F @ m, F @ p @ F.T + Q
        s = H @ p @ H.T + R
        e = y - H @ m
        c = jnp.linalg.cholesky(s)
        z = jax.scipy.linalg.solve_triangular(c, e, lower=True)
        total = total - 0.5 * (z @ z) - jnp.log(jnp.diag(c)).sum() \
            - 0.5 * y.shape[-1] * math.log(2 * math.pi)
        k = jax.scipy.linalg.cho_solve((c, True), H @ p).T
        return (m + k @ e, p - k @ H @ p, total), None

    return jax.lax.scan(step, (m0, P0, jnp.zeros((), ys.dtype)), ys)[0][2]


def _dynamax_compat():
    # dynamax 1.0.3 runs on tensorflow-probability 0.25's jax substrate, which reads
    # jax.interpreters.xla.pytype_aval_mappings at import: jax 0.4.36 moved it to jax.core
    # (the same table). dynamax is not a dependency: put it on PYTHONPATH to get its rows
    # (benchmarks/README.md, "dynamax").
    import jax
    import jax.interpreters.xla as xla

    if not hasattr(xla, "pytype_aval_mappings"):
        xla.pytype_aval_mappings = jax._src.core.pytype_aval_mappings


def dynamax_kalman(parallel: bool):
    """dynamax's Kalman filter log likelihood (sequential or parallel), or None."""
    try:
        import jax.numpy as jnp

        _dynamax_compat()
        from dynamax.linear_gaussian_ssm.inference import (
            ParamsLGSSM,
            ParamsLGSSMDynamics,
            ParamsLGSSMEmissions,
            ParamsLGSSMInitial,
        )

        if parallel:
            from dynamax.linear_gaussian_ssm.parallel_inference import lgssm_filter
        else:
            from dynamax.linear_gaussian_ssm.inference import lgssm_filter
    except Exception:
        return None

    def run(F, Q, H, R, m0, P0, ys):
        d, e = F.shape[0], H.shape[0]
        # dynamax starts at x_0: our x_{-1} prior pushed through one transition.
        params = ParamsLGSSM(
            initial=ParamsLGSSMInitial(mean=F @ m0, cov=F @ P0 @ F.T + Q),
            dynamics=ParamsLGSSMDynamics(weights=F, bias=jnp.zeros(d),
                                         input_weights=jnp.zeros((d, 0)), cov=Q),
            emissions=ParamsLGSSMEmissions(weights=H, bias=jnp.zeros(e),
                                           input_weights=jnp.zeros((e, 0)), cov=R))
        return lgssm_filter(params, ys).marginal_loglik

    return run


def funsor_core_kalman(F, Q, H, R, m0, P0, ys, strategy=None):
    """The Kalman log likelihood as a funsor-core program: a Gaussian transition shared by
    every step plus a Gaussian observation factor per step, their Markov product (built
    lazily) contracted with the prior, every state integrated out: exact runs it as a Kalman
    filter. Builds with the active backend's arrays."""
    import funsor_core as fc
    from funsor_core import ops
    from interpretations import lazy

    T, d = ys.shape[0], F.shape[0]
    e = H.shape[0]
    inputs = {"x_prev": fc.Reals[d], "x_curr": fc.Reals[d]}
    # log N(x_curr; F x_prev, Q) = -0.5 || [x_prev, x_curr] @ [[-F' L], [L]] ||^2 + c, with
    # Q^-1 = L L' (L lower Cholesky factor of the precision).
    lq = _chol_of_inverse(Q)
    lr = _chol_of_inverse(R)
    trans_sqrt = _cat_rows(-(F.T @ lq), lq)
    trans = fc.Gaussian(white_vec=ops.new_zeros(lq, (d,)), prec_sqrt=trans_sqrt, inputs=inputs)
    obs_sqrt = ops.expand((H.T @ lr)[None], (T, d, e))
    obs = fc.Gaussian(white_vec=ys @ lr, prec_sqrt=obs_sqrt,
                      inputs={"time": fc.Bint[T], "x_curr": fc.Reals[d]})
    prior = fc.Gaussian(mean=m0, covariance=P0, inputs={"x_prev": fc.Reals[d]})
    const = (-0.5 * T * (d + e) - 0.5 * d) * math.log(2 * math.pi) \
        - T * _half_logdet(Q) - T * _half_logdet(R) - _half_logdet(P0)
    step = trans + obs
    with lazy:
        chain = fc.MarkovProduct(ops.logaddexp, ops.add, step, "time", {"x_prev": "x_curr"},
                                 strategy=strategy)
    total = (prior + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"})
    return total.data + const


def _chol_of_inverse(c):
    # A square root of c^{-1}: with c = L L', c^{-1} = L^{-T} L^{-1}, so L^{-T} (one Cholesky
    # and one triangular inverse, where inverting then factoring takes an LU and a Cholesky).
    from funsor_core import ops

    return ops.transpose(ops.triangular_inv(ops.cholesky(c)))


def _cat_rows(a, b):
    from funsor_core import ops

    return ops.cat([a, b], 0)


def _half_logdet(c):
    # 0.5 log det c = sum log diag(L) for c = L L' (no LU, no pivot parity loop).
    from funsor_core import ops

    return ops.sum(ops.log(ops.diagonal(ops.cholesky(c))), axis=-1)
