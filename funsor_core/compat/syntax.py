"""``rewrite_ops``: write a rule over a semiring with Python's operators (funsor's
``funsor.syntax.rewrite_ops``).

A decorator that reads the function's source, replaces each operator by a call of the name
given for it (``a + b`` -> ``sum_op(a, b)``, ``-a`` -> ``neg_op(a)``, ``0.0`` -> ``zero``),
and compiles the result in the function's own module, so the names resolve to the function's
parameters or locals at each call. The decorators of the source are dropped: the rewritten
function is what the decorator returns, and decorators above it apply to it once.

Example:
    >>> @rewrite_ops({"+": "sum_op", "*": "prod_op"})
    ... def product_rule(sum_op, prod_op, a, b, c):
    ...     return a * b + a * c
    >>> product_rule(max, ops.add, 1.0, 2.0, 5.0)  # max(1 + 2, 1 + 5)
    6.0
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable

__all__ = ["rewrite_ops"]

_INFIX = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv,
          "%": ast.Mod, "**": ast.Pow, "@": ast.MatMult, "&": ast.BitAnd, "|": ast.BitOr,
          "^": ast.BitXor, "<<": ast.LShift, ">>": ast.RShift}
_PREFIX = {"-": ast.USub, "+": ast.UAdd, "~": ast.Invert, "not": ast.Not}


def rewrite_ops(infix_ops: dict, prefix_ops: dict | None = None,
                const_ops: dict | None = None) -> Callable[[Callable], Callable]:
    """Decorator: rewrite operators in a function's body into calls of named functions.

    Args:
        infix_ops: binary operator symbol -> name, e.g. ``{"+": "sum_op", "*": "prod_op"}``.
        prefix_ops: unary operator symbol -> name, e.g. ``{"-": "neg_op"}``.
        const_ops: constant -> name, e.g. ``{0.0: "zero"}``.

    Raises:
        ValueError: an operator symbol that Python does not have.
        OSError: the function's source cannot be read (defined in a REPL or ``exec``).

    Example:
        >>> @rewrite_ops({"-": "sub_op"}, {"-": "neg_op"}, {0.0: "zero"})
        ... def f(sub_op, neg_op, zero, x):
        ...     return -(x - 0.0)
        >>> f(ops.sub, ops.neg, 1.0, 3.0)  # -(3 - 1)
        -2.0
    """
    binary = {_op_type(_INFIX, k): v for k, v in infix_ops.items()}
    unary = {_op_type(_PREFIX, k): v for k, v in (prefix_ops or {}).items()}
    consts = dict(const_ops or {})

    def decorate(fn: Callable) -> Callable:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        (fn_def,) = tree.body
        fn_def.decorator_list = []
        tree = ast.fix_missing_locations(_Rewriter(binary, unary, consts).visit(tree))
        scope: dict = {}
        exec(compile(tree, inspect.getsourcefile(fn) or "<rewrite_ops>", "exec"),
             fn.__globals__, scope)
        new = scope[fn_def.name]
        new.__module__ = fn.__module__
        new.__qualname__ = fn.__qualname__
        return new

    return decorate


def _op_type(table: dict, symbol: str) -> type:
    if symbol not in table:
        raise ValueError(f"rewrite_ops: {symbol!r} is not a Python operator; use one of "
                         f"{sorted(table)}")
    return table[symbol]


class _Rewriter(ast.NodeTransformer):
    def __init__(self, binary: dict, unary: dict, consts: dict):
        self.binary, self.unary, self.consts = binary, unary, consts

    def _call(self, name: str, args: list, node: ast.AST) -> ast.Call:
        return ast.copy_location(ast.Call(ast.Name(name, ast.Load()), args, []), node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        name = self.binary.get(type(node.op))
        return node if name is None else self._call(name, [node.left, node.right], node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        name = self.unary.get(type(node.op))
        return node if name is None else self._call(name, [node.operand], node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        # Keyed by value and type, so that 0.0 is not 0 nor False (0 == 0.0 == False).
        for const, name in self.consts.items():
            if type(const) is type(value) and const == value:
                return ast.copy_location(ast.Name(name, ast.Load()), node)
        return node
