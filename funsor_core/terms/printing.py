"""Text forms of terms: ``quote`` (evaluates back to an equal term), ``pretty`` (a tree) and
the short ``repr``. All are iterative, so a 10^5-deep chain prints without recursion, and
``quote`` and ``pretty`` write each distinct subterm once, so their text is linear in the
number of distinct subterms.

Example:
    >>> fc.quote(fc.Variable("x", fc.Real).exp())
    "Unary(ops.exp, Variable('x', Real))"
"""

from __future__ import annotations

from typing import Any

from funsor_core.domains import Domain
from funsor_core.engine.backend import backend_of, host_backend
from funsor_core.engine.protocol import children, terms_in
from funsor_core.ops import Op
from funsor_core.terms.base import Funsor, register_term_hook

__all__ = ["quote", "pretty", "short_repr", "plain_str"]

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
        if short:
            module = type(x).__module__.split(".")[0]
            return f"{module}.array(shape={tuple(shape)}, dtype={x.dtype})"
        return backend_of(x, host_backend()).array_literal(x)
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
        pending = [c for c in children(node) if id(c) not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        parts = [_render_arg(a, memo, short) for a in node._args]
        memo[id(node)] = f"{type(node).__name__}({', '.join(parts)})"
    return memo[id(expr)]


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

    A subterm that occurs more than once and is compound (or holds arrays) is written once, as
    ``(_t1 := ...)``, and referred to as ``_t1`` afterwards, so the text is linear in the
    number of distinct subterms (funsor 0.4.8 repeats it, which is exponential on a DAG).

    Example:
        >>> fc.quote(fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]}))
        "Tensor(np.array([1.0, 2.0], dtype=np.float64), (('i', Bint[2]),), 'real')"
        >>> y = fc.Variable("x", fc.Real).exp()
        >>> fc.quote(y * y).endswith("((_t1 := Unary(ops.exp, Variable('x', Real))), _t1))")
        True
    """
    if not isinstance(expr, Funsor):
        return _quote_leaf(expr, False)
    refs = _count_refs(expr)
    labels: dict[int, str] = {}
    # Emit text pieces from an explicit stack: memoizing each subterm's full text (as the short
    # repr does) would take quadratic memory on a long chain.
    out: list[str] = []
    stack: list = [(False, expr)]
    while stack:
        literal, item = stack.pop()
        if literal:
            out.append(item)
        elif isinstance(item, Funsor):
            label = labels.get(id(item))
            if label is not None:
                out.append(label)
                continue
            close = ")"
            if refs[id(item)] > 1 and _worth_naming(item):
                label = labels[id(item)] = f"_t{len(labels) + 1}"
                out.append(f"({label} := ")
                close = "))"
            pieces = getattr(item, "_quote_pieces", None)
            if pieces is not None:
                # A term quoted in the syntax that builds it (``x[i]``): texts and subterms.
                stack.append((True, close))
                for piece in reversed(pieces()):
                    stack.append((type(piece) is str, piece))
                stack.append((True, "("))
                continue
            stack.append((True, close))
            _push_items(stack, item._args)
            stack.append((True, type(item).__name__ + "("))
        elif type(item) is tuple:
            stack.append((True, ",)" if len(item) == 1 else ")"))
            _push_items(stack, item)
            stack.append((True, "("))
        else:
            out.append(_quote_leaf(item, False))
    return "".join(out)


def _count_refs(expr: Funsor) -> dict[int, int]:
    # How many times each distinct subterm is an argument (the root counts once); iterative.
    refs = {id(expr): 1}
    keep = [expr]  # ids are only meaningful while the objects are alive
    stack = [expr]
    while stack:
        node = stack.pop()
        for c in children(node):
            n = refs.get(id(c))
            if n is None:
                refs[id(c)] = 1
                keep.append(c)
                stack.append(c)
            else:
                refs[id(c)] = n + 1
    return refs


def _worth_naming(node: Funsor) -> bool:
    # A repeated leaf without arrays (Variable('x', Real), Number(1.0)) is as short as a name.
    if getattr(type(node), "arrays", ()):
        return True
    return bool(children(node))


def _push_items(stack: list, items: tuple) -> None:
    # Push ``items`` separated by ", " so that they pop in order.
    for k in range(len(items) - 1, -1, -1):
        stack.append((False, items[k]))
        if k:
            stack.append((True, ", "))


def short_repr(expr: Any) -> str:
    """The ``repr`` of a term: like ``quote`` but with arrays summarized by shape and dtype.

    Example:
        >>> short_repr(fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2]}))
        "Tensor(numpy.array(shape=(2, 3), dtype=float64), (('i', Bint[2]),), 'real')"
    """
    return _render(expr, short=True)


def plain_str(expr: Any) -> str:
    """The ``str`` of a term, what ``print`` shows. A term holding its numbers in one array
    (a ``Tensor``) shows them, as funsor 0.4.8 does: a real one with no inputs prints as the
    array, others as ``Tensor(<array>, {inputs}[, dtype])``; every other term prints as its
    ``repr`` (arrays summarized by shape).

    Example:
        >>> print(fc.Tensor(np.array(-1.5)))
        -1.5
        >>> print(fc.Tensor(np.array([1, 0]), {"i": fc.Bint[2]}, 2))
        Tensor([1 0], {'i': Bint[2]}, 2)
        >>> print(fc.Variable("x", fc.Real))
        Variable('x', Real)
    """
    if type(expr).arrays != ("data",) or children(expr):
        return short_repr(expr)
    data = str(expr.data)
    if not expr.inputs and expr.output.dtype == "real":
        return data
    head = f"{type(expr).__name__}("
    data = data.replace("\n", "\n" + " " * len(head))  # continuation lines under the array
    text = f"{head}{data}, {dict(expr.inputs)!r}"
    if expr.output.dtype != "real":
        text += f", {expr.output.dtype!r}"
    return text + ")"


_MAX_INDENT = 32  # deeper lines keep this indent and show their depth as "[d] "
_MAX_INPUTS = 8  # inputs listed per line; the rest are counted
_MAX_LEAF = 120  # characters of a non-term argument shown per line


def pretty(expr: Any, maxlen: int = 100_000) -> str:
    """A readable indented tree of ``expr``, one line per term, at most ``maxlen`` lines.

    The text is linear in the number of distinct subterms: a repeated compound subterm is
    printed once with a label ``#k`` and later lines only name it (``#k (see above)``);
    indentation stops growing at depth 32, past which a line shows its depth (``[40]``);
    a line lists at most 8 inputs. funsor 0.4.8 repeats shared subterms and indents without
    bound, which is quadratic on a 10^4-term sum.

    Example:
        >>> print(fc.pretty(fc.Variable("x", fc.Real).exp()))
        Unary ops.exp  inputs={x: Real} output=Real
          Variable 'x' Real  inputs={x: Real} output=Real
    """
    if not isinstance(expr, Funsor):
        return _clip(_quote_leaf(expr, True))
    refs = _count_refs(expr)
    labels: dict[int, str] = {}
    lines: list[str] = []
    stack = [(expr, 0)]
    while stack and len(lines) < maxlen:
        node, depth = stack.pop()
        if depth <= _MAX_INDENT:
            indent = "  " * depth
        else:
            indent = "  " * _MAX_INDENT + f"[{depth}] "
        if not isinstance(node, Funsor):
            lines.append(indent + _clip(_quote_leaf(node, True)))
            continue
        label = labels.get(id(node))
        if label is not None:
            lines.append(f"{indent}{type(node).__name__} {label} (see above)")
            continue
        kids = children(node)
        tag = ""
        if kids and refs[id(node)] > 1:
            label = labels[id(node)] = f"#{len(labels) + 1}"
            tag = " " + label
        leaves = [_clip(_quote_leaf(a, True)) for a in node._args if not _has_funsor(a)]
        lines.append(f"{indent}{type(node).__name__}{tag} {' '.join(leaves)}  "
                     f"inputs={{{_inputs_text(node.inputs)}}} output={node.output}")
        for c in reversed(kids):
            stack.append((c, depth + 1))
    return "\n".join(lines)


def _inputs_text(inputs: dict) -> str:
    shown = [f"{k}: {v}" for k, v in _first(inputs.items(), _MAX_INPUTS)]
    if len(inputs) > _MAX_INPUTS:
        shown.append(f"... {len(inputs) - _MAX_INPUTS} more")
    return ", ".join(shown)


def _first(items, n: int) -> list:
    out = []
    for item in items:
        if len(out) == n:
            break
        out.append(item)
    return out


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LEAF else text[:_MAX_LEAF - 3] + "..."


def _has_funsor(arg: Any) -> bool:
    return bool(terms_in(arg)) or (type(arg) is tuple and len(arg) > 0 and isinstance(arg[0], tuple)
                         and any(isinstance(x, Funsor) for pair in arg for x in pair))


def _quote_method(self) -> str:
    """``term.quote()``: the same as ``quote(term)`` (funsor 0.4.8 offers both spellings).

    Example:
        >>> fc.Variable("x", fc.Real).quote()
        "Variable('x', Real)"
    """
    return quote(self)


def _pretty_method(self, maxlen: int = 100_000) -> str:
    """``term.pretty()``: the same as ``pretty(term)`` (funsor 0.4.8 offers both spellings).

    Example:
        >>> print(fc.Variable("x", fc.Real).pretty())
        Variable 'x' Real  inputs={x: Real} output=Real
    """
    return pretty(self, maxlen)


register_term_hook("repr", short_repr)
register_term_hook("str", plain_str)
Funsor.quote = _quote_method
Funsor.pretty = _pretty_method
