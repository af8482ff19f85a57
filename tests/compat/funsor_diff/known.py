"""The differences between funsor 0.4.8 and funsor-core that the fuzzer has explained.

Each rule is ``(label, test)``: ``test(diff, family, program)`` reads the difference class
from ``compare.differ``, the program's family, tags and source, and both summaries
(``program["theirs"]``, ``program["ours"]``). Labels start with the brief's class: ``(b)``
funsor's number or domain is wrong (each shown against numpy brute force, see
docs/funsor_suite_differences.md, "Differential fuzzing"), ``(c)`` a deliberate difference
documented there or in the README's "Differences from funsor 0.4.8". ``inconclusive``: a side
ran past its time limit (eager jax compiles).

    >>> classify("timeout", "tensor", {"tags": [], "src": "", "theirs": {}, "ours": {}})
    'inconclusive: a side ran out of time'
"""

from __future__ import annotations


def _msg(p, side):
    return p[side].get("msg", "")


def _err(p, side):
    return p[side].get("error", "")


def _tags(p):
    return " ".join(p["tags"])


RULES = [
    ("inconclusive: a side ran out of time",
     lambda d, f, p: d == "timeout" or "_Timeout" in d),
    ("(c) reduce over a name that is no input: ValueError naming it (funsor KeyError/TODO)",
     lambda d, f, p: d.startswith("error ") and _msg(p, "ours").startswith("cannot reduce over")),
    ("(c) a Delta's log density is kept by logaddexp over its name (funsor drops it)",
     lambda d, f, p: (f == "delta" or "Delta" in p["tags"])
     and d in ("value", "kind Number != Tensor") and "reduce" in _tags(p) + p["src"]),
    ("(b) funsor's Gaussian times a number is wrong once integrated (brute force)",
     lambda d, f, p: f == "gaussian" and d == "value" and "scale" in p["tags"]),
    ("(b) funsor's jax ops.min reduction computes the max (numpy brute force)",
     lambda d, f, p: p.get("backend") == "jax" and ("ops.min" in p["src"] or ".min()" in p["src"])
     and d in ("value", "seq item: value")),
    ("(b) funsor fails (AssertionError) on a scaled Gaussian summed over a Bint (brute force)",
     lambda d, f, p: f == "gaussian" and "scale" in p["tags"]
     and d.startswith("funsor raises AssertionError")),
    ("(c) a Gaussian times a number is a Gaussian (funsor: a lazy Contraction), same values",
     lambda d, f, p: d == "kind lazy:Contraction != Gaussian"),
    ("(c) eager where a number exists (funsor leaves it lazy)",
     lambda d, f, p: d.startswith(("probe kind lazy:", "kind lazy:Contraction != Number"))),
    ("(c) plated einsum whose output keeps a plate a summed variable lies outside: ValueError",
     lambda d, f, p: f in ("einsum", "naive_einsum") and _err(p, "theirs") == "NotImplementedError"
     and _err(p, "ours") == "ValueError"),
    ("(c) funsor has no rule (NotImplementedError: TODO), ours computes",
     lambda d, f, p: d.startswith("funsor raises NotImplementedError, ours")),
    ("(c) integer/bool data in real arithmetic is computed in floats (funsor raises)",
     lambda d, f, p: f == "tensor" and d.startswith("funsor raises")
     and any(s in _msg(p, "theirs") for s in ("not inexact", "boolean", "finfo", "bool"))),
    ("(c) the domain of a Bint result: widened sums, Real for real functions of Bint",
     lambda d, f, p: f == "tensor" and d == "output"),
    ("(c) a sum-product pair that does not distribute raises (funsor's number is wrong)",
     lambda d, f, p: f == "sum_product" and d.startswith("ours raises ValueError")
     and "distribute" in _msg(p, "ours")),
    ("(b) funsor's substitution of a name by another input of the Tensor keeps a wrong output",
     lambda d, f, p: f in ("subs", "terms") and d == "output"
     and ("var_other" in p["tags"] or "stack_subs" in p["tags"])),
    ("(b) funsor's Stack substituted by an input of one part fails (ours: brute force)",
     lambda d, f, p: f == "terms" and "stack_subs" in p["tags"]
     and d.startswith("funsor raises AssertionError")),
    ("(c) more positional values than inputs raise ValueError (funsor ignores the extra ones)",
     lambda d, f, p: f == "subs" and d.startswith("ours raises ValueError")
     and "positional values" in _msg(p, "ours")),
    ("(c) an out-of-range index raises DomainError naming the input (funsor: numpy's error)",
     lambda d, f, p: d.startswith("error ") and _err(p, "ours") == "DomainError"
     and "out of range" in _msg(p, "ours")),
    ("(c) to_funsor with a batch dim dim_to_name does not name: DomainError naming it",
     lambda d, f, p: d.startswith("error ") and "has no name in dim_to_name" in _msg(p, "ours")),
    ("(c) float32 and float64 torch arrays combine (funsor: torch's dtype RuntimeError)",
     lambda d, f, p: _err(p, "theirs") == "RuntimeError" and any(
         s in _msg(p, "theirs") for s in ("dtype", "Float", "Double", "float != double"))
     or d.startswith("probe RuntimeError") and "dtype" in p["theirs"].get("probe_msg", "")),
    ("(c) a log density outside the support is -inf (funsor: the backend's validation error)",
     lambda d, f, p: f in ("distribution", "symbolic_dist") and d.startswith("probe ValueError")),
    ("(c) funsor's Beta is its Dirichlet class; ours is a Beta",
     lambda d, f, p: d == "kind lazy:Dirichlet != lazy:Beta"),
    ("(c) to_data with a name_to_dim that lacks inputs: ValueError naming them (funsor KeyError)",
     lambda d, f, p: d.startswith("error KeyError") and "name_to_dim lacks" in _msg(p, "ours")),
    ("(c) bool/int data under real functions is computed in float64 (funsor: numpy's float16)",
     lambda d, f, p: f == "tensor" and d == "value" and p["theirs"].get("dtype") == "float16"),
    ("(c) Independent of a Gaussian in x_i is one Gaussian in x (funsor: lazy; README)",
     lambda d, f, p: "independent" in p["tags"] and d.startswith(
         ("kind lazy:Independent", "kind lazy:Contraction != Tensor"))),
    ("(c) a substitution of a name that is no input is dropped, under reflect too",
     lambda d, f, p: f == "interpretation" and d == "kind lazy:Subs != lazy:Binary"),
    ("(c) two domains for one name raise DomainError when the term is built (funsor: lazy)",
     lambda d, f, p: (d.startswith("ours raises DomainError") or d.endswith("!= DomainError"))
     and any(s in _msg(p, "ours") for s in ("cannot add", "cannot integrate: input"))),
]


RULES += [
    ("(c) a name for a non-scalar distribution parameter raises TypeError asking for a "
     "Variable (funsor: a Real input, then an AssertionError or ValueError); README 'Loud "
     "errors'",
     lambda d, f, p: f == "symbolic_dist" and _err(p, "ours") == "TypeError"
     and "does not give its domain" in _msg(p, "ours")),
    ("(c) eager where a number exists: Integrate of a Gaussian against a Tensor or an affine "
     "integrand (funsor leaves it lazy; ours checked against funsor's own Z * f, Z * E[x])",
     lambda d, f, p: f == "integrate" and d == "kind lazy:Contraction != Tensor"),
]


RULES += [
    ("(b) funsor's adjoint of a lazy sequential_sum_product gives the transition factor zero "
     "(-inf) or fails (AssertionError); ours matches brute-force enumeration of the paths",
     lambda d, f, p: f == "forward_backward" and "markov" in p["tags"] and (
         (d == "kind Number != Tensor" and p["theirs"].get("value") == ["-inf"])
         or d.startswith("funsor raises AssertionError"))),
]


def _after(tags, first, then):
    """Whether step ``then`` comes after step ``first`` among a program's tags."""
    return first in tags and then in tags[tags.index(first):]


RULES += [
    ("(b) funsor integrates a power of a Gaussian mixture as that power of the mixture's "
     "integral (c * log of the integral, not the log of the integral of p**c: quadrature, "
     "also with other reals fixed); "
     "ours stays lazy (no closed form)",
     lambda d, f, p: f == "gaussian"
     and d.startswith(("kind Tensor != lazy:", "kind Number != lazy:", "probe kind None != lazy:"))
     and _after(p["tags"], "sum_bint", "scale")
     # a second sum_bint finds no Bint left and reduces every input
     and any(_after(p["tags"], "scale", t) for t in ("integrate", "marg", "sum_bint"))),
]


def classify(diff: str, family: str, program: dict) -> str | None:
    """The label of the first rule that explains the difference, or None."""
    for label, test in RULES:
        try:
            if test(diff, family, program):
                return label
        except (KeyError, TypeError):
            continue
    return None
