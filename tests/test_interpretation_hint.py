"""``fc.lazy`` (an interpretation looked up on funsor_core) says where interpretations are;
other missing names stay plain AttributeErrors, and getattr's default still works."""

import pytest

import funsor_core as fc


def test_interpretation_names_point_to_the_package():
    import interpretations

    for name in ("lazy", "moment_matching", "MonteCarlo", "EXACT"):
        with pytest.raises(AttributeError, match=f"from interpretations import {name}"):
            getattr(fc, name)
        assert getattr(interpretations, name) is not None  # the hint names a real object
    with pytest.raises(AttributeError, match="no attribute 'nothing'$"):
        fc.nothing  # noqa: B018
    assert getattr(fc, "lazy", None) is None
    from funsor_core import sum_product  # submodules still import by name

    assert callable(sum_product.sum_product)
