"""Compile once, run many: programs from lazy sum-product expressions against brute force,
repeat calls without rewriting, batched evidence, jax.jit, gradients (torch against finite
differences, jax against brute-force posterior marginals), costs and the memory budget, and
funsor 0.4.8's test_compiler cases for compile_funsor."""

import logging

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.compiled import MemoryBudgetError
from funsor_core.compiler import compile_funsor
from funsor_core.sum_product import sum_product
from interpretations.lazy import lazy

from .networks import brute_force, random_network, term


def _symbolic(factors, cards, sum_op, prod_op, eliminate):
    # Each factor as a parameter indexed by its names; returns the lazy expression, the
    # parameter values by name, the {name: term} of the functional ones and the terms.
    terms, params, declared = [], {}, {}
    for k, f in enumerate(factors):
        t = term(f)
        names = tuple(t.inputs)
        p = fc.Variable(f"f{k}", fc.Reals[tuple(cards[n] for n in names)])[names]
        params[f"f{k}"] = t.data
        terms.append(p)
        if t is not f:
            declared[f.out] = p
    with lazy:
        expr = sum_product(sum_op, prod_op, terms, frozenset(eliminate))
    return expr, params, declared, terms


def test_compiled_program_matches_brute_force_and_reruns_without_rewriting(caplog):
    rng = np.random.default_rng(0)
    factors, cards = random_network(rng, 10, 0.6)
    keep = ("v3",)
    expr, params, declared, _ = _symbolic(factors, cards, ops.add, ops.mul, set(cards) - {"v3"})
    program = fc.compile(expr, functional=declared)
    expected = brute_force(factors, cards, keep)
    assert program.output == keep
    assert np.allclose(program(**params), expected, rtol=1e-12, atol=0)
    # A second expression of the same structure reuses the plan; a repeat call fires no rule.
    again = fc.compile(_symbolic(factors, cards, ops.add, ops.mul, set(cards) - {"v3"})[0],
                       functional=_symbolic(factors, cards, ops.add, ops.mul,
                                            set(cards) - {"v3"})[2])
    assert again.plan is program.plan
    fc.set_debug(True)
    try:
        with caplog.at_level(logging.DEBUG, logger="funsor_core.rules"):
            caplog.clear()
            program(**params)
            program(**params)
        assert [r for r in caplog.records if r.name == "funsor_core.rules"] == []
    finally:
        fc.set_debug(False)
    assert program.runs == 3


def test_batched_evidence_is_a_kept_axis():
    rng = np.random.default_rng(1)
    factors, cards = random_network(rng, 8, 0.5, evidence=0.0)
    expr_terms, params = [], {}
    for k, f in enumerate(factors):
        t = term(f)
        names = tuple(t.inputs)
        expr_terms.append(fc.Variable(f"f{k}", fc.Reals[t.data.shape])[names])
        params[f"f{k}"] = t.data
    batch = rng.random((10, cards["v5"]))  # ten soft-evidence vectors on v5
    expr_terms.append(fc.Variable("ev", fc.Reals[10, cards["v5"]])["b", "v5"])
    with lazy:
        expr = sum_product(ops.add, ops.mul, expr_terms, frozenset(cards))
    program = fc.compile(expr)
    out = program(ev=batch, **params)
    assert program.output == ("b",)
    for i in range(10):
        ev = fc.Tensor(batch[i], {"v5": fc.Bint[cards["v5"]]})
        assert np.isclose(out[i], brute_force(factors + [ev], cards), rtol=1e-12)


def test_jax_jit_and_gradient_are_posterior_marginals():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(2)
    factors, cards = random_network(rng, 7, 0.5, evidence=0.0)
    expr, params, _, terms = _symbolic(factors, cards, ops.logaddexp, ops.add, cards)
    lam = fc.Variable("lam", fc.Reals[cards["v4"]])["v4"]
    with lazy:
        expr = sum_product(ops.logaddexp, ops.add, terms + [lam], frozenset(cards))
    program = fc.compile(expr)
    with np.errstate(divide="ignore"):
        logs = {k: jnp.asarray(np.log(v)) for k, v in params.items()}
    fc.set_backend("jax")
    try:
        value_and_grad = jax.jit(jax.value_and_grad(lambda lam: program(lam=lam, **logs)))
        log_z, grad = value_and_grad(jnp.zeros(cards["v4"]))
    finally:
        fc.set_backend("numpy")
    joint = brute_force(factors, cards, ("v4",))  # d log Z / d log lambda = P(v4)
    assert np.isclose(float(log_z), np.log(joint.sum()), rtol=1e-12)
    assert np.allclose(np.asarray(grad), joint / joint.sum(), rtol=1e-10, atol=1e-12)


def test_torch_gradient_matches_finite_differences():
    import torch

    rng = np.random.default_rng(3)
    factors, cards = random_network(rng, 6, 0.5)
    expr, params, declared, _ = _symbolic(factors, cards, ops.add, ops.mul, cards)
    program = fc.compile(expr, functional=declared)
    base = next(iter(declared.values()))  # differentiate a functional table too
    while not isinstance(base, fc.Variable):
        base = base.arg
    target = base.name
    fc.set_backend("torch")
    try:
        tp = {k: torch.tensor(v, requires_grad=(k == target)) for k, v in params.items()}
        program(**tp).backward()
        grad = tp[target].grad.numpy()
    finally:
        fc.set_backend("numpy")
    eps = 1e-6
    x = params[target]
    fd = np.zeros_like(x)

    def run(value):
        # The program's own function, off the 0/1 tables too: a call refuses a perturbed
        # declared table (h71), so the finite differences run its plan unchecked.
        kw = {**params, target: value}
        return program.plan.run_arrays([kw[v] if kind == "param" else v
                                        for kind, v in program._leaves], False)

    assert np.array_equal(run(x), program(**params))
    # The oracle is the model's function: the same expression compiled without the
    # declaration (the replicated plan is a different polynomial off the 0/1 tables, h73).
    plain = fc.compile(expr)

    def model(value):
        kw = {**params, target: value}
        return plain.plan.run_arrays([kw[v] if kind == "param" else v
                                      for kind, v in plain._leaves], False)

    assert np.allclose(model(x), program(**params), rtol=1e-12)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        fd[idx] = (model(up) - model(down)) / (2 * eps)
    assert np.allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_cost_and_memory_budget_name_the_largest_cluster():
    # 100 binary names, each tied to 6 random earlier ones: a plan far beyond any memory.
    rng = np.random.default_rng(4)
    factors = [fc.Tensor(np.ones(2), {"x0": fc.Bint[2]})]
    for i in range(1, 100):
        parents = sorted({f"x{int(j)}" for j in rng.integers(0, i, size=min(i, 6))})
        inputs = {p: fc.Bint[2] for p in parents}
        inputs[f"x{i}"] = fc.Bint[2]
        factors.append(fc.Tensor(np.ones((2,) * len(inputs)), inputs))
    with pytest.raises(MemoryBudgetError, match=r"largest cluster has \d+ names .*x\d+: Bint\[2\]"):
        fc.plan(factors, frozenset(f"x{i}" for i in range(100)), memory_budget=2 ** 30)
    with fc.memory_budget(2 ** 30), pytest.raises(MemoryBudgetError, match="Nothing was allocated"):
        fc.plan(factors, frozenset(f"x{i}" for i in range(100)))
    with lazy:
        expr = sum_product(ops.add, ops.mul, factors, frozenset(f"x{i}" for i in range(100)))
    cost = fc.cost(expr)
    assert cost["peak_bytes"] > 2 ** 30 and cost["max_binary_rank"] > 20
    assert cost["flops"] >= cost["total_size"]


def test_plan_errors_are_clear():
    f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    g = fc.Tensor(np.ones((3, 2)), {"j": fc.Bint[3], "i": fc.Bint[2]})
    plan = fc.plan([f], frozenset({"j"}))
    with pytest.raises(ValueError, match="planned for"):
        plan([g])
    with pytest.raises(ImportError, match="cotengra"):
        fc.plan([f], frozenset({"j"}), method="cotengra")
    flip = fc.Tensor(np.eye(2)[::-1].copy(), {"i": fc.Bint[2], "k": fc.Bint[2]})
    with pytest.raises(NotImplementedError, match="plated plan takes Tensors"):
        fc.plan([f, fc.functional(flip, "k")], frozenset({"j"}), plates=frozenset({"i"}))
    with pytest.raises(NotImplementedError, match="semirings"):
        plan([f], ops.max, ops.add)
    with pytest.raises(ValueError, match="one domain"):
        fc.plan([f, fc.Tensor(np.ones(4), {"j": fc.Bint[4]})], frozenset())
    with pytest.raises(ValueError, match="at least one factor"):  # an IndexError before
        fc.plan([], frozenset())


# funsor 0.4.8's test/test_compiler.py, restated: each program (and its printed code) gives
# the value of substituting the same data into the expression.
def _check_compiler(expr):
    rng = np.random.default_rng(5)
    subs = {k: rng.normal(size=d.shape) if d.shape else float(rng.normal())
            for k, d in expr.inputs.items()}
    expected = expr(**subs)
    expected = tuple(a.data for a in expected.args) if isinstance(expected, fc.Tuple) \
        else expected.data
    program = compile_funsor(expr)
    env = {}
    exec(program.as_code(name="program2"), None, env)
    for actual in (program(**subs), env["program2"](**subs)):
        if isinstance(expected, tuple):
            assert all(np.allclose(a, e) for a, e in zip(actual, expected))
        else:
            assert np.allclose(actual, expected)


def test_compile_funsor_funsor_cases():
    x = fc.Variable("x", fc.Reals[3])
    _check_compiler(x)
    _check_compiler(x * x)
    y = 1 + x * x
    _check_compiler(y[0] * y[1] + y[2])
    a, b = fc.Variable("a", fc.Real), fc.Variable("b", fc.Real)
    _check_compiler(fc.Tuple((fc.Number(1), a, b, a * b)))


def test_compile_funsor_runs_a_sum_product():
    # funsor 0.4.8 raises on any reduction; here plates compile too (the plate's product a
    # reduction inside the program).
    factors = [fc.Variable("f", fc.Reals[5])["x"], fc.Variable("g", fc.Reals[5, 4])["x", "y"],
               fc.Variable("h", fc.Reals[4, 3])["y", "z"]]
    with lazy:
        expr = sum_product(ops.logaddexp, ops.add, factors, frozenset("xyz"))
    rng = np.random.default_rng(6)
    data = {"f": rng.normal(size=5), "g": rng.normal(size=(5, 4)), "h": rng.normal(size=(4, 3))}
    expected = np.log(np.einsum("x,xy,yz->", *(np.exp(data[k]) for k in "fgh")))
    assert np.isclose(compile_funsor(expr)(**data), expected, rtol=1e-12)
    with lazy:
        plated = sum_product(ops.logaddexp, ops.add, factors, frozenset("xyz"), frozenset("z"))
    e = {k: np.exp(v) for k, v in data.items()}
    expected = np.log(np.einsum("x,xy,y->", e["f"], e["g"], np.prod(e["h"], 1)))
    assert np.isclose(compile_funsor(plated)(**data), expected, rtol=1e-12)


def test_ground_subterms_recorded_under_lazy_are_constants():
    # ``t.log()`` under ``lazy`` is Unary(log, Tensor): compile evaluates it once.
    rng = np.random.default_rng(3)
    a, ab = rng.random(3), rng.random((3, 2))
    ta = fc.Tensor(a, {"a": fc.Bint[3]})
    tab = fc.Tensor(ab, {"a": fc.Bint[3], "b": fc.Bint[2]})
    v = fc.Variable("v", fc.Reals[3, 2])["a", "b"]
    with lazy:
        const = (ta.log() + tab.log()).reduce(ops.logaddexp, "a")
        param = (ta.log() + v).reduce(ops.logaddexp, frozenset({"a", "b"}))
    expected = np.log(np.einsum("a,ab->b", a, ab))
    assert np.allclose(np.asarray(fc.compile(const)()), expected, rtol=1e-12)
    w = rng.normal(size=(3, 2))
    expected = np.log(np.sum(a[:, None] * np.exp(w)))
    assert np.allclose(float(fc.compile(param)(v=w)), expected, rtol=1e-12)


class _FakeCotengra:
    # Stands in for cotengra (not a dependency): its optimizer returns a fixed path, so the
    # test checks how a path becomes a tree and the never-worse-than-greedy choice.
    def __init__(self, path):
        self.path = path

    def HyperOptimizer(self, **kwargs):  # noqa: N802  (cotengra's name)
        return kwargs

    def array_contract_tree(self, inputs, output, size_dict, optimize):
        return type("Tree", (), {"get_path": lambda _self: self.path})()


def test_cotengra_path_becomes_a_tree_never_worse_than_greedy(monkeypatch):
    from funsor_core.algorithms.compiled.program import plan_structure

    b = fc.Bint
    rng = np.random.default_rng(4)
    fs = [fc.Tensor(rng.random((2, 3)), {"a": b[2], "b": b[3]}),
          fc.Tensor(rng.random((4, 5)), {"c": b[4], "d": b[5]}),
          fc.Tensor(rng.random((3, 4)), {"b": b[3], "c": b[4]})]
    cards = {"a": 2, "b": 3, "c": 4, "d": 5}
    expected = brute_force(fs, cards, ("a",))
    # A good path (A.C, then with B) is kept; a bad one (the outer product A x B first) loses
    # to opt_einsum's path, and the plan says so.
    for path, method in (([(0, 2), (0, 1)], "cotengra"), ([(0, 1), (0, 1)], "opt_einsum")):
        plan_structure.cache_clear()
        monkeypatch.setitem(__import__("sys").modules, "cotengra", _FakeCotengra(path))
        plan = fc.plan(fs, frozenset("bcd"), method="cotengra")
        assert plan.method == method
        assert np.allclose(plan(fs).data, expected, rtol=1e-12)
    plan_structure.cache_clear()
