"""What funsor 0.4.8's own examples (examples/adam.py, talbot.py, pcfg.py, vae.py and the
named-tensor tutorial) need from funsor-core: the ``Adam`` interpretation, user
``StatefulInterpretation`` kinds, ``term.pretty()``/``term.quote()``, ``print`` of a Tensor
showing its values, and ``function`` of a torch module.

Oracles: Adam's Algorithm 1 (Kingma and Ba) in numpy with gradients derived by hand; the quadratic's
minimizer in closed form; the array's own ``str``; the module called on the raw arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.compat.stateful import StatefulInterpretation
from funsor_core.domains import Bint, Real, Reals
from interpretations import Adam

torch = pytest.importorskip("torch")


def _adam_by_hand(grad_fn, starts: dict, steps: int, lr: float, betas=(0.9, 0.999),
                  eps=1e-8) -> dict:
    # Algorithm 1 of Kingma and Ba (2015), in numpy, with a gradient derived by hand.
    p = {k: np.asarray(v, dtype=np.float64).copy() for k, v in starts.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v2 = {k: np.zeros_like(v) for k, v in p.items()}
    for t in range(1, steps + 1):
        g = grad_fn(**p)
        for k in p:
            m[k] = betas[0] * m[k] + (1 - betas[0]) * g[k]
            v2[k] = betas[1] * v2[k] + (1 - betas[1]) * g[k] ** 2
            m_hat, v_hat = m[k] / (1 - betas[0] ** t), v2[k] / (1 - betas[1] ** t)
            p[k] = p[k] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return p


def _regression(seed=0, n=12, p=3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, p, generator=g, dtype=torch.float64)
    y = torch.randn(n, generator=g, dtype=torch.float64)
    return x, y


def test_adam_min_steps_like_algorithm_1_by_hand():
    # examples/adam.py: an L1 regression minimized over a vector weight and a scalar bias
    x, y = _regression()
    data, truth = fc.Tensor(x)["n"], fc.Tensor(y)["n"]
    w, b = fc.Variable("w", Reals[3]), fc.Variable("b", Real)
    loss = (b + w @ data - truth).abs().reduce(ops.add, "n")
    starts = {"w": torch.full((3,), 0.1, dtype=torch.float64),
              "b": torch.tensor(-0.2, dtype=torch.float64)}
    with Adam(15, lr=0.05, betas=(0.8, 0.99), params={k: fc.Tensor(v) for k, v in
                                                        starts.items()}) as optim:
        best = loss.reduce(ops.min, {"w", "b"})
    xn, yn = x.numpy(), y.numpy()

    def grad(w, b):  # d/dw sum|b + x w - y| = x^T sign(r), d/db = sum sign(r)
        r = np.sign(b + xn @ w - yn)
        return {"w": xn.T @ r, "b": r.sum()}

    expected = _adam_by_hand(grad, {k: v.numpy() for k, v in starts.items()}, 15, lr=0.05,
                             betas=(0.8, 0.99))
    for k in ("w", "b"):
        np.testing.assert_allclose(optim.param(k).data.numpy(), expected[k], rtol=1e-9)
    want = np.abs(expected["b"] + xn @ expected["w"] - yn).sum()
    assert isinstance(best, fc.Tensor) and not best.inputs
    np.testing.assert_allclose(best.data.numpy(), want, rtol=1e-9)


def test_adam_max_and_convergence_to_the_closed_form_maximizer():
    # max_x -(x - c)^2 - (x - d)^2 is at x = (c + d) / 2, the value -(c - d)^2 / 2
    c, d = 1.5, -0.5
    x = fc.Variable("x", Real)
    gain = -(x - c) ** 2 - (x - d) ** 2
    with Adam(150, lr=0.1, params={"x": fc.Tensor(torch.tensor(3.0, dtype=torch.float64))}) \
            as optim:
        top = gain.reduce(ops.max, "x")
    assert abs(optim.param("x").item() - (c + d) / 2) < 1e-3
    assert abs(top.item() + (c - d) ** 2 / 2) < 1e-5


def test_adam_draws_a_start_for_a_parameter_it_lacks():
    # funsor draws a missing parameter from the backend's standard normal
    fc.set_backend("torch")
    try:
        torch.manual_seed(3)
        start = Adam(1).param("v", Reals[2])
    finally:
        fc.set_backend("numpy")
    torch.manual_seed(3)
    expected = torch.randn(2, dtype=start.data.dtype)
    assert start.inputs == {} and start.output == Reals[2]
    np.testing.assert_array_equal(start.data.numpy(), expected.numpy())


def test_adam_errors_name_the_problem():
    x = fc.Variable("x", Real)
    t = fc.Tensor(torch.tensor([1.0, 2.0]))["i"]
    start = {"x": fc.Tensor(torch.tensor(0.0))}
    with pytest.raises(ValueError, match=r"also has the inputs \['i'\].*reduce\(ops.add, 'i'\)"):
        with Adam(2, params=start):
            ((x - t) ** 2).reduce(ops.min, "x")
    with pytest.raises(ValueError, match=r"'i' is Bint\[2\]"):
        with Adam(2, params=start):
            ((x - t) ** 2).reduce(ops.min, {"x", "i"})
    with pytest.raises(NotImplementedError, match="numpy backend has no autograd"):
        with Adam(2, params={"x": fc.Tensor(np.array(0.0))}):
            (x ** 2).reduce(ops.min, "x")
    with pytest.raises(ValueError, match=r"Adam.param\('z'\).*known: \[\]"):
        Adam(1).param("z")


class _Scale(StatefulInterpretation):
    """A user kind in funsor's style: ``super().__init__(name)``, state on the instance."""

    def __init__(self, factor):
        super().__init__("scale")
        self.factor = factor


@_Scale.register(fc.Unary, type(ops.exp), fc.Tensor)
def scale_unary_exp_tensor(interp, op, x):
    return fc.Tensor(interp.factor * torch.exp(x.data), x.inputs)


def test_stateful_interpretation_and_adam_falls_back_to_it():
    # examples/talbot.py: Adam inside a user interpretation that evaluates part of the loss
    u = fc.Tensor(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))["n"]
    with _Scale(3.0):
        np.testing.assert_allclose(u.exp().data.numpy(), 3.0 * np.exp([0.5, -1.0, 2.0]))
    assert (u.exp().data - torch.exp(u.data)).abs().max() < 1e-12  # outside: plain exp

    a = fc.Variable("a", Real)
    loss = ((a * u).exp() - 1.0).abs().reduce(ops.add, "n")
    start = torch.tensor(0.3, dtype=torch.float64)
    with _Scale(0.5):
        with Adam(10, lr=0.1, params={"a": fc.Tensor(start)}) as optim:
            loss.reduce(ops.min, "a")
    un = u.data.numpy()

    def grad(a):  # d/da sum|0.5 e^(a u) - 1| = sum sign(r) 0.5 u e^(a u)
        e = 0.5 * np.exp(a * un)
        return {"a": (np.sign(e - 1.0) * e * un).sum()}

    expected = _adam_by_hand(grad, {"a": 0.3}, 10, lr=0.1)
    np.testing.assert_allclose(optim.param("a").item(), expected["a"], rtol=1e-9)


def test_pretty_and_quote_methods_match_the_functions():
    x = fc.Variable("x", Real)
    term = (x * 2.0).exp()
    assert term.pretty() == fc.pretty(term)
    assert term.quote() == fc.quote(term)
    ns = {"ops": ops, **{k: getattr(fc, k) for k in fc.__all__}}
    assert eval(term.quote(), ns) is term


@pytest.mark.parametrize("make", [np.array, torch.tensor])
def test_print_of_a_tensor_shows_its_values(make):
    # pcfg.py and the named-tensor tutorial print results; repr stays a summary
    scalar = fc.Tensor(make(-2.0794))
    assert str(scalar) == str(scalar.data)
    table = fc.Tensor(make([[3, 1], [4, 1]]), {"h": Bint[2]}, dtype=5)
    lines = str(table.data).split("\n")
    assert str(table) == ("Tensor(" + "\n       ".join(lines) + ", {'h': Bint[2]}, 5)")
    assert "shape=" in repr(table)


def test_function_of_a_torch_module_reads_forward_hints():
    # vae.py: funsor.function(encoder) on an nn.Module with an annotated forward
    class Affine(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 2).double()

        def forward(self, v: Reals[3]) -> Reals[2]:
            return self.lin(v)

    module = Affine()
    f = fc.function(module)
    assert f.inputs == {"v": Reals[3]} and f.output == Reals[2]
    v = torch.randn(4, 3, dtype=torch.float64)
    got = f(fc.Tensor(v)["b"])
    assert got.inputs == {"b": Bint[4]}
    np.testing.assert_allclose(got.data.detach().numpy(), module.lin(v).detach().numpy())


class _Offset(StatefulInterpretation):
    """funsor's docstring style: state only, no ``super().__init__``."""

    def __init__(self, k):
        self.k = k


@_Offset.register(fc.Unary, type(ops.exp), fc.Number)
def offset_unary_exp_number(interp, op, x):
    return fc.Number(float(np.exp(x.data)) + interp.k)


def test_stateful_interpretation_without_super_init():
    with _Offset(2.0):
        got = fc.Number(1.0).exp()
        inner = fc.Number(0.5) + fc.Number(0.25)  # no rule of its own: the entered exact
    assert got.data == pytest.approx(np.e + 2.0) and inner.data == 0.75
