"""funsor's ``funsor.compiler`` module path: ``compile_funsor`` (a funsor expression as a
program of ops on backend values) and funsor-core's compiled elimination.

Example:
    >>> from funsor_core.compiler import compile_funsor
    >>> x = fc.Variable("x", fc.Reals[2])
    >>> compile_funsor(x * x)(x=np.array([2.0, 3.0]))
    array([4., 9.])
"""

from funsor_core.algorithms.compiled import compile, cost, plan  # noqa: A004
from funsor_core.algorithms.compiled.opprogram import OpProgram, compile_funsor, make_tuple

__all__ = ["OpProgram", "compile", "compile_funsor", "cost", "make_tuple", "plan"]
