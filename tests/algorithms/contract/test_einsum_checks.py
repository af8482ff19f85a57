"""einsum where it used to give wrong numbers (issue 13, items 2-5, 9, 14).

Oracles: scipy's logsumexp over the brute-force joint in float64 (log space), numpy's einsum
(diagonals), the unrolled plated factor graph enumerated by hand, and opt_einsum.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.einsum import einsum, naive_plated_einsum
from funsor_core.terms import DomainError
from interpretations import lazy

LOG = "funsor.einsum.numpy_log"


def _joint(eq, operands):
    # The brute-force joint: every operand broadcast to all letters (float64), summed.
    inputs, out = eq.split("->")
    inputs = inputs.split(",")
    letters = "".join(dict.fromkeys("".join(inputs)))
    sizes = {c: n for x, lx in zip(operands, inputs) for c, n in zip(lx, x.shape)}
    total = np.zeros([sizes[c] for c in letters])
    for x, lx in zip(operands, inputs):
        x = np.transpose(np.asarray(x, dtype=np.float64), [lx.index(c) for c in letters
                                                            if c in lx])
        total = total + x.reshape([sizes[c] if c in lx else 1 for c in letters])
    axes = tuple(i for i, c in enumerate(letters) if c not in out)
    red = logsumexp(total, axis=axes) if axes else total
    kept = [c for c in letters if c in out]
    return np.transpose(red, [kept.index(c) for c in out])


def _adversarial(rng, shape, scale, dtype):
    # Each operand peaks at its own random index and is far lower elsewhere, so operands'
    # maxima sit at different summed indices.
    x = rng.normal(size=shape) - scale * rng.random(size=shape) ** 0.25
    flat = x.reshape(-1)
    flat[rng.integers(flat.size)] = rng.normal()
    return x.astype(dtype)


def _to_backend(x, backend):
    if backend == "torch":
        import torch

        return torch.as_tensor(x)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return x


EQUATIONS = [("a,a->", (2,)), ("ab,bc->ac", (3, 4, 5)), ("ab,bc,cd->ad", (3, 4, 3, 2)),
             ("abc,cd->ab", (2, 3, 4, 3)), ("ab,ab->", (4, 4)), ("ij,jk->ik", (40, 40, 40)),
             ("ij,jk->ik", (70, 70, 70))]  # the last takes the shifted-product route


def _shapes(eq, sizes):
    inputs = eq.split("->")[0].split(",")
    letters = "".join(dict.fromkeys("".join(inputs)))
    size = dict(zip(letters, sizes))
    return [tuple(size[c] for c in lx) for lx in inputs]


def test_log_einsum_of_peaks_at_different_indices():
    got = einsum("a,a->", np.array([0.0, -1000.0]), np.array([-1000.0, 0.0]), backend=LOG)
    assert float(got) == pytest.approx(np.log(2.0) - 1000.0, abs=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("eq, sizes", EQUATIONS)
def test_log_einsum_adversarial_peaks(eq, sizes, dtype, backend):
    # jax runs under jit: eagerly each case compiled its kernels op by op (12 s of the suite)
    # for the same code as the jitted program.
    rng = np.random.default_rng(len(eq) * 7 + sizes[0])
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    run = lambda *xs: einsum(eq, *xs, backend=LOG)  # noqa: E731
    if backend == "jax":
        import jax

        run = jax.jit(run)
    for scale in (50.0, 80.0, 1000.0):
        operands = [_adversarial(rng, s, scale, dtype) for s in _shapes(eq, sizes)]
        expected = _joint(eq, operands)
        got = run(*[_to_backend(x, backend) for x in operands])
        got = ops.to_numpy(got).astype(np.float64)
        assert np.all(np.isfinite(got)), f"{eq} scale {scale}: underflow to -inf"
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * np.abs(expected).max())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_einsum_adversarial_peaks_under_jit(dtype):
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(3)
    eq = "ab,bc,cd->ad"
    for sizes in [(3, 4, 3, 2), (70, 70, 70, 2)]:  # small steps, then large (shifted) ones
        operands = [_adversarial(rng, s, 300.0, np.dtype(dtype)) for s in _shapes(eq, sizes)]
        fn = jax.jit(lambda *xs: einsum(eq, *xs, backend=LOG))
        got = np.asarray(fn(*[jax.numpy.asarray(x) for x in operands]), dtype=np.float64)
        expected = _joint(eq, operands)
        rtol = 1e-4 if dtype == "float32" else 1e-10
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * np.abs(expected).max())


def test_log_einsum_all_minus_infinity_slices_stay_minus_infinity():
    x = np.array([[0.0, -np.inf], [-np.inf, -np.inf]])
    y = np.array([[-np.inf, 0.0], [0.0, 1.0]])
    got = einsum("ab,bc->ac", x, y, backend=LOG)
    assert np.array_equal(np.isneginf(got), np.isneginf(_joint("ab,bc->ac", [x, y])))


# -- diagonals (repeated letters), as numpy ---------------------------------------------------
@pytest.mark.parametrize("eq, shapes", [("ii->i", [(3, 3)]), ("ii->", [(3, 3)]),
                                        ("iij->j", [(2, 2, 4)]), ("ij,jj->i", [(2, 3), (3, 3)]),
                                        ("iji->ij", [(2, 3, 2)])])
def test_repeated_letters_take_the_diagonal(eq, shapes, backend):
    rng = np.random.default_rng(0)
    operands = [rng.normal(size=s) for s in shapes]
    expected = np.einsum(eq, *operands)
    got = einsum(eq, *[_to_backend(x, backend) for x in operands])
    np.testing.assert_allclose(ops.to_numpy(got), expected, rtol=1e-12)
    # In log space the diagonal is taken before any arithmetic, so it equals the log-space
    # einsum of the diagonal itself.
    diag_eq, diag_ops = _diagonal_form(eq, operands)
    got = einsum(eq, *[_to_backend(x, backend) for x in operands], backend=LOG)
    np.testing.assert_allclose(ops.to_numpy(got), _joint(diag_eq, diag_ops), rtol=1e-12)


def _diagonal_form(eq, operands):
    inputs, out = eq.split("->")
    new_inputs, new_ops = [], []
    for lx, x in zip(inputs.split(","), operands):
        unique = "".join(dict.fromkeys(lx))
        new_inputs.append(unique)
        new_ops.append(np.einsum(f"{lx}->{unique}", x))
    return ",".join(new_inputs) + "->" + out, new_ops


@pytest.mark.parametrize("eq, shapes, match", [
    ("ab->aa", [(2, 3)], "more than once"),
    ("ab->abc", [(2, 3)], r"\['c'\] do not appear"),
    ("ab,bc->ac", [(2, 3)], "names 2 operand"),
    ("ab->a", [(2, 3, 4)], "has 3 dims"),
    ("ab,bc->ac", [(2, 3), (4, 5)], "letter 'b' has size 3 in operand 0 but 4 in operand 1"),
    ("ii->i", [(2, 3)], "repeated letter 'i' spans dims of sizes 2 and 3"),
    ("a...->a", [(2, 3)], "ellipsis"),
    ("a->>a", [(2,)], "malformed"),
])
def test_bad_equations_raise_clear_errors(eq, shapes, match):
    operands = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError, match=match):
        einsum(eq, *operands)


def test_mismatched_funsor_domains_raise_as_products_do():
    x = fc.Tensor(np.ones((2, 1)), {"a": fc.Bint[2], "b": fc.Bint[1]})
    y = fc.Tensor(np.ones(3), {"b": fc.Bint[3]})
    with pytest.raises(DomainError, match="'b'"):
        x * y
    with pytest.raises(DomainError, match="'b'"):
        einsum("ab,b->a", x, y)
    with lazy, pytest.raises(DomainError, match="'b'"):
        einsum("ab,b->a", x, y)


@pytest.mark.parametrize("backend", ["numpy", LOG])
def test_output_letter_in_no_funsor_operand_is_dropped(backend):
    # A funsor is constant along a name it lacks, so "ab,b->ca" of funsors is "ab,b->a" (no
    # input 'c'), as in funsor 0.4.8; arrays have no size for 'c' and raise (test above).
    rng = np.random.default_rng(0)
    ab, b = rng.normal(size=(2, 3)), rng.normal(size=3)
    x = fc.Tensor(ab, {"a": fc.Bint[2], "b": fc.Bint[3]})
    y = fc.Tensor(b, {"b": fc.Bint[3]})
    actual = einsum("ab,b->ca", x, y, backend=backend)
    assert tuple(actual.inputs) == ("a",)
    expected = (_joint("ab,b->a", [ab, b]) if backend == LOG
                else np.einsum("ab,b->a", ab, b))
    np.testing.assert_allclose(ops.to_numpy(actual.data), expected, rtol=1e-12)
    with lazy:
        assert set(einsum("ab,b->ca", x, y, backend=backend).inputs) == {"a"}


def test_funsor_operand_must_match_its_letters():
    x = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    with pytest.raises(ValueError, match="do not match its letters 'ac'"):
        einsum("ac->a", x)


# -- plated einsum against the unrolled factor graph --------------------------------------------
def _unrolled(eq, operands, plates, sum_fn=np.sum, prod=np.prod):
    """Enumerate the plated factor graph unrolled: a variable has one copy per value of each
    plate it lives in (the plates shared by all the operands that use it)."""
    inputs, out = eq.split("->")
    inputs = inputs.split(",")
    assert not out
    sizes = {c: n for x, lx in zip(operands, inputs) for c, n in zip(lx, x.shape)}
    plate_set = set(plates)
    variables = [c for c in dict.fromkeys("".join(inputs)) if c not in plate_set]
    var_plates = {v: sorted(set.intersection(*[set(lx) & plate_set for lx in inputs if v in lx]))
                  for v in variables}
    copies = []  # (variable, plate assignment as a dict)
    for v in variables:
        for values in itertools.product(*[range(sizes[p]) for p in var_plates[v]]):
            copies.append((v, dict(zip(var_plates[v], values))))
    total = 0.0
    for assignment in itertools.product(*[range(sizes[v]) for v, _ in copies]):
        value = dict(zip(range(len(copies)), assignment))
        weight = 1.0
        for x, lx in zip(operands, inputs):
            fplates = [c for c in lx if c in plate_set]
            for pvals in itertools.product(*[range(sizes[p]) for p in fplates]):
                env = dict(zip(fplates, pvals))
                index = []
                for c in lx:
                    if c in plate_set:
                        index.append(env[c])
                        continue
                    k = next(k for k, (v, pa) in enumerate(copies)
                             if v == c and all(env[p] == i for p, i in pa.items()))
                    index.append(value[k])
                weight *= x[tuple(index)]
        total += weight
    return total


PLATED = [("dj,dji->", "ij", (2, 3, 2)), ("a,ab,abc->", "bc", (2, 2, 2)),
          ("ab,bc,c->", "c", (2, 2, 3)), ("a,abx->", "b", (2, 3, 2)),
          ("ai,aij,j->", "ij", (2, 2, 2)), ("x,xi,xiy,xj->", "ij", (2, 2, 2, 2))]


@pytest.mark.parametrize("eq, plates, sizes", PLATED)
def test_plated_einsum_equals_the_unrolled_graph(eq, plates, sizes, backend):
    rng = np.random.default_rng(sum(sizes))
    operands = [rng.uniform(0.5, 1.5, size=s) for s in _shapes(eq, sizes)]
    expected = _unrolled(eq, operands, plates)
    arrays = [_to_backend(x, backend) for x in operands]
    for fn in (einsum, naive_plated_einsum):
        got = fn(eq, *arrays, plates=plates)
        assert float(ops.to_numpy(got)) == pytest.approx(expected, rel=1e-10)
    # Renaming the plates (their alphabetical order) changes nothing.
    swapped = eq.translate(str.maketrans(plates, plates[::-1]))
    got = einsum(swapped, *arrays, plates=plates)
    assert float(ops.to_numpy(got)) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("eq, plates, sizes", PLATED)
def test_lazy_plated_einsum_then_apply_optimizer(eq, plates, sizes):
    rng = np.random.default_rng(sum(sizes) + 1)
    operands = [rng.uniform(0.5, 1.5, size=s) for s in _shapes(eq, sizes)]
    inputs = eq.split("->")[0].split(",")
    tensors = [fc.Tensor(x, {c: fc.Bint[n] for c, n in zip(lx, x.shape)})
               for x, lx in zip(operands, inputs)]
    with lazy:
        expr = einsum(eq, *tensors, plates=plates)
    got = fc.apply_optimizer(expr)
    assert float(got.data) == pytest.approx(_unrolled(eq, operands, plates), rel=1e-10)


def test_kept_plate_with_a_shared_summed_variable_raises():
    rng = np.random.default_rng(0)
    x, y = rng.random(2), rng.random((2, 4, 3))
    with pytest.raises(ValueError, match="keeps plate 'p'.*summed variable.*'a'"):
        einsum("a,apb->p", x, y, plates="p")
    # modulo_total: each slice of p is its own factor graph (a sums within the slice).
    got = einsum("a,apb->p", x, y, plates="p", modulo_total=True)
    expected = np.einsum("a,apb->ap", x, y).sum(0)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # Keeping a plate whose operands all lie inside it is fine.
    got = einsum("pa,pab->p", rng.random((4, 2)), y.transpose(1, 0, 2), plates="p")
    assert got.shape == (4,)
