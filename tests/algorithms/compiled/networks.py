"""Random Bayesian networks with functional CPTs, the rectangle model of Darwiche (2020,
section 5.1), and brute-force enumeration: the oracles of the compiled-elimination tests."""

import numpy as np

import funsor_core as fc
from funsor_core.algorithms.compiled import Functional
from funsor_core.algorithms.compiled.models import (  # noqa: F401  (re-exported)
    random_network,
    rectangle_structure,
)


def term(f):
    return f.term if isinstance(f, Functional) else f


def to_log(factors):
    """The same factors in log space (functional ones declared in log space)."""
    out = []
    with np.errstate(divide="ignore"):
        for f in factors:
            t = term(f)
            logt = fc.Tensor(np.log(t.data), t.inputs)
            out.append(fc.functional(logt, f.out, log=True) if isinstance(f, Functional)
                       else logt)
    return out


def brute_force(factors, cards, keep=()):
    """Multiply every factor broadcast to all names, then sum all but ``keep`` (in order)."""
    names = list(cards)
    idx = {n: i for i, n in enumerate(names)}
    joint = np.ones([cards[n] for n in names])
    for f in factors:
        t = term(f)
        fn = list(t.inputs)
        data = np.transpose(t.data, np.argsort([idx[n] for n in fn]))
        shape = [cards[n] if n in fn else 1 for n in names]
        joint = joint * data.reshape(shape)
    axes = tuple(i for i, n in enumerate(names) if n not in keep)
    out = joint.sum(axes)
    kept = [n for n in names if n in keep]
    return np.transpose(out, [kept.index(n) for n in keep])
