"""The fuzzer's program generator without the clients venv: every family on every backend it
runs on gives Python text that compiles, assigns ``result``, and is the same for the same
seed (the runs in docs/funsor_suite_differences.md are reproducible from their seeds)."""

import pytest

from tests.compat.funsor_diff.__main__ import FAMILIES, ONLY, generate


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_every_family_compiles_and_is_seeded(backend):
    families = [f for f in FAMILIES if backend in ONLY.get(f, (backend,))]
    for family in families:
        progs = generate(backend, 12, 5, [family])
        assert progs == generate(backend, 12, 5, [family])
        for p in progs:
            assert p["family"] == family
            compile(p["src"], f"<{family} {p['id']}>", "exec")
            assert "result = " in p["src"]
