"""A new user's tries of loopy BP (#31): a ragged model stopped before any update, and
factors of two backends."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.loopy import loopy_bp


def _ragged():
    rng = np.random.default_rng(0)
    f = fc.Tensor(rng.normal(size=(2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    g = fc.Tensor(rng.normal(size=(3,)), {"b": fc.Bint[3]})
    return f, g


@pytest.mark.parametrize("schedule", ["flooding", "residual"])
def test_max_iters_zero_beliefs_are_uniform_over_the_real_states(schedule):
    # With no update every message is uniform: each belief is uniform over the variable's
    # own states (a: 2 of the padded D = 3), so it sums to one.
    r = loopy_bp(list(_ragged()), schedule=schedule, max_iters=0)
    for name, size in (("a", 2), ("b", 3)):
        np.testing.assert_allclose(r.beliefs[name].data, np.full(size, -np.log(size)))


def test_factors_of_two_backends_raise_naming_them():
    torch = pytest.importorskip("torch")
    f, g = _ragged()
    f = fc.Tensor(torch.tensor(f.data, requires_grad=True), f.inputs)
    with pytest.raises(TypeError, match="factor 0 holds torch arrays and factor 1 holds numpy"):
        loopy_bp([f, g])


def test_thesis_grid_from_the_public_face_takes_a_seed_and_checks_its_arguments():
    from funsor_core.loopy import thesis_grid

    _, by_seed = thesis_grid(3, n=2, L=3)
    _, by_rng = thesis_grid(np.random.default_rng(3), n=2, L=3)
    for a, b in zip(by_seed, by_rng):
        np.testing.assert_array_equal(a, b)
    for bad in (dict(n=0, L=3), dict(n=2, L=0), dict(n=2, L=3, p_min=0.0),
                dict(n=2, L=3, p_max=1.0), dict(n=2, L=3, p_min=0.5, p_max=0.1)):
        with pytest.raises(ValueError, match="thesis_grid needs ints n >= 1"):
            thesis_grid(0, **bad)


@pytest.mark.parametrize("schedule", ["flooding", "residual"])
def test_a_model_of_zero_mass_has_log_z_minus_inf(schedule):
    f, _ = _ragged()
    dead = fc.Tensor(np.full(2, -np.inf), {"a": fc.Bint[2]})
    with np.errstate(divide="ignore"):  # the oracle: brute force, log 0
        expected = np.logaddexp.reduce((np.asarray(f.data) + dead.data[:, None]).ravel())
    assert loopy_bp([f, dead], schedule=schedule).log_z.data == expected == -np.inf


def test_a_state_of_zero_mass_has_belief_minus_inf():
    # Brute force: the marginal of b under f(a, b) + g(b) with g(2) = -inf.
    f, g = _ragged()
    g = fc.Tensor(np.where(np.arange(3) == 2, -np.inf, g.data), g.inputs)
    joint = np.asarray(f.data) + g.data
    expected = np.logaddexp.reduce(joint, 0) - np.logaddexp.reduce(joint.ravel())
    for schedule in ("flooding", "residual"):
        belief = loopy_bp([f, g], schedule=schedule, max_iters=np.int64(50)).beliefs["b"].data
        np.testing.assert_allclose(belief, expected)  # -inf where expected is -inf


def test_anytime_bp_checks_its_arguments_when_called_not_when_iterated():
    from funsor_core.loopy import anytime_bp

    factors = list(_ragged())
    for bad in (dict(schedule="bogus"), dict(priority="bogus"), dict(damping=1.0),
                dict(tol=-1.0), dict(max_iters=-1)):
        with pytest.raises(ValueError, match="anytime_bp needs|unknown"):
            anytime_bp(factors, **bad)  # no next(): the generator has not started
