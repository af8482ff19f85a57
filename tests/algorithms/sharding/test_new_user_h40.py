"""A new user's tries of ``sharded`` (h40): plates given as a set or list of names (not a
dict to mesh axes) failed with "dictionary update sequence element #0 has length 4"."""

from __future__ import annotations

import pytest

from funsor_core.sharding import sharded


@pytest.mark.parametrize("where", [{"plates": {"data"}}, {"time": ["t"]},
                                   {"particles": ("particle",)}])
def test_names_without_mesh_axes_are_refused_naming_the_argument(where):
    (what, value), = where.items()
    with pytest.raises(TypeError, match=rf"{what} must be a dict from each name to its mesh "
                                        rf"axis, e.g. \{{'data': 'x'\}}"):
        sharded("a mesh", **where)
    assert sharded("a mesh", **{what: dict.fromkeys(value, "x")}) is not None
