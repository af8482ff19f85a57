"""``lazy`` records terms; ``reinterpret`` under ``exact`` gives the eager result."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real
from funsor_core.engine.backend import backend_module
from funsor_core.testing import assert_close, random_tensor
from interpretations import exact, lazy


def _factors():
    np.random.seed(0)
    a = random_tensor({"i": Bint[2], "j": Bint[3]})
    b = random_tensor({"j": Bint[3], "k": Bint[4]})
    c = random_tensor({"k": Bint[4], "i": Bint[2]})
    return a, b, c


def _expr(a, b, c):
    return ((a + b) * c.exp()).reduce(ops.logaddexp, "j").reduce(ops.max, ("i",)) - 1.0


def test_lazy_records_and_reinterprets(backend):
    a, b, c = _factors()
    eager = _expr(a, b, c)
    with lazy:
        term = _expr(a, b, c)
    assert isinstance(term, fc.Binary) and isinstance(term.lhs, fc.Reduce)
    assert term.inputs == eager.inputs and term.output is eager.output
    with exact:
        assert_close(fc.reinterpret(term), eager)
    assert_close(fc.reinterpret(term), eager)  # exact is the default


def test_lazy_substitution_equals_eager(backend):
    a, b, c = _factors()
    with lazy:
        term = _expr(a, b, c)
        sub = term(k=2)
        assert isinstance(sub, fc.Binary)
    assert_close(fc.reinterpret(sub), _expr(a, b, c)(k=2))
    idx = fc.Tensor(backend_module().asarray([3, 1, 0], "int"), {"n": Bint[3]}, 4)
    assert_close(term(k=idx), _expr(a, b, c)(k=idx))
    assert_close(term(k="m"), _expr(a, b, c)(k="m"))


def test_lazy_variables_substituted_by_tensors(backend):
    a, b, _ = _factors()
    x = fc.Variable("x", Real)
    with lazy:
        term = (a * x).reduce(ops.add, "j") + x
    assert term.inputs == {"i": Bint[2], "x": Real}
    value = fc.Tensor(backend_module().asarray([0.5, -1.0, 2.0, 3.0], "real"), {"k": Bint[4]})
    expected = (a * value).reduce(ops.add, "j") + value
    assert_close(term(x=value), expected)
    assert_close(fc.reinterpret(term)(x=2.0), (a * 2.0).reduce(ops.add, "j") + 2.0)


def test_capture_avoiding_substitution_into_reduce():
    # Reduce binds 'j'; substituting a value that has a free 'j' must not capture it.
    np.random.seed(1)
    a = random_tensor({"i": Bint[3], "j": Bint[3]})
    y = fc.Variable("y", Real)
    with lazy:
        term = (a + y).reduce(ops.add, "j")
    value = fc.Tensor(np.array([10.0, 20.0, 30.0]), {"j": Bint[3]})
    result = term(y=value)
    assert result.inputs == {"i": Bint[3], "j": Bint[3]}
    # Oracle: sum over the bound j of a[i, j'] + value[j] = rowsum(a)[i] + 3 * value[j].
    expected = a.data.sum(1)[:, None] + 3 * value.data[None, :]
    assert_close(result, fc.Tensor(expected, {"i": Bint[3], "j": Bint[3]}))
    with lazy:
        lazy_result = term(y=value)
    assert lazy_result.inputs == {"i": Bint[3], "j": Bint[3]}
    assert_close(fc.reinterpret(lazy_result), result)


def test_long_lazy_sum_has_no_recursion_limit():
    # A chain 10x deeper than the (lowered) recursion limit: building, evaluating, printing,
    # quoting and substituting must all be iterative. (A limit of 300 stands in for a chain
    # of 10^5 terms under the default limit, at a fraction of the time.)
    import sys

    n = 3_000
    data = np.arange(n, dtype=float) % 7
    ts = [fc.Tensor(np.array([data[k], -data[k]]), {"i": Bint[2]}) for k in range(n)]
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        _check_long_lazy_sum(ts, data, n)
    finally:
        sys.setrecursionlimit(old_limit)


def _check_long_lazy_sum(ts, data, n):
    with lazy:
        acc = ts[0]
        for t in ts[1:]:
            acc = acc + t
    assert isinstance(acc, fc.Binary)
    total = data.sum()
    assert_close(fc.reinterpret(acc), fc.Tensor(np.array([total, -total]), {"i": Bint[2]}))
    assert repr(acc).startswith("Binary(ops.add, Binary(ops.add")
    assert fc.quote(acc).count("Binary(") == n - 1
    assert_close(acc(i=1), fc.Tensor(np.array(-total)))


def test_lazy_reduce_merges_and_drops():
    a, _, _ = _factors()
    with lazy:
        r = a.reduce(ops.add, "i").reduce(ops.add, "j")
        assert isinstance(r, fc.Reduce) and r.reduced_vars == frozenset({"i", "j"})
        assert fc.Reduce(ops.add, a, frozenset()) is a
    assert_close(fc.reinterpret(r), fc.Number(float(a.data.sum())) + 0 * a.reduce(ops.add))


# Subs of a lazy Cat: an int selects the part holding it, a Slice selects from each part the
# stretch it covers, a Variable renames (issue 27, item 10). Oracle: numpy concatenation.
@pytest.mark.parametrize("index", [0, 2, 4, (0, 5, 1), (1, 5, 2), (0, 5, 3), (2, 4, 1), "v"])
def test_lazy_subs_cat(index):
    a = random_tensor({"u": Bint[2], "i": Bint[2]})
    b = random_tensor({"u": Bint[3], "i": Bint[2]})
    full = np.concatenate([ops.to_numpy(a.align(("u", "i")).data),
                           ops.to_numpy(b.align(("u", "i")).data)])
    if isinstance(index, int):
        value, expected = fc.Number(index, 5), full[index]
    elif isinstance(index, tuple):
        value, expected = fc.Slice("u", *index, 5), full[slice(*index)]
    else:
        value, expected = fc.Variable("v", Bint[5]), full
    with lazy:
        cat = fc.Cat("u", (a, b))
        result = cat(u=value)
    assert type(cat) is fc.Cat  # the Subs went into the parts, past the Cat
    assert not (isinstance(result, fc.Subs) and isinstance(result.arg, fc.Cat))
    result = fc.reinterpret(result)
    names = tuple(n for n in ("u", "v", "i") if n in result.inputs)
    assert_close(ops.to_numpy(result.align(names).data), expected)
