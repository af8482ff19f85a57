"""bfloat16 (torch's, which numpy cannot name) through the chain kernels: their precision
checks read the dtype's limits (``engine.floats.float_info``, against ``torch.finfo``), and
results taken to the host (marginals' mass check, Viterbi's path) go through float32.
Oracle: the same chains in float64 on the bfloat16-rounded inputs (torch logsumexp / max
folds, autograd of the float64 log Z for the marginals)."""
import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.engine.floats import float_info
from funsor_core.sum_product import markov_map, markov_marginals, sequential_sum_product

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_float_info_matches_torch_finfo(dtype):
    ref = torch.finfo(getattr(torch, dtype))
    info = float_info(getattr(torch, dtype))
    assert (info.bits, info.eps, info.tiny, info.max) == (ref.bits, ref.eps, ref.tiny, ref.max)
    if dtype != "bfloat16":
        assert float_info(np.dtype(dtype)) == info


def test_float_info_refuses_a_non_float():
    with pytest.raises(ValueError, match="int32"):
        float_info(np.dtype(np.int32))


def _fold(x, op):
    m = x[0]
    for step in x[1:]:
        y = m[:, :, None] + step[None]
        m = y.max(1).values if op == "max" else torch.logsumexp(y, 1)
    return m


def test_bfloat16_chain_products_marginals_and_viterbi(torch_backend):
    T, K = 40, 3
    g = torch.Generator().manual_seed(0)
    x = torch.randn(T, K, K, generator=g, dtype=torch.float64).to(torch.bfloat16)
    x64 = x.double()
    t = fc.Tensor(x, {"time": fc.Bint[T], "a": fc.Bint[K], "b": fc.Bint[K]})
    tol = 4 * T * float_info(torch.bfloat16).eps * float(x64.abs().max())
    for op, sum_op in (("max", ops.max), ("lse", ops.logaddexp)):
        got = sequential_sum_product(sum_op, ops.add, t, "time", {"a": "b"})
        assert got.data.dtype == torch.bfloat16
        torch.testing.assert_close(got.data.double(), _fold(x64, op), atol=tol, rtol=0)
    leaf = x64.clone().requires_grad_(True)
    log_z = torch.logsumexp(_fold(leaf, "lse").reshape(-1), 0)
    log_z.backward()  # d log Z / d step entry: the pair marginals
    total, pairs = markov_marginals(ops.logaddexp, ops.add, t, "time", {"a": "b"})
    assert abs(float(total.data) - float(log_z.detach())) < tol
    probs = pairs.align(("time", "a", "b")).data.double()
    torch.testing.assert_close(probs, leaf.grad, atol=0.05, rtol=0)
    score, path = markov_map(t, "time", {"a": "b"})
    states = [int(v) for v in path["a"].data]  # T + 1 states: the first prev, each curr
    path_score = sum(float(x64[i, states[i], states[i + 1]]) for i in range(T))
    assert abs(path_score - float(_fold(x64.detach(), "max").max())) < tol
    assert abs(float(score.data) - path_score) < tol
