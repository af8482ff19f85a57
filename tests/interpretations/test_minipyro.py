"""``funsor.minipyro`` (``interpretations.minipyro`` and ``minipyro_infer``): the small Pyro of
funsor 0.4.8's ``examples/minipyro.py`` and of ``pyroapi``'s ``"funsor"`` backend.

Oracles: ELBOs by brute-force enumeration of every discrete assignment (torch, autograd for the
gradients), the Normal-Normal ELBO in closed form (Gaussian expectations of quadratics plus the
entropy), ``torch.optim.Adam`` and Pyro's ``ClippedAdam`` as peers for the optimizers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.domains import Bint, Real
from interpretations import minipyro as mp
from interpretations import minipyro_infer as mi

torch = pytest.importorskip("torch")
pyro = pytest.importorskip("pyro")
constraints = torch.distributions.constraints


@pytest.fixture(autouse=True)
def _torch_backend():
    fc.set_backend("torch")
    mp.clear_param_store()
    yield
    mp.clear_param_store()
    fc.set_backend("numpy")


def _dist():
    from funsor_core.torch import distributions
    return distributions


DATA = torch.tensor([0.4, -1.3, 2.1, 0.2])
PROBS0 = torch.tensor([0.2, 0.5, 0.3])
LOCS0 = torch.tensor([-1.0, 0.5, 2.0])


def _discrete_model():
    dist = _dist()
    probs = mp.param("probs", PROBS0, constraint=constraints.simplex)
    locs = mp.param("locs", LOCS0)
    with mp.plate("data", len(DATA), dim=-1):
        x = mp.sample("x", dist.Categorical(probs))
        mp.sample("obs", dist.Normal(locs[x], 1.0), obs=DATA)


Q0 = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]])


def _discrete_guide():
    dist = _dist()
    with mp.plate("data", len(DATA), dim=-1):
        q = mp.param("q", Q0, constraint=constraints.simplex, event_dim=1)
        mp.sample("x", dist.Categorical(q))


def _store(name):
    unconstrained, constraint, _, _ = mp.get_param_store()[name]
    return unconstrained, torch.distributions.transform_to(constraint)(unconstrained)


def test_enum_elbo_and_its_gradient_equal_brute_force_enumeration():
    loss = mi.TraceEnum_ELBO()(_discrete_model, _discrete_guide)
    assert not loss.inputs
    (uq, q), (up, p), (ul, locs) = _store("q"), _store("probs"), _store("locs")
    grads = torch.autograd.grad(fc.to_data(loss), (uq, up, ul))
    # sum over n and every x_n in 0..2 of q[n, x] (log p[x] + log N(d_n; locs[x], 1) - log q[n, x])
    log_lik = torch.distributions.Normal(locs, 1.0).log_prob(DATA[:, None])
    expected = -(q * (p.log() + log_lik - q.log())).sum()
    want = torch.autograd.grad(expected, (uq, up, ul))
    assert torch.allclose(fc.to_data(loss), expected)
    for g, w in zip(grads, want):
        assert torch.allclose(g, w)


def test_model_only_sites_are_summed_out_exactly():
    # a global discrete z the guide does not sample: the loss is -log sum_z p(z) prod_n p(d_n|z)
    dist = _dist()
    pz, mu = torch.tensor([0.3, 0.7]), torch.tensor([-1.0, 1.5])

    def model():
        z = mp.sample("z", dist.Categorical(pz))
        with mp.plate("data", len(DATA)):
            mp.sample("obs", dist.Normal(fc.Tensor(mu)[z], 1.0), obs=DATA)

    loss = mi.TraceEnum_ELBO()(model, lambda: None)
    per_z = pz.log() + torch.distributions.Normal(mu[:, None], 1.0).log_prob(DATA).sum(-1)
    assert torch.allclose(fc.to_data(loss), -per_z.logsumexp(0))


def _normal_model(data):
    dist = _dist()
    x = mp.sample("x", dist.Normal(0.0, 1.0))
    with mp.plate("data", len(data)):
        mp.sample("obs", dist.Normal(x, 1.0), obs=data)


def _normal_guide(data):
    dist = _dist()
    m = mp.param("m", torch.tensor(0.3))
    s = mp.param("s", torch.tensor(0.7), constraint=constraints.positive)
    mp.sample("x", dist.Normal(m, s))


@pytest.mark.parametrize("elbo", [mi.Trace_ELBO, mi.TraceEnum_ELBO, mi.JitTrace_ELBO,
                                  mi.TraceMeanField_ELBO])
def test_normal_normal_elbo_equals_the_closed_form(elbo):
    loss = elbo()(_normal_model, _normal_guide, DATA)
    (um, m), (us, s) = _store("m"), _store("s")
    # E_q log N(y; x, 1) = -log(2 pi)/2 - ((y - m)^2 + s^2)/2 for x ~ N(m, s);
    # H(q) = log(s sqrt(2 pi e))
    ys = torch.cat([torch.zeros(1), DATA])
    expected = -((-0.5 * math.log(2 * math.pi) - 0.5 * ((ys - m) ** 2 + s ** 2)).sum()
                 + 0.5 * math.log(2 * math.pi * math.e) + s.log())
    assert torch.allclose(fc.to_data(loss), expected)
    got = torch.autograd.grad(fc.to_data(loss), (um, us))
    want = torch.autograd.grad(expected, (um, us))
    assert all(torch.allclose(g, w) for g, w in zip(got, want))


def _adam_by_hand(x, grads, lr, betas, eps=1e-8, clip=None, lrd=1.0):
    # Kingma and Ba's Algorithm 1 in numpy; with ``clip``: Pyro's ClippedAdam (gradients
    # clamped, the learning rate times lrd^t at step t)
    x, m, v = np.array(x, dtype=float), 0.0, 0.0
    for t, g in enumerate(grads, 1):
        g = np.asarray(g, dtype=float) if clip is None else np.clip(g, -clip, clip)
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        m_hat, v_hat = m / (1 - betas[0] ** t), v / (1 - betas[1] ** t)
        x = x - lr * lrd ** t * m_hat / (np.sqrt(v_hat) + eps)
    return x


def test_adam_and_clipped_adam_step_like_algorithm_1_by_hand():
    rng = np.random.default_rng(0)
    start, grads = rng.normal(size=5), [rng.normal(size=5) * 20 for _ in range(4)]
    for ours, want in [(mi.Adam({"lr": 0.05, "betas": (0.8, 0.99)}),
                        _adam_by_hand(start, grads, 0.05, (0.8, 0.99))),
                       (mi.ClippedAdam({"lr": 0.05, "clip_norm": 3.0, "lrd": 0.9}),
                        _adam_by_hand(start, grads, 0.05, (0.9, 0.999), clip=3.0, lrd=0.9))]:
        a = torch.tensor(start, requires_grad=True)
        for grad in grads:
            a.grad = torch.tensor(grad)
            ours([a])
        assert np.allclose(a.detach().numpy(), want)


def test_svi_steps_adam_on_the_closed_form_gradient():
    # three steps: each loss and parameter as Adam by hand on the Normal-Normal ELBO's gradient
    svi = mi.SVI(_normal_model, _normal_guide, mi.Adam({"lr": 0.1}), mi.Trace_ELBO())
    n, total = len(DATA), float(DATA.sum())
    u = np.array([0.3, math.log(0.7)])  # m and log s, the unconstrained parameters
    grads, losses = [], []
    for _ in range(3):
        m, s = u[0], math.exp(u[1])
        # loss = (n + 1)/2 log(2 pi) + sum_y ((y - m)^2 + s^2)/2 - log(s sqrt(2 pi e)), y in {0, d}
        sq = float(((torch.cat([torch.zeros(1), DATA]) - m) ** 2).sum())
        losses.append((n + 1) / 2 * math.log(2 * math.pi) + (sq + (n + 1) * s * s) / 2
                      - 0.5 * math.log(2 * math.pi * math.e) - math.log(s))
        grads.append(np.array([(n + 1) * m - total, (n + 1) * s * s - 1]))
        u = _adam_by_hand(np.array([0.3, math.log(0.7)]), grads, 0.1, (0.9, 0.999))
        assert math.isclose(svi.step(DATA), losses[-1], rel_tol=1e-9)
        got = [mp.get_param_store()[k][0].item() for k in ("m", "s")]
        assert np.allclose(got, u)


def test_sites_params_and_plates_become_named_inputs():
    dist = _dist()
    with mp.trace() as tr:
        with mp.plate("i", 3, dim=-1):
            local = mp.param("local", torch.ones(3, 2), event_dim=1)
            y = mp.sample("y", dist.Normal(0.0, 1.0))
            obs = mp.sample("obs", dist.Normal(0.0, 1.0), obs=torch.tensor([1.0, 2.0, 3.0]))
    assert dict(local.inputs) == {"i": Bint[3]} and local.output == fc.Reals[2]
    assert dict(y.inputs) == {"i": Bint[3]} and y.output == Real
    assert torch.equal(obs.data, torch.tensor([1.0, 2.0, 3.0]))
    assert list(tr) == ["local", "y", "obs"]
    assert dict(mp.param("local").inputs) == {"i": Bint[3]}  # the store keeps the plates
    lp = tr["obs"]["fn"].log_prob(obs)
    assert torch.allclose(lp.data, torch.distributions.Normal(0.0, 1.0).log_prob(obs.data))


def test_seed_replay_block_and_condition():
    dist = _dist()

    def model():
        return mp.sample("x", dist.Normal(0.0, 1.0))

    with mp.seed(rng_seed=3):
        a = model()
    before = torch.get_rng_state()
    with mp.seed(rng_seed=3):
        b = model()
    assert torch.equal(a.data, b.data) and torch.equal(torch.get_rng_state(), before)
    with mp.trace() as tr:
        mp.replay(model, trace={"x": {"value": fc.Tensor(torch.tensor(5.0))}})()
    assert float(tr["x"]["value"].data) == 5.0
    with mp.trace() as tr:
        mp.block(model, hide=["x"])()
    assert "x" not in tr
    assert float(mp.condition(model, data={"x": torch.tensor(-2.0)})().data) == -2.0


def test_errors_name_the_site_and_plate():
    dist = _dist()
    with pytest.raises(ValueError, match="site 'obs' has size 4 at dim -1.*plate 'i' of size 3"):
        with mp.trace(), mp.plate("i", 3, dim=-1):
            mp.sample("obs", dist.Normal(0.0, 1.0), obs=DATA)
    with pytest.raises(KeyError, match="param 'nope' has no value"):
        mp.param("nope")
    with pytest.raises(ValueError, match="two sample sites are named 'x'"):
        with mp.trace():
            mp.sample("x", dist.Normal(0.0, 1.0))
            mp.sample("x", dist.Normal(0.0, 1.0))
    with pytest.raises(TypeError, match="free 'value' input"):
        mp.sample("x", fc.Tensor(torch.zeros(2)))


def test_funsor_minipyro_is_served_under_install_as_funsor():
    from funsor_core.install import SOURCES
    assert SOURCES["minipyro"] == ("interpretations.minipyro", "interpretations.minipyro_infer")
    assert SOURCES["compat.ops"][0] == "funsor_core.compat.array_ops"


def test_model_only_local_site_and_a_refused_coupling():
    # a plate-local discrete site the guide lacks: sum_n log sum_x p(x) N(d_n; mu[x], 1)
    dist = _dist()
    px, mu = torch.tensor([0.4, 0.6]), torch.tensor([0.0, 2.0])

    def model():
        with mp.plate("data", len(DATA)):
            x = mp.sample("x", dist.Categorical(px))
            mp.sample("obs", dist.Normal(fc.Tensor(mu)[x], 1.0), obs=DATA)

    loss = mi.TraceEnum_ELBO()(model, lambda: None)
    lik = px.log() + torch.distributions.Normal(mu, 1.0).log_prob(DATA[:, None])
    assert torch.allclose(fc.to_data(loss), -lik.logsumexp(-1).sum())

    # a global site only the model has, above a plate whose sites the guide samples: refused
    def coupled():
        z = mp.sample("z", dist.Categorical(px))
        with mp.plate("data", len(DATA)):
            y = mp.sample("y", dist.Normal(fc.Tensor(mu)[z], 1.0))
            mp.sample("obs", dist.Normal(y, 1.0), obs=DATA)

    def guide():
        with mp.plate("data", len(DATA)):
            mp.sample("y", dist.Normal(0.0, 1.0))

    with pytest.raises(NotImplementedError, match="model's site 'z' is outside plate"):
        mi.TraceEnum_ELBO()(coupled, guide)

