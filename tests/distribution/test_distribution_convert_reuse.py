"""A torch distribution converted again with the same dims, under the same interpretation, is
the same term (Pyro converts each enumerated site's distribution twice); anything that could
change the answer converts afresh: an in-place change of a parameter, torch's lazily cached
``logits`` (a Categorical then converts by its logits), other dims, ``lazy``. Values against
torch's own ``log_prob`` at every value (the oracle)."""

import numpy as np
import torch
import torch.distributions as td

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.domains import Bint
from interpretations import lazy

DIMS = {-2: "i", -1: "j"}


def _probs():
    p = torch.rand(2, 3, 4, dtype=torch.float64) + 0.1
    return p / p.sum(-1, keepdim=True)


def _torch_table(raw):
    # log p(v) at every v, as (v, i, j) by torch, moved to (i, j, v)
    values = torch.arange(4).reshape(4, 1, 1)
    return raw.log_prob(values).permute(1, 2, 0).detach().numpy()


def _ours(raw, dims=DIMS):
    return fc.to_funsor(raw, fc.Real, dims)(value="v")


def test_same_object_same_dims_is_the_same_term():
    raw = td.Categorical(_probs())
    first, second = _ours(raw), _ours(raw)
    assert first is second or first.data is second.data
    np.testing.assert_allclose(first.align(("i", "j", "v")).data.numpy(), _torch_table(raw),
                               rtol=1e-12)


def test_in_place_change_converts_afresh():
    probs = _probs()
    raw = td.Categorical(probs)
    before = _ours(raw).align(("i", "j", "v")).data.clone()
    with torch.no_grad():
        raw.probs[0, 0] = torch.tensor([0.7, 0.1, 0.1, 0.1], dtype=torch.float64)
    after = _ours(raw).align(("i", "j", "v")).data
    np.testing.assert_allclose(after.numpy(), _torch_table(raw), rtol=1e-12)
    assert not torch.equal(before[0, 0], after[0, 0])


def test_lazily_cached_logits_and_other_dims_convert_afresh():
    raw = td.Categorical(_probs())
    assert isinstance(fc.to_funsor(raw, fc.Real, DIMS), fc.Tensor)
    raw.logits  # noqa: B018  (torch caches it in the object: it converts by its logits now)
    np.testing.assert_allclose(_ours(raw).align(("i", "j", "v")).data.numpy(),
                               _torch_table(raw), rtol=1e-12)
    other = _ours(raw, {-2: "a", -1: "b"})
    assert set(other.inputs) == {"a", "b", "v"}


def test_lazy_then_eager_are_not_shared():
    raw = td.Categorical(_probs())
    with lazy:
        term = fc.to_funsor(raw, fc.Real, DIMS)
    assert isinstance(term, D.Categorical)
    eager = fc.to_funsor(raw, fc.Real, DIMS)
    assert isinstance(eager, fc.Tensor) and eager.inputs["value"] == Bint[4]
    np.testing.assert_allclose(eager(value="v").align(("i", "j", "v")).data.numpy(),
                               _torch_table(raw), rtol=1e-12)


def test_gradient_through_a_reused_conversion():
    # Both uses of one conversion carry the gradient: d/dq of sum(table) twice, q -> p = q /
    # sum q by torch, against torch's log_prob summed twice (the oracle).
    q = (torch.rand(2, 3, 4, dtype=torch.float64) + 0.1).requires_grad_(True)
    raw = td.Categorical(q)
    (_ours(raw).data.sum() + _ours(raw).data.sum()).backward()
    ours = q.grad.clone()
    q.grad = None
    oracle = td.Categorical(q)
    (2 * oracle.log_prob(torch.arange(4).reshape(4, 1, 1)).sum()).backward()
    np.testing.assert_allclose(ours.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)
