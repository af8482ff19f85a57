"""The registry of op domain rules against brute force: every op with a rule is evaluated on
small numpy arrays of the argument domains, and the array it returns must have the shape of
the domain its rule gives (and the values the domain allows, where the domain says Bint)."""

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.domains import Bint, Domain, Real, Reals
from funsor_core.ops.domain_rules import DOMAIN_RULES, find_domain_rule

RNG = np.random.default_rng(0)

_MATRIX_OPS = {"cholesky", "cholesky_inverse", "det", "logdet", "inv", "triu", "tril", "qr_r",
               "triangular_inv", "transpose", "diagonal", "diag_embed"}
_INT_OPS = {"and_", "or_", "xor", "lshift", "rshift", "floordiv", "mod", "invert"}
# Keyword parameters an op needs (or is worth checking with), each a separate case.
_PARAMS = {
    "clamp": [{"min": 0.2}], "astype": [{"dtype": "real"}, {"dtype": "int"}],
    "full_like": [{"fill_value": 0.5}], "permute": [{"axes": (1, 0)}],
    "reshape": [{"shape": (3, 2)}], "expand": [{"shape": (4, 2, 3)}, {"shape": (4, -1, 3)}],
    "flip": [{"axis": 0}, {}], "transpose": [{}, {"dim0": 0, "dim1": 2}],
    "diagonal": [{}, {"dim1": 0, "dim2": 1}], "argmax": [{"axis": 0}, {"axis": -1}],
    "argmin": [{"axis": 1}],
}
# Sums and products of Bint[n] values keep the domain Bint[n] (as funsor), not a value bound.
_UNBOUNDED = {"sum", "prod"}
# astype(x, dtype="int") of a Real keeps the domain Real (whole numbers in a real output).
_WHOLE_REALS = {"astype"}
_REDUCE_PARAMS = [{}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)}]


def _spd(batch: tuple, n: int) -> np.ndarray:
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _array(domain) -> np.ndarray:
    if domain.dtype == "real":
        return RNG.uniform(0.1, 0.9, size=domain.shape)
    return RNG.integers(0, domain.dtype, size=domain.shape)


def _cases(op):
    """(argument domains, argument arrays, params) to evaluate ``op`` on."""
    name = op.name
    if name in ("matmul",):
        return [((Reals[2, 3], Reals[3, 4]),), ((Reals[3], Reals[3, 4]),),
                ((Reals[2, 3], Reals[3]),)]
    if name in ("triangular_solve", "cholesky_solve"):
        return [((Reals[3, 2], Reals[2, 3, 3]),)]
    if name in _MATRIX_OPS:
        return [((Reals[2, 3, 3],),)]
    if isinstance(op, ops.ReductionOp):
        return [((Reals[2, 3],),), ((_bint23(),),)]
    if isinstance(op, ops.BinaryOp):
        ints = ((Bint[3], Bint[4]),)
        return [ints] if name in _INT_OPS else [((Reals[2, 1], Reals[3]),), ints]
    if name == "invert":
        return [((Bint[2],),)]
    if name == "full_like":  # a Bint output is filled with an integer only
        return [((Reals[2, 3],),)]
    return [((Reals[2, 3],),), ((_bint23(),),)]


def _bint23():
    return Domain(3, (2, 3))


def _arrays(op, domains):
    if op.name in ("triangular_solve", "cholesky_solve"):
        y = np.linalg.cholesky(_spd((2,), 3))
        return [_array(domains[0]), y]
    if op.name in _MATRIX_OPS:
        return [_spd((2,), 3)]
    if op.name == "invert":
        return [RNG.integers(0, 2, size=()).astype(bool)]
    return [_array(d) for d in domains]


def _ops_with_rules():
    return [op for op in ops.REQUIRED_OPS if find_domain_rule(op) is not None]


# The library's own rules, read when this module is imported (before any test or doctest
# registers rules for ops it makes, as docs/extending.md does).
LIBRARY_RULES = tuple(DOMAIN_RULES)


def test_every_registered_rule_types_some_op():
    # Each rule target is an op's own class, or a family that some op with that rule inherits.
    covered = {type(op) for op in _ops_with_rules()}
    for cls in LIBRARY_RULES:
        assert any(issubclass(c, cls) for c in covered), cls


def test_ops_without_rules_raise():
    with pytest.raises(ValueError, match="no domain rule for ops.getitem"):
        ops.infer_domain(ops.getitem, Reals[2])
    assert all(find_domain_rule(op) is None for op in (ops.einsum, ops.cat, ops.where))


@pytest.mark.parametrize("op", _ops_with_rules(), ids=lambda op: op.name)
def test_rule_matches_brute_force(op):
    params_list = _PARAMS.get(op.name) or (
        _REDUCE_PARAMS if isinstance(op, ops.ReductionOp) else [{}])
    for (domains,) in _cases(op):
        for params in params_list:
            bound = op.bind(**params) if params else op
            out = ops.infer_domain(bound, *domains)
            with np.errstate(all="ignore"):
                value = np.asarray(bound(*_arrays(op, domains)))
            assert value.shape == out.shape, (op.name, params, domains, out)
            if out.dtype != "real" and value.dtype.kind in "biu" and op.name not in _UNBOUNDED:
                assert value.min() >= 0 and value.max() < out.dtype, (op.name, domains, out)
            if out.dtype == "real" and all(d.dtype == "real" for d in domains) and (
                    op.name not in _WHOLE_REALS):
                assert value.dtype.kind == "f", (op.name, domains)


def test_real_valued_unary_makes_integers_real():
    for op in (ops.exp, ops.log, ops.sqrt, ops.neg, ops.lgamma):
        assert ops.infer_domain(op, Bint[3]) is Real
    assert ops.infer_domain(ops.abs, Bint[3]) is Bint[3]


def test_a_new_rule_takes_effect_at_once():
    op = ops.make_op("test_domain_rules_shape", ops.UnaryOp)
    assert ops.infer_domain(op, Reals[3]) is Reals[3]  # the UnaryOp family's rule, cached

    @ops.domain_rule(op)
    def domain_test_domain_rules_shape(op, params, domains):
        return Reals[domains[0].shape[0] + 1]

    assert find_domain_rule(op) is domain_test_domain_rules_shape
    assert ops.infer_domain(op, Reals[3]) is Reals[4]
    del DOMAIN_RULES[type(op)]
