"""The gradient of a compiled program with respect to a declared functional parameter is the
model's (h73 torch, h78 jax): autograd of the same model as one einsum without the
declaration is the oracle, with the same expression compiled without the declaration and
central finite differences of np.einsum; the jointree replicates the tables (several
copies each), and the value stays the fast run's. Before h73: the replicated product's
gradient (e.g. [[3.3, 9.0], [11.2, 16.8]] for the model's [[0.6, 4.5], [5.6, 7.0]]);
before h78 NaN under jax."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from interpretations import lazy

RNG = np.random.default_rng(3)
PU = RNG.random(3)
A, B, C = RNG.random((3, 2)), RNG.random((3, 2)), RNG.random((2, 2))
W = RNG.random((3, 2))
G = np.eye(3)[[2, 0, 0]]  # x = g(u), used by A, B and F: three copies
F = np.eye(2)[[1, 0, 1]]  # y = f(x), used by C twice (y with a and y with b)
EINSUM = "u,ux,xy,xa,xb,ya,yb,ua->a"  # the kept name a: a vector output


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def _tables(g, f, w, log=False):
    t = [PU, g, f, A, B, C, C, w]
    return [_log(x) if log and x is not g and x is not f and x is not w else x for x in t]


def _program(log, to, declare=True):
    const = {"pu": (PU, "u"), "a": (A, "xa"), "b": (B, "xb"), "c1": (C, "ya"), "c2": (C, "yb")}
    t = {k: fc.Tensor(to(_log(v) if log else v), {n: fc.Bint[3 if n in "ux" else 2]
                                                     for n in names})
         for k, (v, names) in const.items()}
    g = fc.Variable("g", fc.Reals[3, 3])["u", "x"]
    f = fc.Variable("f", fc.Reals[3, 2])["x", "y"]
    w = fc.Variable("w", fc.Reals[3, 2])["u", "a"]
    sum_op, prod_op = (ops.logaddexp, ops.add) if log else (ops.add, ops.mul)
    with lazy:
        expr = fc.sum_product(sum_op, prod_op, [t["pu"], g, f, t["a"], t["b"], t["c1"],
                                                t["c2"], w], frozenset("uxyb"))
    if not declare:  # the model's own elimination, each table once: an oracle
        return fc.compile(expr, method="jointree")
    prog = fc.compile(expr, functional={"x": g, "y": f}, method="jointree")
    assert prog.plan.stats()["leaves"] > 8  # replicated
    return prog


def _fd(fn, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        grad[i] = (fn(x + d) - fn(x - d)) / (2 * eps)
    return grad


R = RNG.random(2)  # the loss: R . output


def test_torch_linear_gradient_is_the_models():
    torch = pytest.importorskip("torch")
    prog = _program(False, torch.tensor)
    tg, tf, tw = (torch.tensor(x, requires_grad=True) for x in (G, F, W))
    out = prog(g=tg, f=tf, w=tw)
    (out * torch.tensor(R)).sum().backward()
    og, of, ow = (torch.tensor(x, requires_grad=True) for x in (G, F, W))
    ref = torch.einsum(EINSUM, *[torch.tensor(x) if not torch.is_tensor(x) else x
                                 for x in _tables(og, of, ow)])
    (ref * torch.tensor(R)).sum().backward()
    for mine, oracle in ((tg, og), (tf, of), (tw, ow)):
        np.testing.assert_allclose(mine.grad.numpy(), oracle.grad.numpy(), rtol=1e-12)
    # finite differences of the model (np.einsum), entries where the table is 0 included
    np.testing.assert_allclose(tg.grad.numpy(), _fd(
        lambda g: R @ np.einsum(EINSUM, *_tables(g, F, W)), G), rtol=1e-6)
    np.testing.assert_allclose(tf.grad.numpy(), _fd(
        lambda f: R @ np.einsum(EINSUM, *_tables(G, f, W)), F), rtol=1e-6)
    # the value is the fast run's, bit for bit
    fast = prog(g=torch.tensor(G), f=torch.tensor(F), w=torch.tensor(W))
    assert torch.equal(out.detach(), fast)
    np.testing.assert_allclose(fast.numpy(), np.einsum(EINSUM, *_tables(G, F, W)), rtol=1e-12)


def test_torch_log_gradient_is_the_models():
    torch = pytest.importorskip("torch")
    prog = _program(True, torch.tensor)
    lg, lf, lw = (torch.tensor(_log(x), requires_grad=True) for x in (G, F, W))
    out = prog(g=lg, f=lf, w=lw)
    (out * torch.tensor(R)).sum().backward()
    og, of, ow = (torch.tensor(_log(x), requires_grad=True) for x in (G, F, W))
    # oracle: log of the einsum of the exponentiated tables (every table enters once)
    ref = torch.log(torch.einsum(EINSUM, *[torch.exp(t) if torch.is_tensor(t)
                                           else torch.tensor(t) for t in _tables(og, of, ow)]))
    (ref * torch.tensor(R)).sum().backward()
    for mine, oracle in ((lg, og), (lf, of), (lw, ow)):
        np.testing.assert_allclose(mine.grad.numpy(), oracle.grad.numpy(), rtol=1e-12,
                                   atol=1e-15)
    fast = prog(g=torch.tensor(_log(G)), f=torch.tensor(_log(F)), w=torch.tensor(_log(W)))
    assert torch.equal(out.detach(), fast)


def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


def test_jax_gradient_is_the_models_under_jit():
    # Oracle: jax.grad of the model as one jnp.einsum (each table once), the same expression
    # compiled without the declaration, and central finite differences of np.einsum.
    jax, jnp = _jax()
    prog = _program(False, np.asarray)
    plain = _program(False, np.asarray, declare=False)

    def loss(p, g, f, w):
        return jnp.dot(jnp.asarray(R), p(g=g, f=f, w=w))

    def model(g, f, w):
        return jnp.dot(jnp.asarray(R), jnp.einsum(EINSUM, *_tables(g, f, w)))

    args = tuple(jnp.asarray(x) for x in (G, F, W))
    run = jax.jit(lambda *a: [jax.value_and_grad(fn, argnums=(0, 1, 2))(*a) for fn in (
        lambda *b: loss(prog, *b), lambda *b: loss(plain, *b), model)])
    (value, grads), (_, plain_grads), (_, oracle) = run(*args)
    for mine, other, exact in zip(grads, plain_grads, oracle):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(exact), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(mine), np.asarray(other), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(grads[0]), _fd(
        lambda g: R @ np.einsum(EINSUM, *_tables(g, F, W)), G), rtol=1e-6)
    # the value is the fast run's (numpy's, the same plan) and the model's
    np.testing.assert_allclose(float(value), R @ prog(g=G, f=F, w=W), rtol=1e-15)
    np.testing.assert_allclose(float(value), R @ np.einsum(EINSUM, *_tables(G, F, W)),
                               rtol=1e-12)


def test_torch_over_budget_raises_naming_the_parameters():
    torch = pytest.importorskip("torch")
    prog = _program(False, torch.tensor)
    tg = torch.tensor(G, requires_grad=True)
    with fc.memory_budget(8):
        with pytest.raises(fc.MemoryBudgetError, match=r"gradient .*\['g'\].*declared functional"):
            prog(g=tg, f=torch.tensor(F), w=torch.tensor(W))
        # not differentiated: the fast run, as before (torch's no_grad included)
        out = prog(g=torch.tensor(G), f=torch.tensor(F), w=torch.tensor(W))
        with torch.no_grad():
            assert torch.equal(prog(g=tg, f=torch.tensor(F), w=torch.tensor(W)), out)
    np.testing.assert_allclose(out.numpy(), np.einsum(EINSUM, *_tables(G, F, W)), rtol=1e-12)


def test_numpy_runs_the_fast_plan_alone():
    prog = _program(False, np.asarray)
    out = prog(g=G, f=F, w=W)
    arrays_run = prog.plan.runs
    np.testing.assert_allclose(out, np.einsum(EINSUM, *_tables(G, F, W)), rtol=1e-12)
    prog(g=G, f=F, w=W)
    assert prog.plan.runs == arrays_run + 1  # one plan run per call: no gradient runs


def test_torch_random_networks_match_the_undeclared_program():
    # Random networks, several declared tables replicated: every parameter's gradient equals
    # the one of the same expression compiled without declarations (no replication), and
    # the brute-force marginal is the value.
    torch = pytest.importorskip("torch")
    from .networks import brute_force, random_network
    from .test_program import _symbolic

    checked = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        factors, cards = random_network(rng, 9, 0.6)
        keep = ("v2",)
        expr, params, declared, _ = _symbolic(factors, cards, ops.add, ops.mul,
                                              set(cards) - set(keep))
        program = fc.compile(expr, functional=declared, method="jointree")
        leaves = program.plan.tree.leaf_factor
        if len(leaves) == len(set(leaves)):
            continue
        plain = fc.compile(expr, method="jointree")
        grads = []
        for prog in (program, plain):
            tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
            out = prog(**tp)
            (out * torch.arange(1.0, 1.0 + out.numel(), dtype=out.dtype)).sum().backward()
            grads.append({k: v.grad.numpy() for k, v in tp.items()})
            np.testing.assert_allclose(out.detach().numpy(), brute_force(factors, cards, keep),
                                       rtol=1e-12)
        for k in params:
            np.testing.assert_allclose(grads[0][k], grads[1][k], rtol=1e-10, atol=1e-14)
        checked += 1
    assert checked >= 2


def test_jax_model_run_only_when_a_declared_table_is_differentiated():
    # Under a 8-byte budget the undeclared plan cannot be planned: a jit forward, a gradient
    # in w alone and one with the declared tables stop_gradient'ed trace without it (their
    # cost is the fast run's; tracing is enough to show it, values are tested above); a
    # gradient in g raises naming the declared parameters.
    jax, jnp = _jax()
    prog = _program(False, np.asarray)
    args = tuple(jnp.asarray(x) for x in (G, F, W))

    def loss(g, f, w):
        return jnp.dot(jnp.asarray(R), prog(g=g, f=f, w=w))

    def stopped(g, f, w):
        return loss(jax.lax.stop_gradient(g), jax.lax.stop_gradient(f), w)

    with fc.memory_budget(8):
        jax.jit(lambda *a: (loss(*a), jax.grad(loss, argnums=2)(*a),
                            jax.grad(stopped, argnums=(0, 1, 2))(*a))).lower(*args)
        with pytest.raises(fc.MemoryBudgetError, match=r"gradient .*\['f', 'g'\].*stop_grad"):
            jax.jit(jax.grad(loss)).lower(*args)
    jax.jit(jax.grad(loss)).lower(*args)  # within the default budget


def test_jax_vmap_gradients_are_the_models():
    # vmapped over a batch of w inside jit: jax.grad of the model as one jnp.einsum.
    jax, jnp = _jax()
    prog = _program(False, np.asarray)
    ws = RNG.random((2, 3, 2))

    def loss(g, f, w):
        return jnp.dot(jnp.asarray(R), prog(g=g, f=f, w=w))

    def model(g, f, w):
        return jnp.dot(jnp.asarray(R), jnp.einsum(EINSUM, *_tables(g, f, w)))

    g, f = jnp.asarray(G), jnp.asarray(F)
    run = jax.jit(lambda w: [jax.vmap(jax.value_and_grad(fn, argnums=(0, 1, 2)),
                                      in_axes=(None, None, 0))(g, f, w)
                             for fn in (loss, model)])
    (value, grads), (oracle_value, oracle) = run(jnp.asarray(ws))
    np.testing.assert_allclose(np.asarray(value), np.asarray(oracle_value), rtol=1e-12)
    for mine, exact in zip(grads, oracle):
        np.testing.assert_allclose(np.asarray(mine), np.asarray(exact), rtol=1e-12)
    for b in range(2):
        np.testing.assert_allclose(float(value[b]), R @ prog(g=G, f=F, w=ws[b]), rtol=1e-13)


def test_second_derivatives():
    # Hessians against the model's (one einsum): jax forward-over-reverse in (g, w),
    # reverse-over-reverse in g, and a mixed one taken by reverse mode in w alone, then in g
    # (NaN before h88), also against central finite differences of np.einsum in float64
    # (exact for a model bilinear in g and w). torch: create_graph, exact.
    jax, jnp = _jax()
    torch = pytest.importorskip("torch")
    prog = _program(False, np.asarray)
    args = tuple(jnp.asarray(x) for x in (G, F, W))

    def loss(g, f, w):
        return jnp.dot(jnp.asarray(R), prog(g=g, f=f, w=w))

    def model(g, f, w):
        return jnp.dot(jnp.asarray(R), jnp.einsum(EINSUM, *_tables(g, f, w)))

    def second(fn, g, f, w):
        return (jax.hessian(fn, argnums=(0, 2))(g, f, w),
                jax.grad(lambda g: jax.grad(fn)(g, f, w).sum())(g),
                jax.grad(lambda g: jax.grad(fn, argnums=2)(g, f, w).sum())(g))

    run = jax.jit(lambda *a: [second(fn, *a) for fn in (loss, model)])
    (hess, gg, mixed), (hess_o, gg_o, mixed_o) = run(*args)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(np.asarray(hess[i][j]), np.asarray(hess_o[i][j]),
                                       rtol=1e-12, atol=1e-15)
    assert np.abs(np.asarray(hess_o[0][1])).max() > 0.01  # a real mixed term
    np.testing.assert_allclose(np.asarray(gg), np.asarray(gg_o), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.asarray(mixed), np.asarray(mixed_o), rtol=1e-12, atol=1e-15)
    assert np.abs(np.asarray(mixed_o)).max() > 0.01

    def bilinear(g, w):  # d/dg of sum(d/dw): (L(+,+) - L(+,-) - L(-,+) + L(-,-)) / 4 e e
        return R @ np.einsum(EINSUM, *_tables(g, F, w))

    eps, fd = 1e-3, np.zeros_like(G)
    for i in np.ndindex(G.shape):
        d = np.zeros_like(G)
        d[i] = eps
        fd[i] = sum(s * t * bilinear(G + s * d, W + t * eps) for s in (1, -1) for t in (1, -1))
    np.testing.assert_allclose(np.asarray(mixed), fd / (4 * eps * eps), rtol=1e-7, atol=1e-9)

    tprog = _program(False, torch.tensor)
    tg, tw = torch.tensor(G, requires_grad=True), torch.tensor(W, requires_grad=True)
    og, ow = torch.tensor(G, requires_grad=True), torch.tensor(W, requires_grad=True)
    mine = (tprog(g=tg, f=torch.tensor(F), w=tw) * torch.tensor(R)).sum()
    ref = (torch.einsum(EINSUM, *[torch.tensor(x) if not torch.is_tensor(x) else x
                                  for x in _tables(og, F, ow)]) * torch.tensor(R)).sum()
    for out, (g, w) in ((mine, (tg, tw)), (ref, (og, ow))):
        (dw,) = torch.autograd.grad(out, (w,), create_graph=True)
        out.grad_pair = torch.autograd.grad(dw.sum(), (g,))[0]  # d/dg of sum(d/dw)
    np.testing.assert_allclose(mine.grad_pair.numpy(), ref.grad_pair.numpy(), rtol=1e-12)
    assert ref.grad_pair.abs().max() > 0.01
