"""Compiled variable elimination (issue 30), side by side, one thread.

1. Planning time of 1,000-factor chains and trees: ``fc.plan`` (jointree: min-fill, tree,
   separators, statistics; its cache cleared each time) against opt_einsum's greedy
   ``contract_path`` on the same operands.
2. Table 5's trend: random 100-node networks (at most 5 parents, 2-3 values), the largest
   cluster's binary rank of a classical jointree against the replicated and shrunk one, by
   the fraction of functional nodes.
3. Batched evaluation (1, 10, 100 evidence sets on 10 nodes) of random 100-node networks
   whose compiled plan fits: the compiled program against hand-written numpy (``np.einsum``
   per node of the same tree), opt_einsum's ``contract_expression`` (path searched once,
   "auto-hq"), our eager ``fc.sum_product`` and pgmpy's variable elimination (when it
   imports: not a dependency; ``PGMPY_PATH=DIR`` puts a ``pip install --target DIR pgmpy``
   on the path). pgmpy answers one evidence set per query, on the original factors, in our
   min-fill order: a batch of B costs B queries. Times in ms, best of repeats; ratios are
   peer / compiled. ``--only small``: the same on a 40-node network (at most 3 parents),
   where pgmpy's classical clusters fit.
4. Under ``jax.jit`` and Table 6's direction (tensor graph vs scalar graph).
5. ``--only paths``: path quality (log10 flops, log2 largest tensor) of opt_einsum's greedy,
   cotengra's HyperOptimizer (where it imports; ``COTENGRA_PATH=DIR`` as for pgmpy) and
   our jointree, classical and with functional factors, on random 100-node networks.

Run: ``OMP_NUM_THREADS=1 python benchmarks/compiled.py [--quick] [--only SECTION]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import opt_einsum  # noqa: E402

import funsor_core as fc  # noqa: E402
from funsor_core import ops  # noqa: E402
from funsor_core.algorithms.compiled.jointree import (  # noqa: E402
    build_jointree,
    replicate_functional,
)
from funsor_core.algorithms.compiled.minfill import min_fill_order  # noqa: E402
from funsor_core.algorithms.compiled.models import random_network  # noqa: E402
from funsor_core.algorithms.compiled.program import plan_structure  # noqa: E402
from interpretations.lazy import lazy  # noqa: E402


def best_ms(fn, repeat=5, clock=time.perf_counter):
    fn()
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return 1e3 * min(times)


def planning():
    # Wall time and this process's CPU time: on a shared machine the CPU time is what the
    # code costs, the wall time adds the waits for a core.
    print("## planning 1,000 factors (ms, best of 15; wall / CPU)")
    print(f"{'graph':8} {'fc.plan':>13} {'opt_einsum greedy':>18} {'ratio':>6}")
    sizes = 3
    shapes = {"chain": [(f"x{i}", f"x{i + 1}") for i in range(1000)],
              "tree": [(f"x{(i - 1) // 2}", f"x{i}") for i in range(1, 1001)]}
    for name, scopes in shapes.items():
        factors = [fc.Tensor(np.ones((sizes, sizes)), {a: fc.Bint[sizes], b: fc.Bint[sizes]})
                   for a, b in scopes]
        names = frozenset(n for s in scopes for n in s)

        def ours(factors=factors, names=names):
            plan_structure.cache_clear()
            fc.plan(factors, names, method="jointree")

        symbols = {n: opt_einsum.get_symbol(i) for i, n in enumerate(sorted(names))}
        eq = ",".join("".join(symbols[n] for n in s) for s in scopes) + "->"
        shapes_ = [(sizes, sizes)] * len(scopes)

        def peer(eq=eq, shapes_=shapes_):
            opt_einsum.contract_path(eq, *shapes_, shapes=True, optimize="greedy")

        a, b = best_ms(ours, 15), best_ms(peer, 7)
        cpu = best_ms(ours, 15, time.process_time)
        print(f"{name:8} {a:6.1f} / {cpu:4.1f} {b:18.1f} {b / a:6.1f}")


def _term(f):
    return f.term if isinstance(f, fc.algorithms.compiled.Functional) else f


def table_5(quick):
    print("\n## Table 5's trend: max binary rank, classical -> functional (mean of networks)")
    print(f"{'functional':>10} {'classical':>10} {'shrunk':>8} {'reduction':>10}")
    rng = np.random.default_rng(0)
    for frac in (0.25, 0.5, 0.8):
        plain, shrunk = [], []
        for _ in range(3 if quick else 10):
            factors, cards = random_network(rng, 100, frac, 5, evidence=0.0, shuffle=False)
            terms = [_term(f) for f in factors]
            plain.append(fc.plan(terms, frozenset(cards), method="jointree",
                                 memory_budget=2 ** 62).stats()["max_binary_rank"])
            shrunk.append(fc.plan(factors, frozenset(cards), method="jointree",
                                  memory_budget=2 ** 62).stats()["max_binary_rank"])
        p, s = np.mean(plain), np.mean(shrunk)
        print(f"{frac:10.2f} {p:10.1f} {s:8.1f} {p - s:10.1f}")


def _equation(*groups) -> str:
    # One einsum equation over at most 52 local letters (numpy's limit).
    local = {}
    for g in groups:
        for n in g:
            local.setdefault(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[len(local)])
    parts = ["".join(local[n] for n in g) for g in groups]
    return ",".join(parts[:-1]) + "->" + parts[-1]


def _einsum_by_hand(program, arrays, einsum=np.einsum, transpose=np.transpose):
    # The same tree as the program, each node one einsum (numpy's C loop, no path search).
    tree = program.plan.tree
    scopes = program.plan.scopes
    msgs, names = [], []
    for i, kids in enumerate(tree.children):
        out = tree.seps[i]
        if not kids:
            k = tree.leaf_factor[i]
            msgs.append(einsum(_equation(scopes[k], out), arrays[k]))
        else:
            a, b = kids
            msgs.append(einsum(_equation(names[a], names[b], out), msgs[a], msgs[b]))
            msgs[a] = msgs[b] = None
        names.append(out)
    return transpose(msgs[-1], [names[-1].index(n) for n in program.output])


def _fitting_network(rng, frac, limit=2 ** 22, n=100, max_parents=5):
    while True:
        factors, cards = random_network(rng, n, frac, max_parents, evidence=0.0, shuffle=False)
        stats = fc.plan(factors, frozenset(cards), method="jointree",
                        memory_budget=2 ** 62).stats()
        if stats["peak_bytes"] <= 8 * limit and stats["max_binary_rank"] <= 16:
            return factors, cards


def _einsum_operands(scopes, arrays, output):
    symbols = {}
    for s in scopes:
        for n in s:
            symbols.setdefault(n, opt_einsum.get_symbol(len(symbols)))
    eq = ",".join("".join(symbols[n] for n in s) for s in scopes) + "->" + \
        "".join(symbols[n] for n in output)
    return eq, arrays


def _peer_row(eq, arrays, expected, limit=2 ** 24, optimize="auto"):
    # opt_einsum's path ("auto": greedy at this size): run only when its intermediates fit.
    path, info = opt_einsum.contract_path(eq, *arrays, optimize=optimize)
    cost = f"2^{math.log2(info.largest_intermediate):.0f}"
    if info.largest_intermediate > limit:
        return None, cost
    expression = opt_einsum.contract_expression(eq, *(a.shape for a in arrays), optimize=path)
    assert np.allclose(expression(*arrays), expected, rtol=1e-9)
    return best_ms(lambda: expression(*arrays)), cost


def batched(quick, n=100, max_parents=5):
    print(f"\n## batched evaluation of a {n}-node network (at most {max_parents} parents), 50% "
          "functional (ms, best of 5)")
    print("opt_einsum ('auto' path) runs on the original factors when its largest intermediate")
    print("fits in 2^24 entries, and on the replicated factors (our Theorem 4 rewrite given to")
    print("it); 'by hand': np.einsum per node of our tree (the same order and separators)")
    print(f"{'batch':>5} {'compiled':>9} {'by hand':>8} {'ratio':>6} "
          f"{'oe original':>12} {'oe replicated':>14} {'ratio':>6} {'sum_product':>12} "
          f"{'pgmpy':>10}")
    has_pgmpy = _import_pgmpy() is not None
    rng = np.random.default_rng(1)
    factors, cards = _fitting_network(rng, 0.5, n=n, max_parents=max_parents)
    observed = [f"v{i}" for i in rng.choice(range(n // 2, n), size=10, replace=False)]
    for batch in (1, 10, 100):
        program, params, declared = _network_program(factors, cards, observed, batch, rng)
        plan = program.plan
        arrays = [params[v] if kind == "param" else v for kind, v in program._leaves]
        expected = program(**params)
        assert np.allclose(_einsum_by_hand(program, arrays), expected, rtol=1e-9)
        t_ours = best_ms(lambda p=program, kw=params: p(**kw))
        t_hand = best_ms(lambda p=program, a=arrays: _einsum_by_hand(p, a))
        eq, _ = _einsum_operands(plan.scopes, arrays, program.output)
        t_orig, c_orig = _peer_row(eq, arrays, expected)
        # The replicated leaves, renamed apart (replica k of x as "x#k"), as plain operands.
        param_of = {v: k for k, (kind, v) in enumerate(program._leaves) if kind == "param"}
        outs = [None] * len(plan.scopes)
        for name, p in declared.items():
            outs[param_of[_base(p)]] = name
        rep_factor, rep_scopes, _, _ = replicate_functional(plan.scopes, outs,
                                                            frozenset(cards))
        rep_arrays = [arrays[k] for k in rep_factor]
        eq_rep, _ = _einsum_operands(rep_scopes, rep_arrays, program.output)
        t_rep, c_rep = _peer_row(eq_rep, rep_arrays, expected)
        t_pg = "n/a" if not has_pgmpy else "-" if batch > 10 and quick else \
            _pgmpy_row(plan, arrays, program, cards, observed, params, expected)
        t_sp = "-"
        if t_orig is not None:
            tensors = [fc.Tensor(a, {n: fc.Bint[plan.sizes[n]] for n in s})
                       for a, s in zip(arrays, plan.scopes)]
            t_sp = best_ms(lambda t=tensors: fc.sum_product(ops.add, ops.mul, t, frozenset(cards)),
                           2)
            t_sp = f"{t_sp:.2f}"
        orig = f"{t_orig:.2f}" if t_orig is not None else f"needs {c_orig}"
        rep = f"{t_rep:.2f}" if t_rep is not None else f"needs {c_rep}"
        ratio = f"{t_rep / t_ours:.2f}" if t_rep is not None else "-"
        print(f"{batch:5d} {t_ours:9.2f} {t_hand:8.2f} {t_hand / t_ours:6.2f} "
              f"{orig:>12} {rep:>14} {ratio:>6} {t_sp:>12} "
              f"{t_pg:>10}")
    stats = program.stats()
    print(f"(compiled plan: max binary rank {stats['max_binary_rank']:.1f}, log10 flops "
          f"{math.log10(stats['flops']):.1f}; sum_product runs only when opt_einsum's path on "
          f"the original factors fits; pgmpy {'installed' if has_pgmpy else 'not installed'})")


def _import_pgmpy():
    if os.environ.get("PGMPY_PATH"):
        sys.path.insert(0, os.environ["PGMPY_PATH"])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from pgmpy.factors.discrete import DiscreteFactor
            from pgmpy.inference import VariableElimination
            from pgmpy.models import DiscreteMarkovNetwork
    except ImportError:
        return None
    return DiscreteFactor, VariableElimination, DiscreteMarkovNetwork


def _pgmpy_row(plan, arrays, program, cards, observed, params, expected, limit=24):
    # pgmpy's VE on the network's own factors (no replication), hard evidence from the
    # one-hot evidence sets, one query per set; the elimination order: our min-fill on the
    # same factors, so its clusters are the classical jointree's. Skipped (its need named)
    # when that tree's largest cluster is over 2^limit entries.
    factor_of = [k for k, (kind, v) in enumerate(program._leaves)
                 if kind != "param" or not v.startswith("e_")]
    scopes = [plan.scopes[k] for k in factor_of]
    # pgmpy drops the observed names from the factors first: plan on what is left.
    reduced = [tuple(n for n in s if n not in observed) for s in scopes]
    sizes = {n: cards[n] for n in cards if n not in observed}
    rank = build_jointree([s for s in reduced if s], [None] * sum(map(bool, reduced)),
                          sizes).stats()["max_binary_rank"]
    if rank > limit:
        return f"needs 2^{rank:.0f}"
    DiscreteFactor, VariableElimination, DiscreteMarkovNetwork = _import_pgmpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DiscreteMarkovNetwork()
        model.add_nodes_from(list(cards))
        model.add_edges_from({(a, b) for s in scopes for a in s for b in s if a < b})
        model.add_factors(*[DiscreteFactor(list(s), [cards[n] for n in s], arrays[k])
                            for s, k in zip(scopes, factor_of)])
        infer = VariableElimination(model)
    query = next(n for n in cards if n not in observed)
    order = min_fill_order([s for s in reduced if s], sizes, set(sizes) - {query})
    states = np.stack([params[f"e_{v}"].argmax(1) for v in observed], 1)
    # pgmpy's VE drops a factor whose names are all observed (a scalar once reduced): right
    # for its normalized posteriors; for the evidence's weight we multiply them back in.
    closed = [(k, [observed.index(n) for n in s])
              for k, s, r in zip(factor_of, scopes, reduced) if not r]

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [infer.query([query], evidence=dict(zip(observed, map(int, row))),
                                elimination_order=order, joint=True,
                                show_progress=False).values.sum()
                    * math.prod(arrays[k][tuple(row[at])] for k, at in closed)
                    for row in states]

    got = run()
    assert np.allclose(got, expected, rtol=1e-9), (got[:3], expected[:3])
    return f"{best_ms(run, 2):.2f}"


def _network_program(factors, cards, observed, batch, rng, with_expr=False):
    # The network's factors as parameters, evidence on ``observed`` for ``batch`` sets as a
    # kept axis "b"; the compiled program, its parameters and the functional declarations.
    terms, params, declared = [], {}, {}
    for k, f in enumerate(factors):
        t = _term(f)
        p = fc.Variable(f"f{k}", fc.Reals[t.data.shape])[tuple(t.inputs)]
        params[f"f{k}"] = t.data
        terms.append(p)
        if t is not f:
            declared[f.out] = p
    for v in observed:
        terms.append(fc.Variable(f"e_{v}", fc.Reals[batch, cards[v]])["b", v])
        params[f"e_{v}"] = np.eye(cards[v])[rng.integers(0, cards[v], size=batch)]
    with lazy:
        expr = fc.sum_product(ops.add, ops.mul, terms, frozenset(cards))
    out = fc.compile(expr, functional=declared), params, declared
    return out + (expr,) if with_expr else out


def under_jit(quick):
    print("\n## under jax.jit: compiled program vs jnp.einsum per node of the same tree, both")
    print("jitted (float64, repeat calls after the compile; ms, best of 9, wall / CPU time;")
    print("ratio = ours / hand in CPU time, what each costs on a shared machine)")
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    print(f"{'network':>22} {'batch':>5} {'compiled':>15} {'jnp.einsum':>15} {'ratio':>6}")
    rng = np.random.default_rng(1)
    cases = [("100 nodes, 50% funct.", _fitting_network(rng, 0.5))]
    if not quick:
        cases.append(("100 nodes, 80% funct.", _fitting_network(rng, 0.8)))
    for label, (factors, cards) in cases:
        observed = [f"v{i}" for i in rng.choice(range(50, 100), size=10, replace=False)]
        for batch in (1, 10):
            program, params, _ = _network_program(factors, cards, observed, batch, rng)
            expected = program(**params)
            fc.set_backend("jax")
            try:
                jparams = {k: jnp.asarray(v) for k, v in params.items()}
                order = [v if kind == "param" else None for kind, v in program._leaves]
                consts = [jnp.asarray(v) if kind == "const" else None
                          for kind, v in program._leaves]
                ours = jax.jit(lambda kw, p=program: p(**kw))

                def by_hand(kw, p=program, order=order, consts=consts):
                    arrays = [kw[v] if v is not None else c for v, c in zip(order, consts)]
                    return _einsum_by_hand(p, arrays, jnp.einsum, jnp.transpose)

                hand = jax.jit(by_hand)
                assert np.allclose(np.asarray(ours(jparams)), expected, rtol=1e-9)
                assert np.allclose(np.asarray(hand(jparams)), expected, rtol=1e-9)
                times = [best_ms(lambda f=f, kw=jparams: f(kw).block_until_ready(), 9, clock)
                         for clock in (time.perf_counter, time.process_time)
                         for f in (ours, hand)]
            finally:
                fc.set_backend("numpy")
            w_ours, w_hand, c_ours, c_hand = times
            print(f"{label:>22} {batch:5d} {w_ours:7.2f} / {c_ours:5.2f} "
                  f"{w_hand:7.2f} / {c_hand:5.2f} {c_ours / c_hand:6.2f}")


def jit_gradients(quick):
    print("\n## under jax.jit, forward and forward+backward (ms, CPU time, best of 9): ours,")
    print("jnp.einsum per node of the same tree by hand, and the same expression compiled")
    print("without the declarations (each table once: the model's gradient in every table)")
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    print(f"{'network':>22} {'row':>26} {'ours':>8} {'by hand':>8} {'undeclared':>10}")
    rng = np.random.default_rng(1)
    cases = [("40 nodes, 50% funct.", _fitting_network(rng, 0.5, n=40, max_parents=3))]
    if not quick:
        cases.append(("100 nodes, 50% funct.", _fitting_network(rng, 0.5)))
    for label, (factors, cards) in cases:
        n = len(cards)
        observed = [f"v{i}" for i in rng.choice(range(n // 2, n), size=10, replace=False)]
        program, params, declared, expr = _network_program(factors, cards, observed, 1, rng,
                                                           with_expr=True)
        try:
            plain = fc.compile(expr, method="jointree")
        except fc.MemoryBudgetError:
            plain = None
        tables = {_base(p) for p in declared.values()}
        fc.set_backend("jax")
        try:
            kw = {k: jnp.asarray(v) for k, v in params.items()}
            other = {k: v for k, v in kw.items() if k not in tables}
            mine = {k: v for k, v in kw.items() if k in tables}
            order = [v if kind == "param" else None for kind, v in program._leaves]
            consts = [jnp.asarray(v) if kind == "const" else None for kind, v in program._leaves]

            def hand(o, d, p=program, order=order, consts=consts):
                arrays = [{**o, **d}[v] if v is not None else c for v, c in zip(order, consts)]
                return jnp.sum(_einsum_by_hand(p, arrays, jnp.einsum, jnp.transpose))

            def run(prog):
                return None if prog is None else lambda o, d: jnp.sum(prog(**o, **d))

            rows = {"forward": lambda f: jax.jit(f),
                    "fwd+bwd, other parameters": lambda f: jax.jit(jax.value_and_grad(f)),
                    "fwd+bwd, declared too": lambda f: jax.jit(
                        jax.value_and_grad(f, argnums=(0, 1)))}
            for row, make in rows.items():
                cells = []
                for f in (run(program), hand, run(plain)):
                    if f is None or (f is hand and row == "fwd+bwd, declared too"):
                        cells.append("-")  # the hand tree's gradient is the replicas'
                        continue
                    g, args = make(f), (other, mine)
                    ms = best_ms(lambda g=g, a=args: jax.block_until_ready(g(*a)), 9,
                                 time.process_time)
                    cells.append(f"{ms:.3f}")
                print(f"{label:>22} {row:>26} {cells[0]:>8} {cells[1]:>8} {cells[2]:>10}")
        finally:
            fc.set_backend("numpy")


def _scalar_graph(program, arrays):
    # Table 6's scalar graph: the same jointree as an arithmetic circuit, every multiply an
    # explicit pair of gathered scalars and every sum a segment sum into its output scalar
    # (one store of all values; executed one jointree node at a time, vectorized inside a
    # node, so the count of numpy calls matches the tensor graph's). Returns an evaluator.
    tree, scopes, sizes = program.plan.tree, program.plan.scopes, program.plan.sizes
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += int(np.size(a))
    nodes, where, names = [], [], []
    for i, kids in enumerate(tree.children):
        out = tree.seps[i]
        ins = [(scopes[tree.leaf_factor[i]], offsets[tree.leaf_factor[i]])] if not kids \
            else [(names[c], where[c]) for c in kids]
        union = tuple(dict.fromkeys(n for ns, _ in ins for n in ns))
        grid = np.indices([sizes[n] for n in union]).reshape(len(union), -1) if union \
            else np.zeros((0, 1), dtype=np.int64)
        pos = {n: k for k, n in enumerate(union)}

        def flat(ns, grid=grid, pos=pos):
            if not ns:
                return np.zeros(grid.shape[1], dtype=np.int64)
            return np.ravel_multi_index([grid[pos[n]] for n in ns], [sizes[n] for n in ns])

        gathers = [off + flat(ns) for ns, off in ins]
        n_out = math.prod(sizes[n] for n in out)
        nodes.append((gathers, flat(out), total, n_out))
        where.append(total)
        names.append(out)
        total += n_out
    perm = [names[-1].index(n) for n in program.output]

    def run(arrays):
        values = np.empty(total)
        for a, off in zip(arrays, offsets):
            values[off:off + np.size(a)] = np.ravel(a)
        for gathers, segment, start, n_out in nodes:
            weights = values[gathers[0]] if len(gathers) == 1 else \
                values[gathers[0]] * values[gathers[1]]
            values[start:start + n_out] = np.bincount(segment, weights, minlength=n_out)
        root = values[nodes[-1][2]:nodes[-1][2] + nodes[-1][3]]
        return np.transpose(root.reshape([sizes[n] for n in names[-1]]), perm)

    return run


def table_6(quick):
    print("\n## Table 6's direction: tensor graph (the compiled program) vs scalar graph (the")
    print("same jointree as an arithmetic circuit of gathered scalars), numpy, ms, best of 5")
    print(f"{'network':>22} {'flops':>8} {'tensor':>8} {'scalar':>8} {'scalar/tensor':>13}")
    rng = np.random.default_rng(3)
    for n, frac in ((30, 0.5), (60, 0.5)) if not quick else ((30, 0.5),):
        while True:
            factors, cards = random_network(rng, n, frac, 4, evidence=0.0, shuffle=False)
            stats = fc.plan(factors, frozenset(cards), method="jointree").stats()
            if 1e5 < stats["flops"] < 2e7:
                break
        program, params, _ = _network_program(factors, cards, [], 1, rng)
        arrays = [params[v] if kind == "param" else v for kind, v in program._leaves]
        scalar = _scalar_graph(program, arrays)
        expected = program(**params)
        assert np.allclose(scalar(arrays), expected, rtol=1e-9)
        t_tensor = best_ms(lambda p=program, kw=params: p(**kw))
        t_scalar = best_ms(lambda f=scalar, a=arrays: f(a))
        flops = program.stats()["flops"]
        print(f"{f'{n} nodes, {frac:.0%} funct.':>22} {flops:8.1e} {t_tensor:8.2f} "
              f"{t_scalar:8.2f} {t_scalar / t_tensor:13.1f}")


def _import_cotengra():
    if os.environ.get("COTENGRA_PATH"):
        sys.path.insert(0, os.environ["COTENGRA_PATH"])
    try:
        import cotengra
    except ImportError:
        return None
    return cotengra


def path_quality(quick):
    # Each planner's tree for the same network: log10 of its flops and log2 of its largest
    # tensor (opt_einsum and cotengra: the largest intermediate of their pairwise path on the
    # original factors; ours: the largest cluster, classical and replicated + shrunk).
    ctg = _import_cotengra()
    seconds = 2 if quick else 10
    print("\n## path quality on random 100-node networks (at most 4 parents, 50% functional):")
    print(f"log10 flops / log2 largest tensor; cotengra: HyperOptimizer, greedy + labels, "
          f"{seconds} s of search ({'installed' if ctg else 'not installed: COTENGRA_PATH'})")
    print(f"{'network':>7} {'oe greedy':>12} {'cotengra':>12} {'jointree':>12} "
          f"{'functional':>12} {'ctg s':>6}")
    rng = np.random.default_rng(5)
    for k in range(2 if quick else 4):
        factors, cards = random_network(rng, 100, 0.5, 4, evidence=0.0, shuffle=False)
        terms = [_term(f) for f in factors]
        scopes = [tuple(t.inputs) for t in terms]
        eq, arrays = _einsum_operands(scopes, [t.data for t in terms], ())
        shapes = [a.shape for a in arrays]
        _, info = opt_einsum.contract_path(eq, *shapes, shapes=True, optimize="greedy")
        oe = f"{math.log10(info.opt_cost):.1f} / {math.log2(info.largest_intermediate):.1f}"
        cg, secs = "n/a", "-"
        if ctg is not None:
            t0 = time.perf_counter()
            opt = ctg.HyperOptimizer(max_time=seconds, max_repeats=10 ** 6, progbar=False,
                                     methods=["greedy", "labels"], optlib="random")
            inputs, output = eq.split("->")
            tree = ctg.array_contract_tree([tuple(i) for i in inputs.split(",")], tuple(output),
                                           {c: n for i, a in zip(inputs.split(","), arrays)
                                            for c, n in zip(i, a.shape)}, optimize=opt)
            secs = f"{time.perf_counter() - t0:.0f}"
            cg = f"{math.log10(tree.total_flops()):.1f} / {tree.contraction_width():.1f}"
        ours = []
        for fs in (terms, factors):
            st = fc.plan(fs, frozenset(cards), method="jointree", memory_budget=2 ** 62).stats()
            ours.append(f"{math.log10(st['flops']):.1f} / {st['max_binary_rank']:.1f}")
        print(f"{k:7d} {oe:>12} {cg:>12} {ours[0]:>12} {ours[1]:>12} {secs:>6}")


def _base(term):
    while not isinstance(term, fc.Variable):
        term = term.arg
    return term.name


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=("planning", "table5", "batched", "small", "jit",
                                           "jit_grad", "table6", "paths"))
    args = parser.parse_args()
    steps = {"planning": lambda: planning(), "table5": lambda: table_5(args.quick),
             "batched": lambda: batched(args.quick),
             "small": lambda: batched(args.quick, 40, 3), "jit": lambda: under_jit(args.quick),
             "jit_grad": lambda: jit_gradients(args.quick),
             "table6": lambda: table_6(args.quick), "paths": lambda: path_quality(args.quick)}
    for name, step in steps.items():
        if args.only in (None, name):
            step()


if __name__ == "__main__":
    main()
