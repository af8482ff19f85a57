"""Random programs over funsor 0.4.8's public API: models (the second half of the families).

``sum_product``/``partial_sum_product`` over plated factor graphs, ``funsor.einsum``,
``Gaussian`` and ``Delta`` algebra, ``funsor.adjoint``, interpretations with
``apply_optimizer``/``reinterpret``, and ``funsor.<backend>.distributions``; each as text in the
format of ``programs.py``.

    >>> import random
    >>> family, tags, src = sum_product_program(random.Random(0), "numpy")
    >>> family
    'sum_product'
"""

from __future__ import annotations

import random

from tests.compat.funsor_diff.programs import SIZES, Src, inputs_text, random_names, tensor_text

SEMIRINGS = ["(ops.logaddexp, ops.add)", "(ops.add, ops.mul)", "(ops.max, ops.add)",
             "(ops.max, ops.mul)", "(ops.min, ops.add)", "(ops.add, ops.add)"]
EINSUM_BACKENDS = {"numpy": ["numpy", "funsor.einsum.numpy_log", "funsor.einsum.numpy_map"],
                   "torch": ["torch", "pyro.ops.einsum.torch_log", "pyro.ops.einsum.torch_map"],
                   "jax": ["jax.numpy"]}


def _factors(s: Src, rng: random.Random, plates: str, n: int, positive: bool):
    names = []
    for f in range(n):
        vs = random_names(rng, 1, 2).replace("l", "")
        if plates and rng.random() < 0.6:
            vs = "".join(sorted(set(vs + rng.choice(plates))))
        data = "P" if positive else "A"
        s.add(f"f{f} = {tensor_text(s, vs, data=data)}")
        names.append(f"f{f}")
    return names


def sum_product_program(rng: random.Random, backend: str):
    """sum_product / partial_sum_product with plates, some names kept."""
    s = Src(rng)
    ring = rng.choice(SEMIRINGS[:3] if rng.random() < 0.8 else SEMIRINGS)
    positive = "mul" in ring
    plates = rng.choice(["", "", "l", "lk"])
    fs = _factors(s, rng, plates.replace("k", "") if "k" in plates else plates, rng.randint(1, 4),
                  positive)
    everything = set("ijkl")
    keep = set(rng.sample(sorted(everything), rng.randint(0, 1)))
    elim = "".join(sorted(everything - keep))
    fn = rng.choice(["sum_product", "sum_product", "partial_sum_product"])
    s.tags += [fn, ring, "plates=" + plates]
    call = (f"funsor.sum_product.{fn}({ring[1:-1]}, [{', '.join(fs)}], "
            f"frozenset({elim!r}), frozenset({plates!r}))")
    if fn == "partial_sum_product":
        s.add(f"parts = {call}")
        s.add("result = parts" if rng.random() < 0.5 else
              f"result = functools.reduce({ring[1:-1].split(', ')[1]}, parts)")
    else:
        s.add(f"result = {call}")
    return "sum_product", s.tags, s.text()


def einsum_operands(s: Src, rng: random.Random, backend: str, plate_prob: float) -> tuple:
    """``(einsum backend string, number of operands, equation, plates)``; the operands are
    added to ``s`` as ``f0, f1, ...`` (positive data for the linear-space backends)."""
    eb = rng.choice(EINSUM_BACKENDS[backend])
    positive = eb in ("numpy", "torch", "jax.numpy")
    n = rng.randint(1, 3)
    terms = []
    for f in range(n):
        vs = random_names(rng, 1, 3)
        terms.append(vs)
        s.add(f"f{f} = {tensor_text(s, vs, data='P' if positive else 'A')}")
    letters = sorted(set("".join(terms)))
    out = "".join(sorted(rng.sample(letters, rng.randint(0, min(2, len(letters))))))
    plates = "l" if "l" in letters and rng.random() < plate_prob else ""
    return eb, n, ",".join(terms) + "->" + out, plates


def einsum_program(rng: random.Random, backend: str):
    """funsor.einsum with an equation over input names, with and without plates."""
    s = Src(rng)
    eb, n, eqn, plates = einsum_operands(s, rng, backend, 0.5)
    s.tags += [eb, "plates=" + plates]
    kw = f", plates={plates!r}" if plates else ""
    s.add(f"result = funsor.einsum.einsum({eqn!r}, {', '.join(f'f{f}' for f in range(n))}, "
          f"backend={eb!r}{kw})")
    return "einsum", s.tags, s.text()


def gaussian_text(s: Src, bints: str, reals: dict) -> str:
    dim = sum(reals.values())
    batch = tuple(SIZES[n] for n in bints)
    rank = dim + s.rng.choice([0, 0, 1])
    inp = ", ".join([f"('{n}', Bint[{SIZES[n]}])" for n in bints]
                    + [f"('{k}', {'Real' if d == 1 and s.rng.random() < 0.97 else f'Reals[{d}]'})"
                       for k, d in reals.items()])
    return (f"funsor.gaussian.Gaussian(white_vec=arr(A({s.seed()}, {batch + (rank,)})), "
            f"prec_sqrt=arr(A({s.seed()}, {batch + (dim, rank)})), inputs=OrderedDict([{inp}]))")


def gaussian_program(rng: random.Random, backend: str):
    """Gaussian algebra: sums, substitution, marginals, with Tensors."""
    s = Src(rng)
    reals = rng.choice([{"x": 1}, {"x": 2}, {"x": 1, "y": 1}, {"x": 2, "y": 1}])
    bints = random_names(rng, 0, 1).replace("l", "")
    s.add(f"g = {gaussian_text(s, bints, reals)}")
    real_of = {"Real" if d == 1 else f"Reals[{d}]" for d in reals.values()}
    for _ in range(rng.randint(1, 3)):
        step = rng.choice(["add_t", "add_g", "marg", "subs", "subs_partial", "sum_bint", "scale",
                           "integrate"])
        s.tags.append(step)
        if step == "add_t":
            s.add(f"g = g + {tensor_text(s, random_names(rng, 0, 1).replace('l', ''))}")
        elif step == "add_g":
            s.add(f"g = g + {gaussian_text(s, random_names(rng, 0, 1).replace('l', ''), reals)}")
        elif step == "marg":
            k = rng.choice(sorted(reals))
            s.add(f"g = g.reduce(ops.logaddexp, {k!r}) if {k!r} in g.inputs else g")
        elif step in ("subs", "subs_partial"):
            k = rng.choice(sorted(reals))
            d = reals[k]
            shape = () if d == 1 else (d,)
            val = f"Tensor(arr(A({s.seed()}, {shape})))"
            if rng.random() < 0.3:
                val = f"Tensor(arr(A({s.seed()}, (2,) + {shape})), {inputs_text('i')})"
            if d == 1 and rng.random() < 0.3:
                val = "Variable('z', Real) * 2.0 + 1.0"
            s.add(f"g = g({k}={val}) if {k!r} in g.inputs else g")
        elif step == "sum_bint":
            s.add("g = g.reduce(ops.logaddexp, frozenset(k for k, d in g.inputs.items() "
                  "if d.dtype != 'real') or None)")
        elif step == "scale":
            s.add(f"g = g * {rng.choice(['2.0', '0.5'])}")
        else:
            s.add("g = g.reduce(ops.logaddexp)")
    del real_of
    s.add("result = g")
    return "gaussian", s.tags, s.text()


def delta_program(rng: random.Random, backend: str):
    """Delta terms: sums with Tensors, substitution, reduction."""
    s = Src(rng)
    b = random_names(rng, 0, 1).replace("l", "")
    shp = tuple(SIZES[n] for n in b)
    out = rng.choice([(), (2,)])
    dom = "Real" if not out else "Reals[2]"
    ld = f", Tensor(arr(A({s.seed()}, {shp})), {inputs_text(b)})" if rng.random() < 0.5 else ""
    s.add(f"d = funsor.delta.Delta('x', Tensor(arr(A({s.seed()}, {shp + out})), "
          f"{inputs_text(b)}){ld})")
    step = rng.choice(["add_t", "subs", "reduce_x", "reduce_all", "add_t_reduce", "subs_var"])
    s.tags.append(step)
    if step in ("add_t", "add_t_reduce"):
        s.add(f"d = d + {tensor_text(s, random_names(rng, 0, 1).replace('l', ''))}")
        if step == "add_t_reduce":
            s.add("d = d.reduce(ops.logaddexp, 'x')")
    elif step == "subs":
        s.add(f"d = d(x=Tensor(arr(A({s.seed()}, {out}))))")
    elif step == "subs_var":
        s.add(f"d = d(x=Variable('y', {dom}))")
    elif step == "reduce_x":
        s.add("d = d.reduce(ops.logaddexp, 'x')")
    else:
        s.add("d = d.reduce(ops.logaddexp)")
    s.add("result = d")
    return "delta", s.tags, s.text()


def adjoint_program(rng: random.Random, backend: str):
    """funsor.adjoint.adjoint of a lazy sum_product: marginals of each factor."""
    s = Src(rng)
    ring = rng.choice(["(ops.logaddexp, ops.add)", "(ops.max, ops.add)"])
    fs = _factors(s, rng, "", rng.randint(1, 3), False)
    s.add("with funsor.interpretations.lazy:")
    s.add(f"    root = funsor.sum_product.sum_product({ring[1:-1]}, [{', '.join(fs)}], "
          "frozenset('ijk'))")
    s.add(f"adj = funsor.adjoint.adjoint({ring[1:-1]}, root)")
    pick = rng.choice(fs)
    s.add(f"result = adj[{pick}]")
    s.tags.append(ring)
    return "adjoint", s.tags, s.text()


def interpretation_program(rng: random.Random, backend: str):
    """lazy / reflect / eager / moment_matching with apply_optimizer and reinterpret."""
    s = Src(rng)
    interp = rng.choice(["lazy", "reflect", "eager", "lazy", "moment_matching"])
    after = rng.choice(["apply_optimizer", "reinterpret", "none", "to_data"])
    s.tags += [interp, after]
    if interp == "moment_matching":
        s.add(f"g = {gaussian_text(s, 'i', {'x': 1})}")
        s.add(f"t = {tensor_text(s, 'i')}")
        s.add("with funsor.interpretations.moment_matching:")
        s.add("    e = (g + t).reduce(ops.logaddexp, 'i')")
    else:
        fs = _factors(s, rng, "", rng.randint(1, 3), False)
        s.add(f"with funsor.interpretations.{interp}:")
        expr = rng.choice([f"({' + '.join(fs)}).reduce(ops.logaddexp, 'j')",
                           f"({' + '.join(fs)}).reduce(ops.logaddexp)",
                           f"ops.exp({fs[0]}) * 2 - 1",
                           f"({fs[0]} + {fs[-1]})(i=1)"])
        s.add(f"    e = {expr}")
    if after == "apply_optimizer":
        s.add("result = funsor.optimizer.apply_optimizer(e)")
    elif after == "reinterpret":
        s.add("result = funsor.reinterpret(e)")
    elif after == "to_data":
        s.add("result = funsor.to_data(funsor.reinterpret(e).reduce(ops.logaddexp))")
    else:
        s.add("result = e")
    return "interpretation", s.tags, s.text()


DISTS = {
    "Normal": ("loc=A, scale=P", "Real", "A"),
    "Bernoulli": ("logits=A", "Real", "B"),
    "Categorical": ("probs=S", "Bint[3]", "I3"),
    "Beta": ("concentration1=P, concentration0=P", "Real", "U"),
    "Gamma": ("concentration=P, rate=P", "Real", "P"),
    "Poisson": ("rate=P", "Real", "N"),
    "Dirichlet": ("concentration=P3", "Reals[3]", "S"),
    "MultivariateNormal": ("loc=A2, scale_tril=L", "Reals[2]", "A2"),
    "Delta": ("v=A, log_density=A", "Real", "A"),
}


def _param(s: Src, kind: str, names: str) -> str:
    shp = tuple(SIZES[n] for n in names)
    inp = inputs_text(names)
    if kind == "A":
        return f"Tensor(arr(A({s.seed()}, {shp})), {inp})"
    if kind == "P":
        return f"Tensor(arr(P({s.seed()}, {shp})), {inp})"
    if kind == "S":
        return (f"Tensor(arr(P({s.seed()}, {shp + (3,)}) / P({s.seed()}, {shp + (3,)}).sum(-1, "
                f"keepdims=True) * 0 + np.array([0.2, 0.3, 0.5])), {inp})")
    if kind == "P3":
        return f"Tensor(arr(P({s.seed()}, {shp + (3,)})), {inp})"
    if kind == "A2":
        return f"Tensor(arr(A({s.seed()}, {shp + (2,)})), {inp})"
    if kind == "L":
        return (f"Tensor(arr(np.broadcast_to(np.array([[1.0, 0.0], [0.3, 0.8]]), "
                f"{shp + (2, 2)}).copy()), {inp})")
    raise ValueError(kind)


def _value(s: Src, kind: str) -> str:
    if kind == "A":
        return f"Tensor(arr(A({s.seed()}, ())))"
    if kind == "A2":
        return f"Tensor(arr(A({s.seed()}, (2,))))"
    if kind == "B":
        return "Tensor(arr(np.array(1.0)))"
    if kind == "I3":
        return f"Tensor(arr(I({s.seed()}, (), 3)), OrderedDict(), 3)"
    if kind == "U":
        return "Tensor(arr(np.array(0.3)))"
    if kind == "P":
        return f"Tensor(arr(P({s.seed()}, ())))"
    if kind == "N":
        return "Tensor(arr(np.array(2.0)))"
    if kind == "S":
        return "Tensor(arr(np.array([0.2, 0.5, 0.3])))"
    raise ValueError(kind)


def distribution_program(rng: random.Random, backend: str):
    """funsor.<backend>.distributions families: log densities, values, marginals."""
    s = Src(rng)
    name = rng.choice(sorted(DISTS))
    params, dom, vkind = DISTS[name]
    names = random_names(rng, 0, 1).replace("l", "")
    args = []
    for p in params.split(", "):
        k, _, kind = p.partition("=")
        args.append(f"{k}={_param(s, kind, names)}")
    mode = rng.choice(["value", "value", "name", "reduce", "sample_value_var"])
    s.tags += [name, mode]
    lib = f"funsor.{backend}.distributions"
    if mode == "value":
        s.add(f"result = {lib}.{name}({', '.join(args)}, value={_value(s, vkind)})")
    elif mode == "name":
        s.add(f"d = {lib}.{name}({', '.join(args)}, value='v')")
        s.add(f"result = d(v={_value(s, vkind)})")
    elif mode == "reduce":
        s.add(f"d = {lib}.{name}({', '.join(args)}, value='v')")
        s.add("result = d.reduce(ops.logaddexp, 'v')" if vkind == "I3" or name in (
            "Normal", "MultivariateNormal") else "result = d.reduce(ops.logaddexp, 'v') * 0 + 1")
    else:
        s.add(f"d = {lib}.{name}({', '.join(args)})")
        s.add("result = d")
    return "distribution", s.tags, s.text()
