"""funsor 0.4.8 surface built for issue #28 (branch h34): ``funsor.ops.tracer.trace_function``
and ``funsor.torch.provenance.ProvenanceTensor``.

Oracles: each traced program is replayed on *new* arrays and compared with the same math
written in numpy (and scipy's logsumexp), so a program that replays the traced run's numbers
fails; a ProvenanceTensor's values and gradients are compared with torch on the plain tensors,
its provenance with the union of the arguments' sets written out by hand.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.op_factory import make_op
from funsor_core.ops.tracer import OpProgram, trace_function

RNG = np.random.default_rng(34)


def _new(*shape):
    return RNG.normal(size=shape)


def test_trace_chain_of_ops_replays_on_new_arrays():
    def fn(x, y):
        for _ in range(2):
            x = ops.mul(x, x)
        return ops.add(ops.exp(x), y)

    prog = trace_function(fn, dict(x=_new(4), y=_new(4)))
    assert isinstance(prog, OpProgram) and len(prog.operations) == 4
    x, y = _new(4), _new(4)
    np.testing.assert_allclose(prog(x=x, y=y), np.exp(x ** 4) + y)
    # a numpy scalar is an input as well (funsor counts it as an array)
    prog = trace_function(lambda s: ops.log1p(ops.exp(s)), dict(s=np.float64(0.0)))
    np.testing.assert_allclose(prog(s=np.float64(1.5)), np.log1p(np.exp(1.5)))


def test_trace_through_funsors_records_their_array_ops():
    def fn(a, b):
        ta = fc.Tensor(a, OrderedDict(i=fc.Bint[3]))
        tb = fc.Tensor(b, OrderedDict(i=fc.Bint[3], j=fc.Bint[2]))
        return (ta + tb).reduce(ops.logaddexp, "i").data

    prog = trace_function(fn, dict(a=_new(3), b=_new(3, 2)))
    a, b = _new(3), _new(3, 2)
    np.testing.assert_allclose(prog(a=a, b=b), logsumexp(a[:, None] + b, axis=0))

    def matmul(x, y, z):
        return fc.to_data(fc.to_funsor(x) @ fc.to_funsor(y) + fc.to_funsor(z) + 1)

    prog = trace_function(matmul, dict(x=_new(2, 3), y=_new(3, 4), z=_new(2, 4)))
    x, y, z = _new(2, 3), _new(3, 4), _new(2, 4)
    np.testing.assert_allclose(prog(x=x, y=y, z=z), x @ y + z + 1)


def test_trace_keeps_a_made_op_whole_and_drops_dead_calls():
    @make_op
    def twice(x: fc.Real) -> fc.Real:
        return ops.add(x, x)  # runs on plain arrays: not recorded

    def fn(x):
        ops.exp(x)  # unused: not in the program
        return ops.add(twice(ops.add(x, 1.0)), 1.0), ops.sum(x)

    prog = trace_function(fn, dict(x=_new(3)))
    assert [op.name for op, _, _ in prog.operations] == ["add", "twice", "add", "sum"]
    x = _new(3)
    total, s = prog(x=x)
    np.testing.assert_allclose(total, 2 * (x + 1) + 1)
    np.testing.assert_allclose(s, x.sum())


def test_trace_refuses_what_it_cannot_replay():
    with pytest.raises(ValueError, match="outside funsor's ops"):
        trace_function(lambda x: np.exp(x), dict(x=_new(2)))
    with pytest.raises(ValueError, match="outside funsor's ops"):
        trace_function(lambda x: ops.exp(x.reshape(2, 1)), dict(x=_new(2)))
    with pytest.raises(ValueError, match="outside funsor's ops"):
        trace_function(lambda x: ops.add(x, np.asarray(x)), dict(x=_new(2)))
    with pytest.raises(ValueError, match="the output is an array that no op on the inputs"):
        trace_function(lambda x: ops.exp(np.asarray(x)), dict(x=_new(2)))
    with pytest.raises(ValueError, match="ops.add reads an array that no op"):
        trace_function(lambda x: ops.add(x, np.ones(2)), dict(x=_new(2)))
    with pytest.raises(TypeError, match="input 'x' is a list"):
        trace_function(lambda x: x, dict(x=[1.0]))
    same = _new(2)
    with pytest.raises(ValueError, match="one array is passed as several"):
        trace_function(lambda x, y: ops.add(x, y), dict(x=same, y=same))
    prog = trace_function(lambda x: ops.add(x, np.ones(2)), dict(x=_new(2)),
                          allow_constants=True)
    x = _new(2)
    np.testing.assert_allclose(prog(x=x), x + 1)
    with pytest.raises(TypeError, match=r"takes the arrays \['x'\]"):
        prog(y=x)


def test_traced_arrays_after_the_trace_compute_plainly():
    kept = []
    prog = trace_function(lambda x: kept.append(x) or ops.neg(x), dict(x=_new(2)))
    out = ops.exp(kept[0])  # no trace recording: numpy's values
    np.testing.assert_allclose(out, np.exp(kept[0].view(np.ndarray)))
    assert len(prog.operations) == 1
    x = _new(2)
    np.testing.assert_allclose(prog(x=x), -x)


def test_provenance_tensor_computes_as_torch_and_unions_provenance():
    torch = pytest.importorskip("torch")
    from funsor_core.torch.provenance import ProvenanceTensor

    a = torch.tensor([0.5, -1.0], requires_grad=True)
    b = torch.tensor([2.0, 3.0])
    pa = ProvenanceTensor(a, frozenset({("x", fc.Real)}))
    pb = ProvenanceTensor(b, frozenset({("y", fc.Bint[2])}))
    assert ProvenanceTensor(b, frozenset()) is b and pa._t is a
    out = (torch.exp(pa) * pb).sum()
    assert out._provenance == frozenset({("x", fc.Real), ("y", fc.Bint[2])})
    out.backward()
    ref = torch.tensor([0.5, -1.0], requires_grad=True)
    (torch.exp(ref) * b).sum().backward()
    torch.testing.assert_close(out._t, (torch.exp(ref) * b).sum().detach())
    torch.testing.assert_close(a.grad, ref.grad)
    nested = ProvenanceTensor(pa, frozenset({("z", fc.Real)}))
    assert nested._t is a and {k for k, _ in nested._provenance} == {"x", "z"}
    with pytest.raises(TypeError, match="frozenset"):
        ProvenanceTensor(b, {("x", fc.Real)})


def test_provenance_tensor_converts_to_and_from_constant():
    torch = pytest.importorskip("torch")
    from funsor_core.terms.constant import Constant
    from funsor_core.torch.provenance import ProvenanceTensor

    data = torch.arange(6.0).reshape(2, 3)
    pt = ProvenanceTensor(data, frozenset({("y", fc.Real), ("x", fc.Bint[4])}))
    c = fc.to_funsor(pt, fc.Reals[3], dim_to_name={-1: "i"})
    assert c is Constant((("x", fc.Bint[4]), ("y", fc.Real)),
                         fc.Tensor(data, OrderedDict(i=fc.Bint[2])))
    # constant along x: reducing x of size 4 by add multiplies by 4 (brute force: sum of 4 copies)
    torch.testing.assert_close(c.reduce(ops.add, "x")(y=0.0).data, 4 * data)
    back = fc.to_data(c, name_to_dim={"i": -1})
    assert isinstance(back, ProvenanceTensor) and back._t is data
    assert back._provenance == frozenset({("x", fc.Bint[4]), ("y", fc.Real)})
    # numpy has no tagged arrays: a Constant with free inputs is still not a number there
    with pytest.raises(fc.LazyTermError, match="function of its free inputs"):
        fc.to_data(Constant({"x": fc.Real}, fc.Tensor(np.zeros(2))))
