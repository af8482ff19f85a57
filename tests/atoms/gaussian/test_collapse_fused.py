"""The replayed collapse as one fused numpy program (``collapse_fused``).

Oracles: the numpy GPB2 filter (float64, the per-step loop's algorithm), and the QR collapse
(the replay and ``FAST_NORMAL_EQUATIONS`` switched off: two QR factorizations, nothing
squared), compared as densities evaluated at random points (square roots are not unique).
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.atoms.gaussian import collapse_fused as cf
from funsor_core.atoms.gaussian import collapse_replay as cr
from funsor_core.atoms.gaussian import normal_equations as ne
from funsor_core.atoms.gaussian.mixture import collapse_sum, gram_collapse_plan
from funsor_core.atoms.gaussian.moments import collapse_result
from interpretations import moment_matching
from tests.interpretations.test_moment_matching import _numpy_gpb, _slds
from tests.interpretations.test_moment_matching_sums import _step_loop


@pytest.fixture
def fused_runs(monkeypatch):
    """Each fused program's outcome (True: it answered, False: it declined), from fresh
    programs."""
    cr._PROGRAMS.clear()
    cr._SEEN.clear()
    outcomes = []
    call = cf._Fused.__call__

    def counted(self, terms):
        out = call(self, terms)
        outcomes.append(out is not None)
        return out

    monkeypatch.setattr(cf._Fused, "__call__", counted)
    return outcomes


def _gaussian(rng, inputs: dict, rank: int) -> fc.Gaussian:
    batch = tuple(d.size for d in inputs.values() if d.dtype != "real")
    dim = sum(d.num_elements for d in inputs.values() if d.dtype == "real")
    return fc.Gaussian(white_vec=rng.normal(size=batch + (rank,)),
                       prec_sqrt=rng.normal(size=batch + (dim, rank)), inputs=inputs)


def _tensor(rng, inputs: dict) -> fc.Tensor:
    return fc.Tensor(rng.normal(size=tuple(d.size for d in inputs.values())), inputs)


S, T, X, Y = fc.Bint[3], fc.Bint[2], fc.Reals[2], fc.Real
# (terms' inputs and ranks, reduced names): the SLDS step's structure; Bint inputs in other
# orders in each summand (transposed into the plan's layout) and a real input split across
# summands in another order, with no real name integrated; no Bint input kept.
STRUCTURES = {
    "slds_step": ([({"s": S, "x": X}, 2), ({"t": T, "x": X, "y": Y}, 3), ({"y": Y}, 1),
                   {"s": S, "t": T}, {"t": T}, 0.25], {"s", "x"}),
    "transposed": ([({"t": T, "s": S, "y": Y, "x": X}, 3), ({"s": S, "t": T, "x": X}, 2),
                    {"t": T, "s": S}, {"s": S}, -1.5], {"s"}),
    # no Bint input kept: the program's batch of kept assignments is empty (shape ())
    "nothing_kept": ([({"s": S, "x": X}, 2), ({"x": X, "y": Y}, 3), {"s": S}, 0.5], {"s", "x"}),
}


def _terms(rng, spec):
    return tuple(fc.Number(x) if isinstance(x, float) else _tensor(rng, x)
                 if isinstance(x, dict) else _gaussian(rng, *x) for x in spec)


def _evaluate(result, rng_points):
    """The density at the points: a dict of kept-assignment tables (name order fixed)."""
    g, t = result.terms
    reals = {k: d for k, d in g.inputs.items() if d.dtype == "real"}
    out = []
    for point in rng_points:
        value = result(**{k: point[k] for k in reals})
        out.append(np.asarray(value.align(tuple(sorted(value.inputs))).data))
    return np.stack(out)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_fused_collapse_is_the_qr_collapse(name, fused_runs, monkeypatch):
    """Three sums of one structure (new numbers each time): the second (where the structure
    is recorded) and the third are the fused program's, and each result is the QR
    collapse's density to 1e-10."""
    spec, reduced = STRUCTURES[name]
    rng = np.random.default_rng(7)
    points = [{"x": rng.normal(size=2), "y": rng.normal()} for _ in range(3)]
    for _ in range(3):
        terms = _terms(rng, spec)
        with moment_matching:
            fused = collapse_sum(frozenset(reduced), terms)
        monkeypatch.setattr(cr, "REPLAY_COLLAPSE", [False])
        monkeypatch.setattr(ne, "FAST_NORMAL_EQUATIONS", [False])
        with moment_matching:
            qr = collapse_sum(frozenset(reduced), terms)
        monkeypatch.setattr(cr, "REPLAY_COLLAPSE", [True])
        monkeypatch.setattr(ne, "FAST_NORMAL_EQUATIONS", [True])
        np.testing.assert_allclose(_evaluate(fused, points), _evaluate(qr, points), rtol=1e-10)
    assert fused_runs == [True, True]


def test_fused_loop_is_gpb2(fused_runs):
    """The per-step loop with a 3-d state and 2-d observations: every step from the third on
    is the fused program's, and log p(y) is the GPB2 filter's to 1e-10."""
    p = _slds(seed=4, T=8, K=2, d=3, obs_dim=2)
    value, _ = _step_loop(p, "numpy", p["y"])
    assert fused_runs == [True] * (len(p["y"]) - 3)
    np.testing.assert_allclose(value, _numpy_gpb(p, 1), rtol=1e-10)


def test_float32_and_near_singular_noise_decline(fused_runs):
    """A structure recorded in float64, met in float32: the program declines and the QR path
    gives the GPB2 filter's value in float32; a near-singular noise covariance (``v v' +
    1e-6 I``): every replay's check fails and the QR path runs, to 1e-9."""
    p = _slds(seed=12, T=6, K=3, d=2, obs_dim=1)
    _step_loop(p, "numpy", p["y"])
    del fused_runs[:]
    value, _ = _step_loop(p, "numpy", np.asarray(p["y"], np.float32), np.float32)
    assert fused_runs == [False] * (len(p["y"]) - 2)
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, _numpy_gpb(p, 1), rtol=1e-4)
    v = np.array([1.0, 1.0]) / np.sqrt(2.0)
    p["Q"][0] = np.outer(v, v) + 1e-6 * np.eye(2)
    del fused_runs[:]
    value, _ = _step_loop(p, "numpy", p["y"])
    assert fused_runs == [False] * (len(p["y"]) - 2)
    np.testing.assert_allclose(value, _numpy_gpb(p, 1), rtol=1e-9)


def test_no_mass_and_other_shapes_decline(monkeypatch):
    """A kept assignment whose weights are all -inf: the program declines and the general
    path gives its answer (mass -inf, a unit covariance); a weight +inf, and an array at a
    broadcast batch shape (built past the constructor), decline too."""
    rng = np.random.default_rng(3)
    spec, reduced = STRUCTURES["slds_step"]
    terms = _terms(rng, spec)
    plan, _ = gram_collapse_plan(frozenset(reduced), terms)
    program = cf.fused_program(plan, terms)
    assert program(terms) is not None
    dead = fc.Tensor(np.where(np.arange(2) == 1, -np.inf, 0.0), {"t": T})
    dead_terms = terms[:4] + (dead,) + terms[5:]
    assert program(dead_terms) is None
    infinite = fc.Tensor(np.where(np.arange(2) == 1, np.inf, 0.0), {"t": T})
    assert program(terms[:4] + (infinite,) + terms[5:]) is None  # NaN weights: no answer
    monkeypatch.setattr(cr, "REPLAY_COLLAPSE", [False])
    with moment_matching:
        general = collapse_sum(frozenset(reduced), dead_terms)
    g, t = general.terms
    assert np.isneginf(t.align(("t",)).data[1]) and np.isfinite(t.align(("t",)).data[0])
    s = terms[0]
    flat = fc.Gaussian.make(s.white_vec[:1], s.prec_sqrt[:1], ikey=s._ikey)
    assert program((flat,) + terms[1:]) is None


def test_results_survive_the_next_call_and_a_busy_workspace():
    """The arrays a call returns are its own (the next call of the program, which reuses
    its workspace, leaves them as they were), and a call that finds the workspace taken (by
    another thread) makes its own: both equal the QR collapse's density to 1e-10."""
    rng = np.random.default_rng(5)
    spec, reduced = STRUCTURES["slds_step"]
    terms, other = _terms(rng, spec), _terms(rng, spec)
    plan, _ = gram_collapse_plan(frozenset(reduced), terms)
    program = cf.fused_program(plan, terms)
    first = program(terms)
    kept = [np.array(a, copy=True) for a in first]
    program(other)
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, b)
    held = program.pool.pop()  # another thread's call in progress
    busy = program(terms)
    assert len(program.pool) == 1 and program.pool[0] is not held
    for a, b in zip(busy, first):
        np.testing.assert_array_equal(a, b)
    points = [{"x": rng.normal(size=2), "y": rng.normal()} for _ in range(3)]
    result = collapse_result(plan, *busy)
    with moment_matching:
        saved = cr.REPLAY_COLLAPSE[0], ne.FAST_NORMAL_EQUATIONS[0]
        cr.REPLAY_COLLAPSE[0] = ne.FAST_NORMAL_EQUATIONS[0] = False
        try:
            qr = collapse_sum(frozenset(reduced), terms)
        finally:
            cr.REPLAY_COLLAPSE[0], ne.FAST_NORMAL_EQUATIONS[0] = saved
    np.testing.assert_allclose(_evaluate(result, points), _evaluate(qr, points), rtol=1e-10)


def test_loops_in_threads_are_gpb2(fused_runs, monkeypatch):
    """Four threads run the per-step loop at once, each factorization yielding the
    interpreter to the others in the middle of a program (so that calls overlap and take
    workspaces of their own): each log p(y) is the GPB2 filter's to 1e-10, and the fused
    program answered every replayed step."""
    p = _slds(seed=6, T=8, K=3, d=2, obs_dim=1)
    _step_loop(p, "numpy", p["y"])  # the structure recorded
    expected = _numpy_gpb(p, 1)
    values = [None] * 4
    factor = cf._CHOLESKY

    def yielding(a, out, **kw):
        time.sleep(1e-4)
        return factor(a, out, **kw)

    def run(k):
        values[k] = _step_loop(p, "numpy", p["y"])[0]

    monkeypatch.setattr(cf, "_CHOLESKY", yielding)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_allclose(values, [expected] * 4, rtol=1e-10)
    assert fused_runs and all(fused_runs)
    pools = [len(v.fused.pool) for v in cr._PROGRAMS.data.values() if v and v.fused]
    assert pools and max(pools) > 1  # the calls overlapped


def test_other_backends_and_traced_arrays_decline():
    """The program of a numpy structure, given the same terms on torch, on concrete jax
    arrays or on arrays traced by jax (``make_jaxpr``: a trace, no compile) declines; the
    numpy terms themselves are answered."""
    import jax
    import jax.numpy as jnp
    import torch

    rng = np.random.default_rng(8)
    spec, reduced = STRUCTURES["slds_step"]
    terms = _terms(rng, spec)
    plan, _ = gram_collapse_plan(frozenset(reduced), terms)
    program = cf.fused_program(plan, terms)

    def moved(convert):
        return tuple(fc.Gaussian.make(convert(t.white_vec), convert(t.prec_sqrt), ikey=t._ikey)
                     if isinstance(t, fc.Gaussian) else
                     fc.Tensor.make(convert(t.data), t.inputs, ikey=t._ikey)
                     if isinstance(t, fc.Tensor) else t for t in terms)

    assert program(terms) is not None
    assert program(moved(torch.as_tensor)) is None
    assert program(moved(jnp.asarray)) is None
    answers = []

    def traced(*arrays):
        it = iter(arrays)
        answers.append(program(moved(lambda a: next(it))))
        return arrays[0]

    flat = [a for t in terms for a in ((t.white_vec, t.prec_sqrt) if isinstance(t, fc.Gaussian)
                                       else (t.data,) if isinstance(t, fc.Tensor) else ())]
    jax.make_jaxpr(traced)(*flat)
    assert answers == [None]
