"""Compare two summaries of one program (funsor 0.4.8's and ours) and classify the difference.

``differ`` returns None when they agree, else a short class string that groups like
differences (``value``, ``kind Tensor != lazy:Binary``, ``error NotImplementedError != ok``).

    >>> differ({"kind": "Number", "value": [1.0]}, {"kind": "Number", "value": [1.0 + 1e-12]})
    >>> differ({"kind": "Number", "value": [1.0]}, {"kind": "Number", "value": [2.0]})
    'value'
"""

from __future__ import annotations

import math


def _f(v):
    if v is None:
        return math.nan
    if isinstance(v, str):
        return float(v)
    return v


def values_close(a, b, rtol=1e-5, atol=1e-6) -> bool:
    """Elementwise close, NaN equal to NaN and infinities equal to themselves."""
    if a is None or b is None:
        return a is b
    if len(a) != len(b):
        return False
    for x, y in zip(map(_f, a), map(_f, b)):
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif math.isinf(x) or math.isinf(y):
            if x != y:
                return False
        elif abs(x - y) > atol + rtol * max(abs(x), abs(y)):
            return False
    return True


def _dtype_kind(d):
    if d is None:
        return None
    if d.startswith(("float", "torch.float")) or d == "float":
        return "float"
    if d.startswith(("int", "uint", "torch.int", "torch.uint")) or d == "int":
        return "int"
    return d


def differ(t: dict, o: dict):
    """None if the summaries agree, else the class of their difference."""
    if t["kind"] == "error" or o["kind"] == "error":
        if t["kind"] == "error" and o["kind"] == "error":
            if t["error"] == o["error"] or t["error"] in o["bases"]:
                return None
            return f"error {t['error']} != {o['error']}"
        if t["kind"] == "error":
            return f"funsor raises {t['error']}, ours {o['kind']}"
        return f"ours raises {o['error']}, funsor {t['kind']}"
    if "timeout" in (t["kind"], o["kind"]):
        return "timeout"
    if t["kind"] == "seq" and o["kind"] == "seq":
        # partial_sum_product's list of independent components: its order is no contract
        if len(t["items"]) != len(o["items"]):
            return "seq length"
        rest = list(o["items"])
        for x in t["items"]:
            match = next((y for y in rest if differ(x, y) is None), None)
            if match is None:
                return "seq item: " + (differ(x, rest[0]) or "?")
            rest.remove(match)
        return None
    if t["kind"] != o["kind"]:
        return f"kind {t['kind']} != {o['kind']}"
    if t.get("inputs") is not None and t.get("inputs") != o.get("inputs"):
        if sorted(t["inputs"].items()) != sorted(o["inputs"].items()):
            return "inputs"  # (their order is no contract: values are aligned by name)
    if t.get("output") != o.get("output"):
        return "output"
    if t.get("shape") != o.get("shape"):
        return "shape"
    if "probe_error" in t or "probe_error" in o:
        if t.get("probe_error") != o.get("probe_error"):
            return f"probe {t.get('probe_error')} != {o.get('probe_error')}"
        return None
    if t.get("value_kind") != o.get("value_kind"):
        return f"probe kind {t.get('value_kind')} != {o.get('value_kind')}"
    if _dtype_kind(t.get("dtype")) != _dtype_kind(o.get("dtype")):
        return f"dtype {t.get('dtype')} != {o.get('dtype')}"
    if not values_close(t.get("value"), o.get("value")):
        return "value"
    return None


def brief(r: dict) -> str:
    """One line of a summary for the report."""
    if r["kind"] == "error":
        return f"{r['error']}: {r['msg'][:160]}"
    v = r.get("value")
    if v is not None and len(v) > 8:
        v = v[:8] + ["..."]
    keys = ("kind", "inputs", "output", "dtype", "probe_error", "value_kind")
    return " ".join(f"{k}={r[k]}" for k in keys if k in r) + f" value={v}"
