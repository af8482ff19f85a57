"""Random programs over funsor 0.4.8's public API, as source text (the atoms' families).

A program is Python text that a funsor user could write, run by ``execute.py`` with the names
``funsor, ops, Tensor, Number, Variable, Bint, Real, Reals, OrderedDict`` and the array helpers
``arr`` (numpy -> the active backend), ``A(seed, shape)`` (normal), ``P(seed, shape)`` (in
[0.5, 2]) and ``I(seed, shape, high)`` (integers) in scope; it leaves its answer in ``result``.
The same seed gives the same text, and the helpers give the same numbers in every process.

    >>> import random
    >>> family, tags, src = tensor_program(random.Random(0), "numpy")
    >>> "result =" in src
    True
"""

from __future__ import annotations

import random

SIZES = {"i": 2, "j": 3, "k": 4, "l": 2}
# "@pos": the argument is made positive first (exp), "@unit": into (-1, 1) (tanh).
UNARY = ["ops.exp", "ops.neg", "ops.abs", "ops.sigmoid", "ops.tanh", "ops.log1p@pos",
         "ops.log@pos", "ops.sqrt@pos", "ops.reciprocal@pos", "ops.atanh@unit"]
BINARY = ["+", "-", "*", "/@pos", "ops.max", "ops.min", "ops.logaddexp", "ops.pow@pos",
          "ops.lt", "ops.eq", "ops.safesub", "ops.safediv@pos"]
REDUCE = ["ops.add", "ops.mul", "ops.logaddexp", "ops.max", "ops.min", "ops.sample"]
OUT_REDUCE = ["sum", "prod", "logsumexp", "max", "min", "mean", "var", "std"]


class Src:
    """Lines of a program with fresh seeds for its arrays."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.lines: list[str] = []
        self.tags: list[str] = []

    def seed(self) -> int:
        return self.rng.randrange(10**6)

    def add(self, line: str) -> None:
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def inputs_text(names: str) -> str:
    return "OrderedDict([" + ", ".join(f"('{n}', Bint[{SIZES[n]}])" for n in names) + "])"


def tensor_text(s: Src, names: str, out: tuple = (), data: str = "A", dtype: str = "real",
                int_dtype: bool = False) -> str:
    shape = tuple(SIZES[n] for n in names) + tuple(out)
    if data == "I":
        body = f"arr(I({s.seed()}, {shape}, {dtype}))"
    else:
        body = f"arr({data}({s.seed()}, {shape}))"
    dt = f", {dtype}" if data == "I" else ("" if not out else ", 'real'")
    return f"Tensor({body}, {inputs_text(names)}{dt})"


def random_names(rng: random.Random, lo: int = 0, hi: int = 3) -> str:
    k = rng.randint(lo, hi)
    return "".join(sorted(rng.sample(sorted(SIZES), k)))


def _positive(s: Src, var: str, cond: str) -> str:
    if cond == "pos":
        return f"ops.exp({var})"
    if cond == "unit":
        return f"ops.tanh({var})"
    return var


def tensor_program(rng: random.Random, backend: str):
    """Elementwise unary/binary ops on Tensors and Numbers, then reductions."""
    s = Src(rng)
    out = rng.choice([(), (), (2,)])
    s.add(f"x = {tensor_text(s, random_names(rng, 0, 3), out)}")
    other = rng.choice(["tensor", "tensor", "number", "float", "int_tensor"])
    if other == "tensor":
        s.add(f"y = {tensor_text(s, random_names(rng, 0, 3), out if rng.random() < .8 else ())}")
    elif other == "number":
        s.add(f"y = Number({rng.choice([0.5, 2.0, -1.5, 3])})")
    elif other == "float":
        s.add(f"y = {rng.choice([0.5, 2.0, -1.5, 3])}")
    else:
        n = rng.choice("ijk")
        s.add(f"y = {tensor_text(s, random_names(rng, 0, 2), data='I', dtype=str(SIZES[n]))}")
    s.tags.append("other=" + other)
    for _ in range(rng.randint(1, 3)):
        step = rng.choice(["unary", "binary", "binary", "reduce"])
        if step == "unary":
            u, _, cond = rng.choice(UNARY).partition("@")
            s.add(f"x = {u}({_positive(s, 'x', cond)})")
            s.tags.append(u)
        elif step == "binary":
            b, _, cond = rng.choice(BINARY).partition("@")
            rhs = _positive(s, "y", cond) if other != "float" or cond != "pos" else "abs(y) + 0.5"
            if rng.random() < 0.3:
                lhs, rhs = rhs, "x"
            else:
                lhs = "x"
            s.add(f"x = {lhs} {b} {rhs}" if b in "+-*/" else f"x = {b}({lhs}, {rhs})")
            s.tags.append(b)
        else:
            op = rng.choice(REDUCE)
            names = rng.choice(["", "i", "j", "ij", "jk", "ijkl"])
            arg = "frozenset(x.inputs)" if not names else repr(frozenset(names))
            s.add(f"x = x.reduce({op}, {arg} & frozenset(x.inputs) or None)"
                  if rng.random() < 0.7 else f"x = x.reduce({op}, {arg})")
            s.tags.append("reduce:" + op)
    if out and rng.random() < 0.4:
        m = rng.choice(OUT_REDUCE)
        s.add(f"x = x.{m}()")
        s.tags.append("out:" + m)
    s.add("result = x")
    return "tensor", s.tags, s.text()


def subs_program(rng: random.Random, backend: str):
    """``__call__`` and ``[]`` substitution by ints, Variables, Tensors and Slices."""
    s = Src(rng)
    names = random_names(rng, 1, 3)
    out = rng.choice([(), (3,), (2, 3)])
    s.add(f"x = {tensor_text(s, names, out)}")
    for _ in range(rng.randint(1, 2)):
        n = rng.choice(names)
        kind = rng.choice(["int", "int", "var", "var_other", "tensor", "slice", "getitem",
                           "slice_py", "positional", "string"])
        size = SIZES[n]
        if kind == "int":
            v = str(rng.randrange(size))
        elif kind == "var":
            v = f"Variable('{n}2', Bint[{size}])"
        elif kind == "var_other":
            m = rng.choice([k for k in SIZES if SIZES[k] == size])
            v = f"Variable('{m}', Bint[{size}])"
        elif kind == "tensor":
            m = rng.choice("jk")
            v = f"Tensor(arr(I({s.seed()}, ({SIZES[m]},), {size})), {inputs_text(m)}, {size})"
        elif kind == "slice":
            v = f"funsor.Slice('{n}s', 0, {size}, {rng.choice([1, 2])}, {size})"
        elif kind == "slice_py":
            v = "slice(0, 2)"
        elif kind == "string":
            v = f"'{n}3'"
        else:
            v = None
        s.tags.append(kind)
        if kind == "getitem":
            if out:
                idx = rng.choice(["0", "1", "-1", ":, 0" if len(out) > 1 else "0"])
                s.add(f"x = x[{idx}]")
            else:
                s.add("x = x")
        elif kind == "positional":
            s.add(f"x = x({rng.randrange(SIZES[next(iter(sorted(names)))])})")
        else:
            s.add(f"x = x({n}={v})")
    s.add("result = x")
    return "subs", s.tags, s.text()


def terms_program(rng: random.Random, backend: str):
    """Lambda, Stack, Cat, Independent-free term constructors and to_funsor / to_data."""
    s = Src(rng)
    kind = rng.choice(["stack", "cat", "lambda", "to_funsor", "to_data", "variable_arith",
                       "stack_subs", "lambda_subs", "independent"])
    s.tags.append(kind)
    if kind in ("stack", "stack_subs"):
        names = random_names(rng, 0, 2)
        s.add(f"a = {tensor_text(s, names)}")
        s.add(f"b = {tensor_text(s, random_names(rng, 0, 2))}")
        s.add("x = funsor.Stack('s', (a, b))")
        if kind == "stack_subs":
            v = rng.choice(["0", "1", "Variable('l', Bint[2])"])
            s.add(f"x = x(s={v})")
        elif rng.random() < 0.5:
            s.add("x = x.reduce(ops.logaddexp, 's')")
    elif kind == "cat":
        rest = random_names(rng, 0, 1).replace("k", "")
        s.add(f"a = Tensor(arr(A({s.seed()}, (2,) + {tuple(SIZES[n] for n in rest)})), "
              f"OrderedDict([('c', Bint[2])] + list({inputs_text(rest)}.items())))")
        s.add(f"b = Tensor(arr(A({s.seed()}, (3,))), OrderedDict([('c', Bint[3])]))")
        s.add("x = funsor.Cat('c', (a, b))")
        if rng.random() < 0.5:
            s.add(f"x = x(c={rng.randrange(5)})")
    elif kind in ("lambda", "lambda_subs"):
        names = random_names(rng, 1, 2)
        n = names[0]
        s.add(f"t = {tensor_text(s, names, rng.choice([(), (2,)]))}")
        s.add(f"x = funsor.Lambda(Variable('{n}', Bint[{SIZES[n]}]), t)")
        if kind == "lambda_subs":
            s.add("x = x[1]")
    elif kind == "independent":
        # a product over plate i of factors in x_i: one function of x = (x_0, x_1)
        rank = rng.choice([1, 1, 2])
        s.add(f"g = funsor.gaussian.Gaussian(white_vec=arr(A({s.seed()}, (2, {rank}))), "
              f"prec_sqrt=arr(A({s.seed()}, (2, 1, {rank}))), "
              "inputs=OrderedDict([('i', Bint[2]), ('x_i', Real)]))")
        fn = rng.choice(["g", f"g + {tensor_text(s, 'i')}", "ops.exp(Variable('x_i', Real)) * "
                         f"{tensor_text(s, 'i')}"])
        s.add(f"x = funsor.Independent({fn}, 'x', 'i', 'x_i')")
        if rng.random() < 0.5:
            s.add("x = x.reduce(ops.logaddexp, 'x')")
    elif kind == "to_funsor":
        shape = rng.choice([(2,), (2, 3), (3, 2, 2)])
        dims = rng.randint(0, len(shape))
        d2n = {i - len(shape): "abc"[i] for i in range(dims)}
        outshape = shape[dims:]
        out = "Real" if not outshape else f"Reals[{', '.join(map(str, outshape))}]"
        s.add(f"x = funsor.to_funsor(arr(A({s.seed()}, {shape})), {out}, {d2n!r})")
    elif kind == "to_data":
        s.add(f"t = {tensor_text(s, random_names(rng, 0, 2), rng.choice([(), (2,)]))}")
        d = rng.choice(["None", "{'i': -2, 'j': -1}", "{'i': -1}"])
        s.add(f"x = funsor.to_data(t, name_to_dim={d})" if d != "None" else "x = funsor.to_data(t)")
    else:
        s.add("v = Variable('x', Real)")
        s.add(f"t = {tensor_text(s, random_names(rng, 0, 2))}")
        e = rng.choice(["v * t + 1", "ops.exp(v) - t", "(v - t) ** 2", "-v + t", "v / 2"])
        s.add(f"e = {e}")
        v = rng.choice(["1.5", "t", f"Tensor(arr(A(3, (4,))), {inputs_text('k')})"])
        s.add(f"x = e(x={v})")
    s.add("result = x")
    return "terms", s.tags, s.text()
