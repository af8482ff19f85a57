"""A numpy-backed term crosses ``jax.jit`` whichever of jax and funsor_core is imported
first, in a fresh process that has seen no jax array (the term classes become pytrees when
jax loads). Oracle: numpy's sum of the same array."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")

PROGRAM = """
{first}
import numpy as np
import funsor_core as fc
{then}
t = fc.Tensor(np.arange(6.0).reshape(2, 3), {{"i": fc.Bint[2], "j": fc.Bint[3]}})
r = jax.jit(lambda t: t.reduce(fc.ops.add, "j"))(t)
print(repr(np.asarray(r.data).tolist()))
"""


@pytest.mark.parametrize("first,then", [("", "import jax"), ("import jax", "")])
def test_numpy_tensor_under_jit_in_a_fresh_process(first, then):
    out = subprocess.run([sys.executable, "-c", PROGRAM.format(first=first, then=then)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    expected = np.arange(6.0).reshape(2, 3).sum(1).tolist()
    assert eval(out.stdout.strip().splitlines()[-1]) == expected
