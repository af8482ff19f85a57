"""``einsum`` on a few hundred random equations (a fixed seed), for sum, logsumexp and max,
against opt_einsum.contract (sum; logsumexp as the log of the sum of exponentials, on values
small enough for that to be exact) and numpy brute force (max: every operand broadcast to all
letters, added, reduced). Also the plated form against Pyro's einsum, an independent
implementation of the same algorithm."""

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import einsum, naive_einsum


def random_equation(rng):
    letters = "abcdefg"[: rng.integers(2, 8)]
    count = rng.integers(1, 6)
    inputs = ["".join(rng.choice(list(letters), rng.integers(0, min(3, len(letters)) + 1),
                                 replace=False))
              for _ in range(count)]
    used = sorted(set("".join(inputs)))
    output = "".join(c for c in used if rng.random() < 0.3)
    if rng.random() < 0.5:
        output = "".join(rng.permutation(list(output)))
    sizes = {c: int(rng.integers(1, 4)) for c in letters}
    return ",".join(inputs) + "->" + output, sizes


def examples(count, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        eq, sizes = random_equation(rng)
        inputs = eq.split("->")[0].split(",")
        arrays = [rng.normal(size=tuple(sizes[c] for c in names)) for names in inputs]
        out.append((eq, arrays))
    return out


EXAMPLES = examples(300, seed=14)


def brute_max(eq, arrays):
    lhs, out = eq.split("->")
    inputs = lhs.split(",")
    letters = sorted(set(lhs) - {","})
    sizes = {c: n for names, a in zip(inputs, arrays) for c, n in zip(names, a.shape)}
    total = np.zeros(tuple(sizes[c] for c in letters))
    for names, a in zip(inputs, arrays):
        perm = np.transpose(a, [names.index(c) for c in letters if c in names])
        total = total + perm.reshape([sizes[c] if c in names else 1 for c in letters])
    axes = tuple(k for k, c in enumerate(letters) if c not in out)
    red = total.max(axis=axes) if axes else total
    kept = [c for c in letters if c in out]
    return np.transpose(red, [kept.index(c) for c in out])


def oracle(eq, arrays, semiring):
    if semiring == "numpy":
        return opt_einsum.contract(eq, *arrays)
    if semiring == "log":
        return np.log(opt_einsum.contract(eq, *[np.exp(a) for a in arrays]))
    return brute_max(eq, arrays)


@pytest.mark.parametrize("semiring", ["numpy", "log", "max"])
def test_random_equations_numpy(semiring):
    for eq, arrays in EXAMPLES:
        actual = einsum(eq, *arrays, backend=semiring)
        np.testing.assert_allclose(actual, oracle(eq, arrays, semiring), rtol=1e-10,
                                   atol=1e-12, err_msg=eq)


@pytest.mark.parametrize("backend_name", ["torch", "jax"])
@pytest.mark.parametrize("semiring", ["numpy", "log", "max"])
def test_random_equations_other_backends(semiring, backend_name):
    fc.set_backend(backend_name)
    try:
        for eq, arrays in EXAMPLES[:60]:
            data = [fc.to_data(fc.Tensor(a)) for a in arrays]
            actual = einsum(eq, *data, backend=semiring)
            np.testing.assert_allclose(ops.to_numpy(actual), oracle(eq, arrays, semiring),
                                       rtol=1e-10, atol=1e-12, err_msg=eq)
    finally:
        fc.set_backend("numpy")


def test_random_equations_planned_equals_naive():
    # einsum's plan against naive_einsum (every operand combined, then reduced).
    for eq, arrays in EXAMPLES[:100]:
        for semiring in ("log", "max", "min"):
            np.testing.assert_allclose(einsum(eq, *arrays, backend=semiring),
                                       naive_einsum(eq, *arrays, backend=semiring),
                                       rtol=1e-10, atol=1e-12, err_msg=eq)


PLATED = [("a,ai,bij->", "ij"), ("ai,abi,bci,cdi->", "i"), ("a,abi,bcij,cdij->", "ij"),
          ("a,ab,bi,ci->", "i"), (",i,ij->", "ij")]


@pytest.mark.parametrize("eq, plates", PLATED)
@pytest.mark.parametrize("backend", ["torch", "pyro.ops.einsum.torch_log",
                                     "pyro.ops.einsum.torch_map"])
def test_plated_einsum_against_pyro(eq, plates, backend):
    torch = pytest.importorskip("torch")
    pyro_einsum = pytest.importorskip("pyro.ops.contract").einsum
    rng = np.random.default_rng(len(eq))
    sizes = {c: 2 + k % 2 for k, c in enumerate(sorted(set(eq) - set(",->")))}
    inputs = eq.split("->")[0].split(",")
    arrays = [torch.tensor(rng.uniform(0.2, 1.0, size=tuple(sizes[c] for c in names)))
              for names in inputs]
    for names, a in zip(inputs, arrays):
        a._pyro_dims = names
    expected = pyro_einsum(eq, *arrays, plates=plates, backend=backend, modulo_total=False)[0]
    actual = einsum(eq, *arrays, plates=plates, backend=backend)
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-10)
