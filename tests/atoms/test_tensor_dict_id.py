"""``Tensor(array, inputs)`` finds a validated signature by the inputs dict's ``id`` (issue #29,
h59), then compares the dict's pairs and order with the copy kept there: a dict mutated in
place, reordered, or a new dict at a freed address must never pass as the signature held.
Oracles: the dict itself (its items in order), numpy for the data, and the full check's
errors."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.atoms.tensor_checks import _BY_DICT_ID
from funsor_core.domains import Bint, Reals
from funsor_core.terms.base import DomainError

B2, B3 = Bint[2], Bint[3]


def _check(t, data, inputs) -> None:
    assert list(t.inputs.items()) == list(inputs.items())
    assert t._ikey == tuple(inputs.items())
    np.testing.assert_array_equal(t.data, data)


def _known(inputs: dict) -> None:
    # Builds until the dict's id is recorded (the first build validates the signature, the
    # second records the dict), so the next build takes the path under test.
    shape = tuple(d.dtype for d in inputs.values())
    for _ in range(2):
        fc.Tensor(np.zeros(shape), inputs)
    assert id(inputs) in _BY_DICT_ID


def test_a_dict_mutated_in_place_is_checked_again():
    d = {"i": B2, "j": B2}
    x = np.arange(4.0).reshape(2, 2)
    _known(d)
    _check(fc.Tensor(x, d), x, d)
    d.pop("i")
    d["i"] = B2  # the same pairs in another order: the dims now mean (j, i)
    y = np.arange(4.0).reshape(2, 2) + 10
    t = fc.Tensor(y, d)
    _check(t, y, d)
    np.testing.assert_array_equal(t.align(("i", "j")).data, y.T)
    _known(d)
    d["j"] = B3  # another domain: the shape is checked against it
    with pytest.raises(DomainError, match=r"shape \(2, 2\) does not match its inputs"):
        fc.Tensor(np.zeros((2, 2)), d)
    z = np.ones((3, 2))
    _check(fc.Tensor(z, d), z, d)
    d["k"] = B2  # one input more
    with pytest.raises(DomainError, match="does not match"):
        fc.Tensor(np.zeros((3, 2)), d)
    d.clear()
    d["i"] = B2  # one input, a name seen before in that dict
    w = np.zeros((2, 5))
    t = fc.Tensor(w, d)
    _check(t, w, d)
    assert t.output is Reals[5]


def test_fresh_dicts_at_reused_addresses_keep_their_own_order():
    # Temporary dicts die each iteration, so CPython hands their addresses to the next ones;
    # each Tensor must have its own dict's order and values, whatever the address held.
    rng = np.random.default_rng(0)
    orders = [("i", "j"), ("j", "i"), ("i", "k"), ("k", "i", "j"), ("j",)]
    sizes = {"i": 2, "j": 3, "k": 2}
    for step in range(200):
        names = orders[step % len(orders)]
        x = rng.normal(size=tuple(sizes[n] for n in names))
        inputs = {n: Bint[sizes[n]] for n in names}
        if step < len(orders):
            _known(inputs)
        _check(fc.Tensor(x, inputs), x, inputs)


def test_a_bad_value_at_a_known_address_gets_the_full_check():
    d = {"i": B2}
    _known(d)
    d["i"] = np.zeros(3)  # not a domain; == against the kept copy is no bool
    with pytest.raises(TypeError, match="map names to domains"):
        fc.Tensor(np.zeros(2), d)
    d["i"] = fc.Real
    with pytest.raises(DomainError, match="must be a Bint"):
        fc.Tensor(np.zeros(2), d)


def test_ordered_dict_takes_the_same_path_with_its_own_order():
    # funsor's and Pyro's spelling: an OrderedDict, also one reordered at a recorded address
    # and one compared with a dict of the same pairs in another order.
    from collections import OrderedDict

    x = np.arange(6.0).reshape(2, 3)
    od = OrderedDict([("i", B2), ("j", B3)])
    _known(od)
    t = fc.Tensor(x, od)
    _check(t, x, od)
    assert t is fc.Tensor(x, {"i": B2, "j": B3})
    od.move_to_end("i")  # now (j, i): the shape (2, 3) no longer fits
    with pytest.raises(DomainError, match="does not match its inputs"):
        fc.Tensor(x, od)
    _check(fc.Tensor(x.T.copy(), od), x.T, od)


@pytest.mark.parametrize("spelling", [dict, "OrderedDict"])
def test_int_dtype_fast_path_keeps_the_checks(spelling):
    # Tensor(indices, inputs, n): after a valid build, float data, a wrong shape and a
    # negative bound still raise; the values are numpy's own.
    from collections import OrderedDict

    make = OrderedDict if spelling == "OrderedDict" else dict
    idx = np.array([[0, 2, 1], [1, 1, 0]])
    inputs = make([("i", B2), ("j", B3)])
    for _ in range(2):
        t = fc.Tensor(idx, inputs, 3)
    assert t.output is Bint[3] and t.dtype == 3
    np.testing.assert_array_equal(t.data, idx)
    assert t(i=1, j=0).item() == idx[1, 0]
    with pytest.raises(DomainError, match="cannot hold Bint"):
        fc.Tensor(idx.astype(float), inputs, 3)
    with pytest.raises(DomainError, match="does not match its inputs"):
        fc.Tensor(idx.T.copy(), inputs, 3)
    with pytest.raises(ValueError, match="non-negative"):
        fc.Tensor(idx, inputs, -1)
    assert fc.Tensor(idx[:, :, None], inputs, 3).output is fc.Array[3, (1,)]
