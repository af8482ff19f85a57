"""Run generated programs under whichever ``funsor`` this process imports, and summarise each.

Started by the runner (``tests/compat/funsor_diff/__main__.py``) in the clients venv, once
with funsor 0.4.8 and once with funsor-core served as ``funsor`` by the shim; it imports only
``funsor`` and the array libraries, never ``funsor_core`` by name, so both sides run the same
text. Reads a JSON list of ``{"id", "src"}`` from argv[2], writes one JSON line per program to
argv[3]::

    python execute.py numpy programs.json results.jsonl

A summary holds the kind of the result (``Tensor``, ``Number``, ``Gaussian``, ...,
``lazy:<class>``, ``array``, ``error``), its inputs and output as ``[dtype, shape]``, the data's
dtype, and its values as a float64 list: a Tensor aligned to its sorted input names; a funsor
with real inputs probed at fixed points of those inputs (see ``probe``); an error its class
and the names of its bases.
"""

from __future__ import annotations

import functools
import json
import math
import signal
import sys
import zlib
from collections import OrderedDict

import numpy as np

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "numpy"
if BACKEND == "jax":
    import jax

    jax.config.update("jax_enable_x64", True)

import funsor  # noqa: E402
import funsor.ops as ops  # noqa: E402

funsor.set_backend(BACKEND)

if BACKEND == "torch":
    import torch

    torch.set_num_threads(1)


def arr(x, dtype=None):
    """A numpy array as an array of the active backend."""
    x = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    if BACKEND == "torch":
        return torch.as_tensor(x)
    if BACKEND == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return x


def A(seed, shape):  # noqa: N802 (the programs' short name)
    """Standard normal numbers, the same in every process for a seed."""
    return np.random.default_rng(seed).normal(size=shape)


def P(seed, shape):  # noqa: N802
    """Positive numbers in [0.5, 2]."""
    return np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)


def I(seed, shape, high):  # noqa: E743, N802
    """Integers in [0, high)."""
    return np.random.default_rng(seed).integers(0, high, size=shape)


def _namespace():
    from funsor import Bint, Number, Real, Reals, Tensor, Variable  # noqa: F401

    ns = dict(np=np, functools=functools, funsor=funsor, ops=ops, OrderedDict=OrderedDict,
              arr=arr, A=A, P=P, I=I, Bint=Bint, Real=Real, Reals=Reals, Tensor=Tensor,
              Number=Number, Variable=Variable, BACKEND=BACKEND)
    return ns


def _np(x):
    if BACKEND == "torch" and hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _dom(d):
    return [str(getattr(d, "dtype", "?")), list(getattr(d, "shape", ()))]


def _floats(a):
    a = np.asarray(a, dtype=np.float64).ravel()
    return [None if math.isnan(v) else (repr(v) if math.isinf(v) else v) for v in a.tolist()]


def _kind(x):
    for name in ("Tensor", "Number", "Variable"):
        if isinstance(x, getattr(funsor, name)):
            return name
    for mod, name in (("gaussian", "Gaussian"), ("delta", "Delta")):
        if isinstance(x, getattr(getattr(funsor, mod), name)):
            return name
    return "lazy:" + type(x).__name__.split("[")[0]


def probe(x):
    """Substitute fixed values for the real inputs of a funsor, return an aligned Tensor."""
    subs = {}
    for k, d in x.inputs.items():
        if d.dtype == "real":
            seed = zlib.crc32(k.encode())
            subs[k] = funsor.Tensor(arr(A(seed, tuple(d.shape))))
    return x(**subs) if subs else x


def summarize(x):
    if isinstance(x, funsor.Funsor):
        out = {"kind": _kind(x), "inputs": {k: _dom(d) for k, d in x.inputs.items()},
               "output": _dom(x.output)}
        try:
            y = probe(x)
            if isinstance(y, funsor.Number):
                out["dtype"] = type(y.data).__name__
                out["value"] = _floats(y.data)
            elif isinstance(y, funsor.Tensor):
                names = tuple(sorted(y.inputs))
                y = y.align(names)
                a = _np(y.data)
                out["dtype"] = str(a.dtype)
                out["value"] = _floats(a) if a.dtype != object else None
            else:
                out["value_kind"] = _kind(y)
        except Exception as e:  # noqa: BLE001 (a probe that fails is a fact to compare)
            out["probe_error"] = type(e).__name__
            out["probe_msg"] = str(e).strip().split("\n")[0][:300]
        return out
    if isinstance(x, (bool, int, float)):
        return {"kind": "python", "dtype": type(x).__name__, "value": _floats(x)}
    if isinstance(x, (tuple, list)):
        return {"kind": "seq", "items": [summarize(v) for v in x]}
    try:
        a = _np(x)
        if a.dtype != object:
            return {"kind": "array", "dtype": str(a.dtype), "shape": list(a.shape),
                    "value": _floats(a)}
    except Exception:  # noqa: BLE001
        pass
    return {"kind": "other:" + type(x).__name__}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_one(src, seconds=60 if BACKEND == "jax" else 20):
    ns = _namespace()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        exec(compile(src, "<program>", "exec"), ns)
        return summarize(ns["result"])
    except _Timeout:
        return {"kind": "timeout"}
    except Exception as e:  # noqa: BLE001 (the error's type is the result)
        return {"kind": "error", "error": type(e).__name__,
                "bases": [c.__name__ for c in type(e).__mro__],
                "msg": str(e).strip().split("\n")[0][:300]}
    finally:
        signal.alarm(0)


def main(argv):
    with open(argv[2]) as f:
        programs = json.load(f)
    with open(argv[3], "w") as out:
        for p in programs:
            r = run_one(p["src"])
            r["id"] = p["id"]
            out.write(json.dumps(r) + "\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv)
