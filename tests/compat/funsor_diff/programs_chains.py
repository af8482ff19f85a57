"""Random programs over funsor 0.4.8's public API: chains, adjoints, integrals, converters.

The third group of families (h93): the time scans of ``funsor.sum_product``
(``sequential_sum_product``, its naive and mixed forms, the Sarkka-Bilmes products with lags
and global variables, ``modified_partial_sum_product`` with Markov plates), ``forward_backward``
and ``adjoint`` over plated products and ``argmax_approximate``, ``Integrate`` of Tensor, Delta
and Gaussian measures, ``naive_einsum``/``naive_plated_einsum``, ``Slice``/``Lambda``/``Cat``
terms, distributions with symbolic parameters, ``funsor.pyro.convert`` (torch) and programs
under ``jax.jit`` (jax). Same text format as ``programs.py``.

    >>> import random
    >>> family, tags, src = sequential_program(random.Random(0), "numpy")
    >>> family
    'sequential'
"""

from __future__ import annotations

import random

from tests.compat.funsor_diff.programs import SIZES, Src, inputs_text, random_names, tensor_text

RINGS = ["(ops.logaddexp, ops.add)", "(ops.logaddexp, ops.add)", "(ops.max, ops.add)",
         "(ops.add, ops.mul)"]


def named_tensor(s: Src, dims: list, positive: bool = False, extra: tuple = ()) -> str:
    """A Tensor over ``dims`` (a list of ``(name, size)``), normal or positive data."""
    shape = tuple(n for _, n in dims) + tuple(extra)
    data = "P" if positive else "A"
    inp = "OrderedDict([" + ", ".join(f"('{k}', Bint[{n}])" for k, n in dims) + "])"
    out = ", 'real'" if extra else ""
    return f"Tensor(arr({data}({s.seed()}, {shape})), {inp}{out})"


def _chain_trans(s: Src, rng: random.Random, T: int, positive: bool):
    """A transition Tensor over time ``t``, a batch, and one or two chains; its step."""
    chains = rng.choice([["x"], ["x"], ["x", "y"]])
    sizes = {c: rng.choice([2, 3]) for c in chains}
    dims = [("t", T)]
    if rng.random() < 0.4:
        dims.append(("i", 2))
    for c in chains:
        dims += [(f"{c}_prev", sizes[c]), (f"{c}_curr", sizes[c])]
    if rng.random() < 0.3:
        rng.shuffle(dims)
    step = {f"{c}_prev": f"{c}_curr" for c in chains}
    return named_tensor(s, dims, positive), step


def sequential_program(rng: random.Random, backend: str):
    """sequential / naive / mixed sequential_sum_product over a time input, maybe jitted."""
    s = Src(rng)
    ring = rng.choice(RINGS)
    T = rng.choice([1, 2, 3, 4, 5, 7, 8])
    fn = rng.choice(["sequential_sum_product", "sequential_sum_product",
                     "naive_sequential_sum_product", "mixed_sequential_sum_product"])
    gauss = ring == "(ops.logaddexp, ops.add)" and rng.random() < 0.35
    if gauss:
        # 1- or 2-d states, maybe a batch input, maybe a Tensor factor on the batch and time
        d = rng.choice([1, 1, 2])
        dom = "Real" if d == 1 else f"Reals[{d}]"
        batch = rng.choice([(), (), (("i", 2),)])
        shp = (T,) + tuple(n for _, n in batch)
        rank = 2 * d + rng.choice([0, 1])
        binp = "".join(f"('{k}', Bint[{n}]), " for k, n in batch)
        s.add(f"trans = funsor.gaussian.Gaussian(white_vec=arr(A({s.seed()}, {shp + (rank,)})), "
              f"prec_sqrt=arr(A({s.seed()}, {shp + (2 * d, rank)})), inputs=OrderedDict([('t', "
              f"Bint[{T}]), {binp}('x_prev', {dom}), ('x_curr', {dom})]))")
        if rng.random() < 0.4:
            s.add(f"trans = trans + {named_tensor(s, [('t', T)] + list(batch))}")
            s.tags.append("plus_tensor")
        s.tags.append(f"d={d}")
        step = {"x_prev": "x_curr"}
    else:
        trans, step = _chain_trans(s, rng, T, "mul" in ring)
        s.add(f"trans = {trans}")
    if rng.random() < 0.15:
        step = {}
    extra = ""
    if fn == "mixed_sequential_sum_product":
        extra = f", num_segments={rng.choice([None, 1, 2, 3])}"
    s.tags += [fn, ring, f"T={T}", "gaussian" if gauss else "tensor", f"step={len(step)}"]
    call = (f"funsor.sum_product.{fn}({ring[1:-1]}, trans, Variable('t', Bint[{T}]), "
            f"{step!r}{extra})")
    jit = backend == "jax" and not gauss and rng.random() < 0.3
    if jit:
        s.tags.append("jit")
        s.add("import jax")
        s.add("names = tuple(trans.inputs)")
        s.add("def f(a):")
        s.add("    trans = Tensor(a, OrderedDict((k, trans0.inputs[k]) for k in names))")
        s.add(f"    r = {call}")
        s.add("    return r.align(tuple(sorted(r.inputs))).data")
        s.add("trans0 = trans")
        s.add("result = jax.jit(f)(trans.data)")
        return "sequential", s.tags, s.text()
    s.add(f"r = {call}")
    after = rng.choice(["none", "none", "reduce", "subs"])
    s.tags.append(after)
    if after == "reduce":
        s.add(f"result = r.reduce({ring[1:-1].split(', ')[0]})")
    elif after == "subs" and not gauss and step:
        k = next(iter(step))
        s.add(f"result = r({k}=1)")
    else:
        s.add("result = r")
    return "sequential", s.tags, s.text()


def sarkka_program(rng: random.Random, backend: str):
    """sarkka_bilmes_product and its naive form: lags of 1-3 steps, global variables."""
    s = Src(rng)
    ring = rng.choice(RINGS)
    T = rng.choice([1, 2, 3, 4, 5, 6, 7])
    fn = rng.choice(["sarkka_bilmes_product", "sarkka_bilmes_product",
                     "naive_sarkka_bilmes_product"])
    dims = [("t", T)]
    lags = rng.choice([[1], [1], [2], [1, 2], [3], [0]])
    for lag in lags:
        dims += [("_PREV_" * lag + "x", 2)]
    if 0 not in lags:
        dims.append(("x", 2))
    if rng.random() < 0.3:
        dims += [("_PREV_y", 2), ("y", 2)]
    glob = rng.random() < 0.4
    if glob:
        dims.append(("g", 2))
    rng.shuffle(dims)
    s.add(f"trans = {named_tensor(s, dims, 'mul' in ring)}")
    kw = ""
    if glob:
        kw += ", frozenset({'g'})"
    if fn == "sarkka_bilmes_product" and rng.random() < 0.4:
        kw += (", frozenset({'g'})" if not glob else "") + f", num_periods={rng.choice([1, 2])}"
    s.tags += [fn, ring, f"T={T}", f"lags={lags}", "global" if glob else "noglobal"]
    s.add(f"r = funsor.sum_product.{fn}({ring[1:-1]}, trans, Variable('t', Bint[{T}]){kw})")
    s.add("result = r" if rng.random() < 0.6 else
          f"result = r.reduce({ring[1:-1].split(', ')[0]})")
    return "sarkka", s.tags, s.text()


def modified_program(rng: random.Random, backend: str):
    """modified_partial_sum_product: an HMM over a Markov plate, in or outside a plate."""
    s = Src(rng)
    ring = rng.choice(RINGS[:3] + ["(ops.add, ops.mul)"])
    pos = "mul" in ring
    T = rng.choice([1, 2, 3, 4, 5])
    K = rng.choice([2, 3])
    plate = rng.random() < 0.4
    glob = rng.random() < 0.4
    pl = [("l", 2)] if plate else []
    gl = [("z", 2)] if glob else []
    s.add(f"f0 = {named_tensor(s, gl + pl + [('x_0', K)], pos)}")
    s.add(f"f1 = {named_tensor(s, gl + [('time', T)] + pl + [('x_prev', K), ('x_curr', K)], pos)}")
    fs = ["f0", "f1"]
    if glob:
        s.add(f"f2 = {named_tensor(s, [('z', 2)], pos)}")
        fs.append("f2")
    if rng.random() < 0.3:
        s.add(f"f3 = {named_tensor(s, [('time', T)] + pl + [('x_curr', K)], pos)}")
        fs.append("f3")
    elim = {"time", "x_0", "x_prev", "x_curr"} | ({"z"} if glob else set())
    if plate and rng.random() < 0.7:
        elim.add("l")
    if glob and rng.random() < 0.3:
        elim.discard("z")
    p2s = "{'time': frozenset({('x_0', 'x_prev', 'x_curr')})" + (", 'l': frozenset()}" if plate
                                                                 else "}")
    s.tags += [ring, f"T={T}", "plate" if plate else "noplate", "global" if glob else "noglobal"]
    fn = "modified_partial_sum_product"
    s.add(f"parts = funsor.sum_product.{fn}({ring[1:-1]}, [{', '.join(fs)}], "
          f"frozenset({sorted(elim)!r}), {p2s})")
    s.add("result = parts" if rng.random() < 0.5 else
          f"result = functools.reduce({ring[1:-1].split(', ')[1]}, parts)")
    return "modified", s.tags, s.text()


def forward_backward_program(rng: random.Random, backend: str):
    """forward_backward / adjoint over plated lazy sum_products; argmax_approximate."""
    s = Src(rng)
    mode = rng.choice(["fb", "fb", "adjoint_plated", "argmax", "fb_batch", "markov", "markov"])
    ring = rng.choice(["(ops.logaddexp, ops.add)", "(ops.max, ops.add)"])
    n = rng.randint(1, 3)
    fs = []
    plates = "l" if mode in ("adjoint_plated", "fb_batch") or rng.random() < 0.3 else ""
    for f in range(n):
        vs = random_names(rng, 1, 2).replace("l", "")
        if plates and rng.random() < 0.6:
            vs = "".join(sorted(set(vs + "l")))
        s.add(f"f{f} = {tensor_text(s, vs)}")
        fs.append(f"f{f}")
    elim = "ijk" + plates
    batch = ""
    if mode == "fb_batch":
        elim = "ijk"  # l stays a batch variable of the result
        batch = "frozenset({'l'})"
    s.tags += [mode, ring, "plates=" + plates]
    s.add("with funsor.interpretations.lazy:")
    s.add(f"    root = funsor.sum_product.sum_product({ring[1:-1]}, [{', '.join(fs)}], "
          f"frozenset({elim!r}), frozenset({plates!r}))")
    pick = rng.choice(fs)
    if mode == "markov":
        # Pyro's TraceMarkovEnum_ELBO shape: a lazy chain over time, then the adjoint
        T = rng.choice([2, 3, 4, 6])
        s.lines = s.lines[:0]
        trans, step = _chain_trans(s, rng, T, False)
        s.add(f"trans = {trans}")
        s.add("with funsor.interpretations.lazy:")
        s.add(f"    root = funsor.sum_product.sequential_sum_product({ring[1:-1]}, trans, "
              f"Variable('t', Bint[{T}]), {step!r}).reduce({ring[1:-1].split(', ')[0]})")
        s.add(f"adj = funsor.adjoint.adjoint({ring[1:-1]}, root)")
        s.add("result = adj[trans]")
    elif mode == "argmax":
        s.add("with funsor.approximations.argmax_approximate:")
        s.add(f"    adj = funsor.adjoint.adjoint({ring[1:-1]}, root)")
        s.add(f"result = adj[{pick}]")
    elif mode in ("fb", "fb_batch"):
        kw = f", batch_vars={batch}" if batch else ""
        s.add(f"fwd, bwd = funsor.adjoint.forward_backward({ring[1:-1]}, root{kw})")
        s.add(f"result = (fwd, bwd[{pick}])" if rng.random() < 0.6 else "result = fwd")
    else:
        s.add(f"adj = funsor.adjoint.adjoint({ring[1:-1]}, root)")
        s.add(f"result = adj[{pick}]")
    return "forward_backward", s.tags, s.text()


def integrate_program(rng: random.Random, backend: str):
    """funsor.Integrate of Tensor, Delta and Gaussian log measures."""
    from tests.compat.funsor_diff.programs_models import gaussian_text

    s = Src(rng)
    kind = rng.choice(["tensor", "tensor", "delta", "gaussian", "gaussian", "number"])
    s.tags.append(kind)
    if kind == "tensor":
        m = random_names(rng, 1, 2)
        s.add(f"m = {tensor_text(s, m)}")
        s.add(f"f = {tensor_text(s, random_names(rng, 0, 2))}")
        red = rng.choice(["frozenset(m.inputs)", "frozenset(m.inputs) | frozenset(f.inputs)",
                          repr(m[0]), "frozenset()"])
        s.add(f"red = {red}")
    elif kind == "number":
        s.add("m = Number(0.5)")
        s.add(f"f = {tensor_text(s, random_names(rng, 0, 2))}")
        s.add("red = frozenset()")
    elif kind == "delta":
        b = random_names(rng, 0, 1).replace("l", "")
        shp = tuple(SIZES[n] for n in b)
        s.add(f"m = funsor.delta.Delta('x', Tensor(arr(A({s.seed()}, {shp})), {inputs_text(b)}))")
        e = rng.choice(["Variable('x', Real) * 2 + 1", "ops.exp(Variable('x', Real))",
                        f"Variable('x', Real) * {tensor_text(s, random_names(rng, 0, 1))}"])
        s.add(f"f = {e}")
        s.add("red = frozenset({Variable('x', Real)})")
    else:
        reals = rng.choice([{"x": 1}, {"x": 2}, {"x": 1, "y": 1}])
        bints = random_names(rng, 0, 1).replace("l", "")
        s.add(f"g = {gaussian_text(s, bints, reals)}")
        s.add("m = g - g.reduce(ops.logaddexp, frozenset(k for k, d in g.inputs.items() "
              "if d.dtype == 'real'))" if rng.random() < 0.6 else "m = g")
        k = rng.choice(sorted(reals))
        e = rng.choice(["var", "var", "gauss", "tensor", "affine"])
        s.tags.append(e)
        if e == "var":
            s.add(f"f = Variable({k!r}, g.inputs[{k!r}])")
        elif e == "affine":
            s.add(f"f = Variable({k!r}, g.inputs[{k!r}]) * 3.0 - 1.0")
        elif e == "tensor":
            s.add(f"f = {tensor_text(s, bints)}")
        else:
            s.add(f"f = {gaussian_text(s, bints, reals)}")
        red = rng.choice(["all_real", "k"])
        if red == "all_real" or len(reals) == 1:
            s.add("red = frozenset(Variable(k, d) for k, d in g.inputs.items() if d.dtype == "
                  "'real')")
        else:
            s.add(f"red = frozenset({{Variable({k!r}, g.inputs[{k!r}])}})")
    s.add("result = funsor.Integrate(m, f, red)")
    return "integrate", s.tags, s.text()


def naive_einsum_program(rng: random.Random, backend: str):
    """naive_einsum and naive_plated_einsum against funsor's, with every backend string."""
    from tests.compat.funsor_diff.programs_models import einsum_operands

    s = Src(rng)
    eb, n, eqn, plates = einsum_operands(s, rng, backend, 0.6)
    fn = "naive_plated_einsum" if plates else rng.choice(["naive_einsum", "naive_plated_einsum"])
    s.tags += [fn, eb, "plates=" + plates]
    kw = f", plates={plates!r}" if plates else ""
    s.add(f"result = funsor.einsum.{fn}({eqn!r}, {', '.join(f'f{f}' for f in range(n))}, "
          f"backend={eb!r}{kw})")
    return "naive_einsum", s.tags, s.text()


def slices_program(rng: random.Random, backend: str):
    """Slice substitution, Lambda and Cat of Slices: the building blocks of time scans."""
    s = Src(rng)
    kind = rng.choice(["slice", "slice", "slice_twice", "lambda_slice", "cat_slices",
                       "slice_reduce"])
    s.tags.append(kind)
    T = rng.choice([3, 4, 5, 6])
    other = rng.choice([[], [("i", 2)], [("j", 3)]])
    dims = [("t", T)] + other
    if rng.random() < 0.5:
        dims.reverse()
    s.add(f"x = {named_tensor(s, dims, extra=rng.choice([(), (2,)]))}")
    start, stop = sorted(rng.sample(range(T + 1), 2))
    step = rng.choice([1, 1, 2, 3])
    size = len(range(start, stop, step))
    sl = f"funsor.Slice('u', {start}, {stop}, {step}, {T})"
    if kind == "slice":
        s.add(f"result = x(t={sl})")
    elif kind == "slice_twice":
        s.add(f"y = x(t={sl})")
        if size >= 2:
            s.add(f"result = y(u=funsor.Slice('v', 0, {size}, 2, {size}))")
        else:
            s.add("result = y(u=0)")
    elif kind == "lambda_slice":
        s.add(f"y = x(t={sl})")
        s.add(f"result = funsor.Lambda(Variable('u', Bint[{size}]), y)")
    elif kind == "cat_slices":
        mid = rng.randrange(1, T)
        s.add(f"a = x(t=funsor.Slice('t', 0, {mid}, 1, {T}))")
        s.add(f"b = x(t=funsor.Slice('t', {mid}, {T}, 1, {T}))")
        s.add("result = funsor.Cat('t', (b, a))")
    else:
        s.add(f"result = x(t={sl}).reduce({rng.choice(['ops.add', 'ops.max', 'ops.logaddexp'])}"
              ", 'u')")
    return "slices", s.tags, s.text()


SYMBOLIC = {
    # name: (argument texts with one of them a name, value kinds that make sense)
    "Normal": ["loc='m', scale=P", "loc=A, scale=P", "loc='m', scale=1.5"],
    "MultivariateNormal": ["loc='m', scale_tril=L"],
    "Categorical": ["probs=S"],
    "Bernoulli": ["logits=A"],
    "Gamma": ["concentration=P, rate=P"],
}


def symbolic_dist_program(rng: random.Random, backend: str):
    """Distributions with names for parameters or value: the affine ones become Gaussians."""
    from tests.compat.funsor_diff.programs_models import _param

    s = Src(rng)
    name = rng.choice(sorted(SYMBOLIC))
    spec = rng.choice(SYMBOLIC[name])
    names = random_names(rng, 0, 1).replace("l", "")
    args = []
    for p in spec.split(", "):
        k, _, v = p.partition("=")
        if v.startswith("'") or v[0].isdigit():
            args.append(f"{k}={v}")
        else:
            args.append(f"{k}={_param(s, v, names)}")
    value = rng.choice(["'v'", "'v'", "given", "variable"])
    real = {"Normal": "Real", "MultivariateNormal": "Reals[2]", "Gamma": "Real"}.get(name)
    if value == "given":
        val = {"Normal": f"Tensor(arr(A({s.seed()}, ())))",
               "MultivariateNormal": f"Tensor(arr(A({s.seed()}, (2,))))",
               "Categorical": "Tensor(arr(np.array(1)), OrderedDict(), 3)",
               "Bernoulli": "Tensor(arr(np.array(1.0)))",
               "Gamma": "Tensor(arr(np.array(1.3)))"}[name]
    elif value == "variable" and real:
        val = f"Variable('y', {real}) * 2.0 + 1.0" if real == "Real" else f"Variable('y', {real})"
    else:
        val = "'v'"
    s.tags += [name, spec, value]
    lib = f"funsor.{backend}.distributions"
    s.add(f"d = {lib}.{name}({', '.join(args)}, value={val})")
    after = rng.choice(["none", "none", "reduce_m", "subs_m"])
    if after == "reduce_m" and "'m'" in spec:
        s.tags.append(after)
        s.add("d = d.reduce(ops.logaddexp, 'm')")
    elif after == "subs_m" and "'m'" in spec:
        s.tags.append(after)
        shape = "()" if name == "Normal" else "(2,)"
        s.add(f"d = d(m=Tensor(arr(A({s.seed()}, {shape}))))")
    s.add("result = d")
    return "symbolic_dist", s.tags, s.text()


def convert_program(rng: random.Random, backend: str):
    """funsor.pyro.convert: tensors, distributions and MVNs to funsors and back (torch)."""
    s = Src(rng)
    kind = rng.choice(["tensor_to_funsor", "funsor_to_tensor", "dist_to_funsor",
                       "mvn_to_funsor", "matrix_and_mvn", "funsor_to_mvn", "cat_and_mvn"])
    s.tags.append(kind)
    s.add("import torch, pyro.distributions")
    s.add("import funsor.pyro.convert as convert")
    batch = rng.choice([(), (2,), (3, 2)])
    ev = rng.choice([(), ("e",)]) if batch else ()
    if kind == "tensor_to_funsor":
        out = rng.choice([0, 0, 1])
        shape = batch + (2,) * out
        s.add(f"result = convert.tensor_to_funsor(arr(A({s.seed()}, {shape})), {ev!r}, {out})")
    elif kind == "funsor_to_tensor":
        ndims = len(batch) + rng.choice([0, 1])
        s.add(f"t = convert.tensor_to_funsor(arr(A({s.seed()}, {batch})), {ev!r})")
        s.add(f"result = convert.funsor_to_tensor(t, {ndims}, {ev!r})")
    elif kind == "dist_to_funsor":
        d = rng.choice([f"pyro.distributions.Normal(arr(A({s.seed()}, {batch})), 1.5)",
                        f"pyro.distributions.Categorical(logits=arr(A({s.seed()}, "
                        f"{batch + (3,)})))",
                        f"pyro.distributions.Bernoulli(logits=arr(A({s.seed()}, {batch})))"])
        s.add(f"f = convert.dist_to_funsor({d}, {ev!r})")
        s.add("result = f(value=Tensor(arr(np.array(1.0)))) if f.inputs['value'].dtype == 'real'"
              " else f(value=1)")
    else:
        s.add(f"loc = arr(A({s.seed()}, {batch + (2,)}))")
        s.add(f"L = arr(np.broadcast_to(np.array([[1.0, 0.0], [0.3, 0.8]]), {batch + (2, 2)})"
              ".copy())")
        s.add("mvn = pyro.distributions.MultivariateNormal(loc, scale_tril=L)")
        if kind == "mvn_to_funsor":
            s.add(f"result = convert.mvn_to_funsor(mvn, {ev!r})")
        elif kind == "matrix_and_mvn":
            s.add(f"m = arr(A({s.seed()}, {batch + (3, 2)}))")
            s.add(f"result = convert.matrix_and_mvn_to_funsor(m, mvn, {ev!r})")
        elif kind == "funsor_to_mvn":
            s.add(f"g = convert.mvn_to_funsor(mvn, {ev!r}, OrderedDict(x=Reals[2]))")
            s.add(f"m = convert.funsor_to_mvn(g, {len(batch)}, {ev!r})")
            s.add("result = (Tensor(m.loc), Tensor(m.covariance_matrix))")
        else:
            s.add(f"loc = arr(A({s.seed()}, {batch + (3, 2)}))")
            s.add(f"L = arr(np.broadcast_to(np.array([[1.0, 0.0], [0.3, 0.8]]), "
                  f"{batch + (3, 2, 2)}).copy())")
            s.add("mvn = pyro.distributions.MultivariateNormal(loc, scale_tril=L)")
            evc = ev + ("c",)
            s.add(f"g = convert.mvn_to_funsor(mvn, {evc!r}, OrderedDict(x=Reals[2]))")
            s.add(f"j = g + convert.tensor_to_funsor(arr(A({s.seed()}, {batch + (3,)})), {evc!r})")
            s.add(f"cat, m = convert.funsor_to_cat_and_mvn(j, {len(batch)}, {evc!r})")
            s.add("result = (Tensor(cat.logits - cat.logits.logsumexp(-1, keepdim=True)), "
                  "Tensor(m.loc), Tensor(m.covariance_matrix))")
    return "convert", s.tags, s.text()


def montecarlo_program(rng: random.Random, backend: str):
    """MonteCarlo Integrate over particle=Bint[4000], its particle mean within 8 standard
    errors of the exact Integrate (both sides' answer a bool Tensor: moments, not samples)."""
    s = Src(rng)
    bints = rng.choice(["", "i"])
    shp = tuple(SIZES[n] for n in bints)
    inp = ", ".join([f"('{n}', Bint[{SIZES[n]}])" for n in bints] + ["('x', Real)"])
    s.add(f"g = funsor.gaussian.Gaussian(white_vec=arr(A({s.seed()}, {shp + (1,)})), "
          f"prec_sqrt=arr(P({s.seed()}, {shp + (1, 1)})), inputs=OrderedDict([{inp}]))")
    s.add("q = g - g.reduce(ops.logaddexp, 'x')")
    a, b = rng.choice([2.0, -1.0, 0.5]), rng.choice([1.0, 0.0, -3.0])
    kind = rng.choice(["affine", "affine", "tensor"])
    s.tags += [kind, "batch=" + bints]
    if kind == "affine":
        s.add(f"f = Variable('x', Real) * {a} + {b}")
        s.add(f"exact = funsor.Integrate(q, Variable('x', Real), 'x') * {a} + {b}")
    else:
        s.add(f"f = {tensor_text(s, random_names(rng, 0, 1))}")
        s.add("exact = f")
    key = ", rng_key=np.array([0, 0], dtype=np.uint32)" if backend == "jax" else ""
    s.add(f"with funsor.montecarlo.MonteCarlo(particle=Bint[4000]{key}):")
    s.add("    est = funsor.Integrate(q, f, 'x')")
    s.add("est = est.reduce(ops.mean, 'particle') if 'particle' in est.inputs else est")
    s.add("result = ops.abs(est - exact) < 0.5")
    return "montecarlo", s.tags, s.text()
