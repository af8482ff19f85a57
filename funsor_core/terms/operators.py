"""The operator methods of every funsor: ``f + g`` is ``Binary(ops.add, f, g)``, ``-f`` is
``Unary(ops.neg, f)``, ``f.sum()`` is ``ops.sum(f)``, installed on ``Funsor`` when the terms
package loads (``terms/__init__.py`` imports this module right after ``terms/base.py``).

The hot path of every eager op: a funsor operand skips ``to_funsor``'s call; when the
interpretation would only run its rules (``engine/fast_path.py``), ``Binary._prepare``'s checks
are made here and the rules run directly, without the constructor's and interpreter's frames:
the same rules, the same errors, the same term. Before that, the first rule's eager program
(``eager_programs("eager_binary")``), where it has one, may answer the commonest case (two
Tensors with the same inputs) in one frame, or decline.

Example:
    >>> x = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
    >>> (x + x).data, (-x).data, (x < 1.0).data
    (array([0., 2., 4.]), array([-0., -1., -2.]), array([ True, False, False]))
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.engine.fast_path import eager_programs, eager_rules, run_rules
from funsor_core.engine.protocol import Term, _hook
from funsor_core.terms.base import Binary, Funsor, Number, Unary, binary_domains, to_funsor

__all__: list = []

# The first rule's one-frame answer for the commonest eager case (a live table).
_EAGER_BINARY = eager_programs("eager_binary")


def _float_number(x: float) -> Funsor:
    # ``Number(x)`` (its _prepare keeps a float as it is): when building it would only run
    # its rules, run them here, without the constructor's and interpreter's frames.
    rules = eager_rules(_FLOAT_NUMBER)
    return Number(x) if rules is None else run_rules(rules, Number, (x, "real"))


_FLOAT_NUMBER = (Number, float, str)


def _binary_method(op, reflected: bool):
    op_type = type(op)

    def method(self, other):
        if not isinstance(other, Funsor):
            other = _float_number(other) if type(other) is float else to_funsor(other)
        lhs, rhs = (other, self) if reflected else (self, other)
        rules = eager_rules((Binary, op_type, type(lhs), type(rhs)))
        if not rules:
            return Binary(op, lhs, rhs)
        fast = _EAGER_BINARY.get(rules[0])
        if fast is not None and (result := fast(op, lhs, rhs)) is not None:
            return result
        binary_domains(op, lhs, rhs)
        return run_rules(rules, Binary, (op, lhs, rhs))

    method.__doc__ = f"``ops.{op.name}`` elementwise, broadcasting inputs by name."
    return method


# The methods' examples check each against numpy on the data: ``d`` holds an input ``i`` as
# its first axis, so numpy reduces the last one where the method reduces the output's.
_EXAMPLE = """

Example:
    >>> x = fc.Tensor(np.array([[0.25, 0.5], [0.125, 0.75]]), {{"i": fc.Bint[2]}})
    >>> d = x.data  # axis 0 is the input i, axis 1 the output
    >>> np.allclose({call}, {oracle})
    True
"""
_UNARY_ORACLES = {
    "exp": "np.exp(d)", "log": "np.log(d)", "log1p": "np.log1p(d)", "expm1": "np.expm1(d)",
    "sqrt": "np.sqrt(d)", "sigmoid": "1 / (1 + np.exp(-d))", "tanh": "np.tanh(d)",
    "reciprocal": "1 / d", "abs": "np.abs(d)", "atanh": "np.arctanh(d)",
}
_REDUCTION_ORACLES = {
    "sum": "d.sum(-1)", "prod": "d.prod(-1)", "logsumexp": "np.log(np.exp(d).sum(-1))",
    "max": "d.max(-1)", "min": "d.min(-1)", "mean": "d.mean(-1)", "argmax": "d.argmax(-1)",
    "argmin": "d.argmin(-1)", "all": "(d > 0.2).all(-1)", "any": "(d > 0.2).any(-1)",
}


def _example(name: str, oracles: dict) -> str:
    if name not in oracles:
        return ""
    subject = "(x > 0.2)" if name in ("all", "any") else "x"
    return _EXAMPLE.format(call=f"{subject}.{name}().data", oracle=oracles[name])


def _reduction_method(op, name, default_axis=None):
    def method(self, axis=default_axis, keepdims=False):
        return op(self, axis=axis, keepdims=keepdims)
    method.__doc__ = (f"``ops.{op.name}`` over the output dims ``axis`` (inputs are kept)."
                      + _example(name, _REDUCTION_ORACLES))
    return method


def _unary_method(op, name):
    op_type = type(op)

    def method(self):
        # Unary has no checks of its own: the rules run directly (see _binary_method).
        rules = eager_rules((Unary, op_type, type(self)))
        return run_rules(rules, Unary, (op, self)) if rules else Unary(op, self)

    method.__doc__ = f"``ops.{op.name}`` elementwise." + _example(name, _UNARY_ORACLES)
    return method


_BINARY_METHODS = {
    "add": ops.add, "sub": ops.sub, "mul": ops.mul, "truediv": ops.truediv, "pow": ops.pow,
    "matmul": ops.matmul, "and": ops.and_, "or": ops.or_, "xor": ops.xor,
    "floordiv": ops.floordiv, "mod": ops.mod, "lshift": ops.lshift, "rshift": ops.rshift,
}
_COMPARISONS = {"lt": ops.lt, "le": ops.le, "gt": ops.gt, "ge": ops.ge, "eq": ops.eq,
                "ne": ops.ne}
_UNARY_METHODS = {
    "__neg__": ops.neg, "__abs__": ops.abs, "__invert__": ops.invert, "exp": ops.exp,
    "log": ops.log, "log1p": ops.log1p, "expm1": ops.expm1, "sqrt": ops.sqrt,
    "sigmoid": ops.sigmoid, "tanh": ops.tanh, "reciprocal": ops.reciprocal,
    "abs": ops.abs, "atanh": ops.atanh,
}
for _name, _op in _BINARY_METHODS.items():
    setattr(Funsor, f"__{_name}__", _binary_method(_op, False))
    setattr(Funsor, f"__r{_name}__", _binary_method(_op, True))
for _name, _op in _COMPARISONS.items():
    setattr(Funsor, f"__{_name}__", _binary_method(_op, False))
for _name, _op in _UNARY_METHODS.items():
    setattr(Funsor, _name, _unary_method(_op, _name))
for _name, _op in {"sum": ops.sum, "prod": ops.prod, "logsumexp": ops.logsumexp,
                   "max": ops.amax, "min": ops.amin, "mean": ops.mean, "all": ops.all,
                   "any": ops.any}.items():
    setattr(Funsor, _name, _reduction_method(_op, _name))
Funsor.argmax = _reduction_method(ops.argmax, "argmax", -1)
Funsor.argmin = _reduction_method(ops.argmin, "argmin", -1)


def _number_method(convert):
    # float(f), int(f) as funsor's Tensor and Number have them: the one value of a funsor, or
    # (a lazy term, an atom that is no number, several values) the error naming what it has.
    def method(self):
        return convert(_hook("to_number")(self, f"{convert.__name__}()"))

    method.__name__ = f"__{convert.__name__}__"
    return method


Funsor.__float__ = _number_method(float)
Funsor.__int__ = _number_method(int)
Funsor.__hash__ = Term.__hash__  # defining __eq__ would otherwise drop it
