"""Tensor cons-hashing keyed by the array (issue #29, h43): a Tensor's table entry is keyed by
``id(data)``, a second Tensor of the same array under another signature or dtype by the full
key. Oracle: a plain-Python model of the contract (while a Tensor of (array, inputs, dtype)
lives, building it again gives that object; otherwise a new one), the entries counted in the
tables, ``weakref`` and ``gc.collect()`` for deaths, numpy for the values."""

import gc
import pickle
import random
import weakref

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.atoms.tensor_checks import _MULTI, tensor_cons
from funsor_core.domains import Bint
from funsor_core.engine.cons import _CONS, build
from interpretations import lazy

B2, B3 = Bint[2], Bint[3]


def _entries(*arrays) -> int:
    # The live entries of these arrays' Tensors, in the array-keyed table and the second one.
    ids = set(map(id, arrays))
    primary = sum(1 for key, e in _CONS[fc.Tensor].items() if key in ids and e() is not None)
    return primary + sum(1 for key in _MULTI[fc.Tensor][0] if key[0] in ids)


def test_random_builds_and_drops_match_a_model_of_the_contract():
    # Three arrays under three signatures and two dtypes, built and dropped at random: each
    # build is the live term of its (array, inputs, dtype) if the model holds one, else new.
    rng = random.Random(0)
    arrays = [np.arange(6).reshape(2, 3) % 2 for _ in range(3)]
    signatures = [{"i": B2, "j": B3}, {"j": B2, "i": B3}, {"k": B2, "j": B3}]
    dtypes = ["real", 2]
    live: dict = {}  # (array index, signature index, dtype) -> the term the model holds
    for _ in range(300):
        key = (rng.randrange(3), rng.randrange(3), rng.choice(dtypes))
        if key in live and rng.random() < 0.4:
            held = weakref.ref(live.pop(key))
            assert held() is None  # dropped: reference counting frees it (nothing else holds it)
            continue
        a, s, dtype = key
        t = fc.Tensor(arrays[a], dict(signatures[s]), dtype)
        if key in live:
            assert t is live[key]
        else:
            assert all(t is not other for other in live.values())
            live[key] = t
        assert t.data is arrays[a] and t.inputs == signatures[s] and t.dtype == dtype
        assert _entries(*arrays) == len(live)  # one entry per live term, none for the dead
        t = None
    live.clear()
    assert _entries(*arrays) == 0 and not any(id(a) in _CONS[fc.Tensor] for a in arrays)


def test_second_signature_of_an_array_outlives_the_first():
    x = np.zeros((2, 2))
    first = fc.Tensor(x, {"i": B2, "j": B2})
    second = fc.Tensor(x, {"j": B2, "i": B2})  # same array, another signature: its own term
    assert second is not first and second._ikey != first._ikey
    alias = weakref.ref(first)
    del first
    assert alias() is None
    assert fc.Tensor(x, {"j": B2, "i": B2}) is second  # found under its full key
    third = fc.Tensor(x, {"i": B2, "j": B2})
    assert third is not second and fc.Tensor(x, {"i": B2, "j": B2}) is third
    # The constructor's full path (tuple inputs), the interpreter's build and tensor_cons agree.
    assert fc.Tensor(x, tuple(second.inputs.items())) is second
    assert build(fc.Tensor, third._args) is third is tensor_cons(fc.Tensor, third._args)


def test_cycles_are_collected_with_their_entries():
    # A Tensor kept alive only by a reference cycle dies in gc.collect(); its entry goes too.
    x = np.zeros(3)
    t = fc.Tensor(x, {"i": B3})
    u = fc.Tensor(x, {"k": B3})
    cycle = [t, u]
    cycle.append(cycle)
    refs = [weakref.ref(t), weakref.ref(u)]
    assert _entries(x) == 2
    del t, u, cycle
    gc.collect(1)  # (young objects: the cheap collection, the full one if they were promoted)
    if refs[0]() is not None:
        gc.collect()
    assert [r() for r in refs] == [None, None] and _entries(x) == 0
    # A new array at the freed address is a new term, never the dead one's.
    assert fc.Tensor(np.ones(3), {"i": B3}).data.tolist() == [1.0, 1.0, 1.0]


def test_lazy_builds_and_subclasses_share_the_scheme():
    x = np.arange(4.0).reshape(2, 2)
    t = fc.Tensor(x, {"i": B2, "j": B2})
    with lazy:
        assert fc.Tensor(x, {"i": B2, "j": B2}) is t

    class Scaled(fc.Tensor):
        pass

    s = Scaled(x, {"i": B2, "j": B2})
    assert type(s) is Scaled and s is not t and Scaled(x, {"i": B2, "j": B2}) is s
    np.testing.assert_array_equal(s.data, x)


def test_pickle_round_trip_is_the_term_of_its_new_array():
    t = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": B2, "j": B3})
    u = pickle.loads(pickle.dumps(t))
    assert u is not t and u.inputs == t.inputs and u.output is t.output
    np.testing.assert_array_equal(u.data, t.data)
    assert fc.Tensor(u.data, {"i": B2, "j": B3}) is u  # cons-hashed on the way in
    np.testing.assert_allclose((u + t).reduce(fc.ops.add, "i").data, 2 * t.data.sum(0))


def test_jit_sees_the_same_terms():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    a = jnp.arange(6.0).reshape(2, 3)
    t = fc.Tensor(a, {"i": B2, "j": B3})
    assert fc.Tensor(a, {"i": B2, "j": B3}) is t
    leaves, tree = jax.tree_util.tree_flatten(t)
    assert len(leaves) == 1 and leaves[0] is a

    def f(x):
        y = fc.Tensor(x, {"i": B2, "j": B3})
        assert fc.Tensor(x, {"i": B2, "j": B3}) is y  # a tracer is an array like any other
        return y.reduce(fc.ops.logaddexp, "j").data

    expected = np.log(np.exp(np.arange(6.0).reshape(2, 3)).sum(1))
    np.testing.assert_allclose(np.asarray(jax.jit(f)(a)), expected, rtol=1e-6)
    back = jax.tree_util.tree_unflatten(tree, leaves)
    assert back.inputs == t.inputs and back.data is a


@pytest.mark.parametrize("kind", ["numpy", "numpy_view", "numpy_scalar", "torch", "torch_grad"])
def test_reused_ids_of_dead_arrays_never_return_other_data(kind):
    # Temporaries die each iteration, so CPython hands their ids to the next arrays; a
    # Tensor built from an array must hold that array's numbers (oracle: numpy of the input),
    # whether the Tensor of the dead array is still alive (kept) or dead too.
    if kind.startswith("torch"):
        torch = pytest.importorskip("torch")
    make = {
        "numpy": lambda v: np.full(2, v),
        "numpy_view": lambda v: np.full((2, 2), v)[:, 0],
        "numpy_scalar": lambda v: np.float64(v),
        "torch": lambda v: torch.full((2,), v),
        "torch_grad": lambda v: torch.full((2,), v, requires_grad=True) * 1.0,
    }[kind]
    kept = []
    for i in range(300):
        x = make(float(i))
        t = fc.Tensor(x, {} if np.ndim(x.detach() if kind == "torch_grad" else x) == 0
                      else {"i": B2})
        data = t.data.detach() if hasattr(t.data, "detach") else t.data
        expect = x.detach() if hasattr(x, "detach") else x
        np.testing.assert_array_equal(np.asarray(data), np.asarray(expect))
        if i % 2:
            kept.append(t)
        del x, t, data, expect
    # (CPython reuses most of these ids; how many depends on its allocator and on what else
    # the process holds, so the data check above is the assertion.)
