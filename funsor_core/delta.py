"""funsor's ``funsor.delta``: the Delta atom.

A thin face; the implementation lives in
``funsor_core.atoms.delta``."""


from funsor_core.atoms.delta import (
    TRACED_COEFFICIENT,
    Delta,
    change_delta_variable,
    delta_log_indicator,
    invert_affine,
    plate_log_density,
    reduce_delta,
    reduce_delta_plates,
    subs_delta,
)

__all__ = [
    "Delta", "TRACED_COEFFICIENT", "change_delta_variable", "delta_log_indicator",
    "invert_affine", "plate_log_density", "reduce_delta", "reduce_delta_plates", "subs_delta"
]
