"""The limits of a float dtype of any backend: numpy's and jax's dtypes (numpy dtypes,
``bfloat16`` included where ml_dtypes registers it), torch's (``torch.float32``) by their
name, and ``bfloat16`` by its bit layout where numpy does not know it (torch's, without
ml_dtypes). The precision checks of the chain and contraction kernels read these: a dtype
``np.finfo`` cannot name made them fail with numpy's "not inexact" message.

Example:
    >>> from funsor_core.engine.floats import float_info
    >>> info = float_info(np.float32)
    >>> info.bits, info.eps == 2.0 ** -23
    (32, True)
    >>> float_info("bfloat16").eps
    0.0078125
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["FloatInfo", "float_info"]


class FloatInfo(NamedTuple):
    """``bits``, ``eps`` (the spacing at 1), ``tiny`` (the smallest normal number) and
    ``max`` of a float dtype, as Python numbers.

    Example:
        >>> FloatInfo(16, 2.0 ** -10, 2.0 ** -14, 65504.0).max
        65504.0
    """

    bits: int
    eps: float
    tiny: float
    max: float


# bfloat16: float32's exponent (8 bits) with 7 stored mantissa bits.
_BY_LAYOUT = {"bfloat16": FloatInfo(16, 2.0 ** -7, 2.0 ** -126, (2.0 - 2.0 ** -7) * 2.0 ** 127)}
_INFO: dict = {}


def float_info(dtype) -> FloatInfo:
    """The :class:`FloatInfo` of a float ``dtype`` of numpy, jax or torch (or its name).

    Raises:
        ValueError: ``dtype`` is not a floating-point type known to numpy or by its layout.

    Example:
        >>> float_info(np.dtype(np.float16)).max
        65504.0
    """
    info = _INFO.get(dtype)
    if info is not None:
        return info
    # numpy and jax dtypes are numpy's; another library's (torch.float32) is read by the
    # name after its last dot.
    name = dtype if isinstance(dtype, (type, np.dtype)) else str(dtype).rsplit(".", 1)[-1]
    try:
        f = np.finfo(name)
        info = FloatInfo(int(f.bits), float(f.eps), float(f.tiny), float(f.max))
    except (TypeError, ValueError):  # a scalar type numpy cannot read (jnp.bfloat16): its name
        info = _BY_LAYOUT.get(getattr(name, "__name__", str(name)))
        if info is None:
            raise ValueError(f"{dtype!r} is not a floating-point dtype whose limits are known "
                             f"(numpy's finfo or {sorted(_BY_LAYOUT)})") from None
    _INFO[dtype] = info
    return info
