"""What the examples share for their plots: matplotlib when it is installed, and the folder
the plots go to (``examples/out/``).

Example:
    >>> out_path("x.png").endswith(os.path.join("examples", "out", "x.png"))
    True
"""

from __future__ import annotations

import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend, or None (and a message saying so)
    when matplotlib is not installed: the examples print their results either way."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  (matplotlib is not installed: no plot; pip install -e '.[demo]')")
        return None
    return plt


def out_path(filename: str) -> str:
    """``examples/out/<filename>``, creating the folder."""
    os.makedirs(OUT, exist_ok=True)
    return os.path.join(OUT, filename)
