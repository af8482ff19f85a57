"""Text forms of terms: ``quote`` (evaluates back to an equal term), ``pretty`` (a tree) and
the short ``repr``. All are iterative, so a 10^5-deep chain prints without recursion.

Example:
    >>> fc.quote(fc.Variable("x", fc.Real).exp())
    "Unary(ops.exp, Variable('x', Real))"
"""

from __future__ import annotations

from typing import Any

import numpy as np

from funsor_core.domains import Domain
from funsor_core.ops import Op
from funsor_core.terms import Funsor, register_term_hook

__all__ = ["quote", "pretty", "short_repr"]

_MAX_CHILD = 300


def _quote_leaf(x: Any, short: bool) -> str:
    if isinstance(x, Domain) or isinstance(x, Op):
        return repr(x)
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_quote_leaf(v, short)}" for k, v in x.items()) + "}"
    if isinstance(x, frozenset):
        return "frozenset({" + ", ".join(repr(v) for v in sorted(x)) + "})"
    shape = getattr(x, "shape", None)
    if shape is not None and hasattr(x, "dtype") and not isinstance(x, (int, float)):
        module = type(x).__module__.split(".")[0]
        if short:
            return f"{module}.array(shape={tuple(shape)}, dtype={x.dtype})"
        data = np.asarray(x.detach().cpu() if module == "torch" else x)
        if module == "torch":
            return f"torch.tensor({data.tolist()!r}, dtype=torch.{str(x.dtype).split('.')[-1]})"
        if module in ("jax", "jaxlib"):
            return f"jnp.array({data.tolist()!r}, dtype=jnp.{data.dtype})"
        return f"np.array({data.tolist()!r}, dtype=np.{data.dtype})"
    if callable(x) and hasattr(x, "__name__"):
        return x.__name__
    return repr(x)


def _render(expr: Any, short: bool) -> str:
    if not isinstance(expr, Funsor):
        return _quote_leaf(expr, short)
    memo: dict[int, str] = {}
    stack = [expr]
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        kids = []
        _funsors_in(node._args, kids)
        pending = [c for c in kids if id(c) not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        parts = [_render_arg(a, memo, short) for a in node._args]
        memo[id(node)] = f"{type(node).__name__}({', '.join(parts)})"
    return memo[id(expr)]


def _funsors_in(arg: Any, out: list) -> None:
    if isinstance(arg, Funsor):
        out.append(arg)
    elif type(arg) is tuple:
        for a in arg:
            _funsors_in(a, out)


def _render_arg(arg: Any, memo: dict, short: bool) -> str:
    if isinstance(arg, Funsor):
        text = memo[id(arg)]
        if short and len(text) > _MAX_CHILD:
            text = text[:_MAX_CHILD] + "...)"
        return text
    if type(arg) is tuple:
        inner = [_render_arg(a, memo, short) for a in arg]
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
    return _quote_leaf(arg, short)


def quote(expr: Any) -> str:
    """Python text that evaluates back to an equal term (with ``fc``'s names, ``np``, ``ops``).

    Example:
        >>> fc.quote(fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]}))
        "Tensor(np.array([1.0, 2.0], dtype=np.float64), (('i', Bint[2]),), 'real')"
    """
    if not isinstance(expr, Funsor):
        return _quote_leaf(expr, False)
    # Emit text pieces from an explicit stack: memoizing each subterm's full text (as the short
    # repr does) would take quadratic memory on a long chain.
    out: list[str] = []
    stack: list = [(False, expr)]
    while stack:
        literal, item = stack.pop()
        if literal:
            out.append(item)
        elif isinstance(item, Funsor):
            stack.append((True, ")"))
            _push_items(stack, item._args)
            stack.append((True, type(item).__name__ + "("))
        elif type(item) is tuple:
            stack.append((True, ",)" if len(item) == 1 else ")"))
            _push_items(stack, item)
            stack.append((True, "("))
        else:
            out.append(_quote_leaf(item, False))
    return "".join(out)


def _push_items(stack: list, items: tuple) -> None:
    # Push ``items`` separated by ", " so that they pop in order.
    for k in range(len(items) - 1, -1, -1):
        stack.append((False, items[k]))
        if k:
            stack.append((True, ", "))


def short_repr(expr: Any) -> str:
    """The ``repr`` of a term: like ``quote`` but with arrays summarized by shape and dtype."""
    return _render(expr, short=True)


def pretty(expr: Any, maxlen: int = 100_000) -> str:
    """A readable indented tree of ``expr``.

    Example:
        >>> print(fc.pretty(fc.Variable("x", fc.Real).exp()))
        Unary ops.exp  inputs={x: Real} output=Real
          Variable 'x' Real  inputs={x: Real} output=Real
    """
    lines: list[str] = []
    stack = [(expr, 0)]
    while stack and len(lines) < maxlen:
        node, depth = stack.pop()
        indent = "  " * depth
        if not isinstance(node, Funsor):
            lines.append(indent + _quote_leaf(node, True))
            continue
        kids: list = []
        _funsors_in(node._args, kids)
        leaves = [_quote_leaf(a, True) for a in node._args if not _has_funsor(a)]
        inputs = ", ".join(f"{k}: {v}" for k, v in node.inputs.items())
        lines.append(f"{indent}{type(node).__name__} {' '.join(leaves)}  "
                     f"inputs={{{inputs}}} output={node.output}")
        for c in reversed(kids):
            stack.append((c, depth + 1))
    return "\n".join(lines)


def _has_funsor(arg: Any) -> bool:
    out: list = []
    _funsors_in(arg, out)
    return bool(out) or (type(arg) is tuple and len(arg) > 0 and isinstance(arg[0], tuple)
                         and any(isinstance(x, Funsor) for pair in arg for x in pair))


register_term_hook("repr", short_repr)
