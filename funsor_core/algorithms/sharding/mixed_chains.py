"""Switching (mixed: discrete x Gaussian) Markov products over a sharded time axis, under
``moment_matching``: the three-phase scan with one moment-matched summary per device.

What one device computes. A step ``trans(t, s_prev, s_curr, x_prev, x_curr)`` (Gaussians
plus Tensors) is a mixed chain: ``exact``'s rule builds the pairwise contractions as terms
(``chains.term_scans.parallel_steps``: adjacent pairs at once, ``ceil(log2 T)`` rounds, an
odd round's last segment set aside and composed back at the end). Each contraction sums a
middle switch state out of a Gaussian that depends on it; under ``exact`` that keeps the
mixture (a lazy term of ``K^(T-1)`` components per end-state pair), under
``moment_matching`` it collapses it to one Gaussian per ``(s_start, s_end)`` pair with the
mixture's normalizer, mean and covariance, an approximation whose value depends on the
association of the products.

What the sharded scan computes. With ``T = P L + R`` (``P`` devices, ``R < P``), each
device composes its ``L`` steps with the same pairwise scan, built as terms through the
interpretations in force, into one summary: a moment-matched Gaussian and a Tensor per
end-state pair, ``O(K^2 d^2)`` numbers; ONE all-gather brings the ``P`` summaries, packed
into one array, to every device, which composes them with the same pairwise scan; the last
``R`` steps (replicated on every device, so no padding: a mixed chain has no identity step)
are composed by the same scan and appended, as the one-device scan appends its set-aside
segments; with ``R > 0`` every device reads its block from the whole array (as a padded
Tensor chain does), so that nothing but the summaries moves between devices. Where ``P``
and ``L`` are powers of two and ``R`` is zero or a power of two, the tree is the one-device
tree (which composes the segments of ``T``'s binary digits as a
left fold) and the values are one device's (to rounding, 1e-12 in the tests); elsewhere
the association differs and so does the moment-matched value, within the approximation's
own error (tested against the enumeration of all ``K^(T+1)`` switch paths, each a Kalman
filter: on a T = 6 chain on 2 devices, 0.07 nats from it where one device is 0.04). Where
moment matching is exact (``K = 1``, or Gaussians that do not depend on the switch) every
association gives the exact value. A chain asking for ``strategy="sequential"`` (a left fold
on one device) is composed by the pairwise scan here too, so its value is one device's
parallel one.

Not implemented (raises ``NotImplementedError``, naming why): the exact mixture (no
``moment_matching`` entered outside ``sharded``; its summary grows as ``K^(L-1)``), and the
max-plus semiring for a mixed chain.

Example:
    >>> shard_markov_mixed(None, ops.logaddexp, ops.add, None, fc.Variable("t", fc.Bint[2]),
    ...                    (), ()) is None
    True
"""

from __future__ import annotations

import math
from functools import reduce

from funsor_core import ops
from funsor_core.algorithms.chains.evaluate import rename_free
from funsor_core.algorithms.chains.gaussian_scan import gaussian_terms
from funsor_core.algorithms.chains.term_scans import parallel_steps
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.terms.contraction import Contraction

__all__ = ["is_switching_chain", "shard_markov_mixed"]

_EXACT_MIXTURE = (
    "sharded(...): the switching chain over the sharded time '{name}' sums its middle switch "
    "states out of Gaussians that depend on them; without moment matching a block of L steps "
    "is a mixture of K^(L-1) Gaussians per pair of end states (a lazy term that grows with "
    "the block), which one all-gather of a fixed-size summary cannot carry. Enter "
    "`moment_matching` outside `sharded(...)` (one moment-matched Gaussian per end-state pair, "
    "as one device computes under it), or leave '{name}' out of time={{...}} to run the exact "
    "mixture on one device")
_MAX_MIXED = (
    "sharded(...): the switching chain over the sharded time '{name}' is in ({sum_op}, "
    "{prod_op}); only (logaddexp, add) with moment matching is sharded for a mixed chain "
    "(issue #33). Leave '{name}' out of time={{...}} to run it on one device")


def _atoms(term) -> list | None:
    # The Gaussians and Tensors whose sum is ``term``; None for anything else (a lazy mixture).
    parts = gaussian_terms(term)
    if parts is None:
        return None
    atoms = [*parts[0], *parts[1]]
    return atoms if all(type(a) in (Gaussian, Tensor) for a in atoms) else None


def is_switching_chain(trans, time, step: tuple) -> bool:
    """Whether ``trans`` is a switching chain's step along ``time``: a sum of Gaussians and
    Tensors that varies with ``time``, with both discrete and real step pairs.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 2, 2)), covariance=np.ones((2, 2, 2, 2)) * 2
        ...                 + np.eye(2), inputs={"a": fc.Bint[2], "b": fc.Bint[2],
        ...                                      "x": fc.Real, "y": fc.Real})
        >>> is_switching_chain(g, fc.Variable("t", fc.Bint[3]), (("a", "b"), ("x", "y")))
        False
    """
    if time.name not in trans.inputs or _atoms(trans) is None:
        return False
    kinds = {trans.inputs[c].dtype == "real" for _, c in step if c in trans.inputs}
    return kinds == {True, False}


def _is_mixture(term) -> bool:
    # logaddexp over discrete names only of a sum of atoms: a mixture nothing collapsed.
    if type(term) is not Contraction or term.red_op is not ops.logaddexp:
        return False
    if not term.reduced_vars or not all(type(t) in (Gaussian, Tensor) for t in term.terms):
        return False
    domains = {k: d for t in term.terms for k, d in t.inputs.items()}
    return all(domains[v].dtype != "real" for v in term.reduced_vars)


def _arrays(atom) -> tuple:
    return (atom.white_vec, atom.prec_sqrt) if type(atom) is Gaussian else (atom.data,)


def _build(atom, arrays: tuple, inputs: dict):
    # ``atom``'s kind over new arrays and inputs, built through the interpreter.
    if type(atom) is Gaussian:
        return Gaussian(white_vec=arrays[0], prec_sqrt=arrays[1], inputs=inputs)
    return Tensor(arrays[0], inputs, atom.dtype)


def _time_first(atom, tname: str) -> tuple:
    # The atom's arrays with ``tname`` as their first batch dim, every batch dim at full size
    # (an array may broadcast a size-1 dim), and its inputs in that order.
    names = (tname,) + tuple(k for k in atom.inputs if k != tname)
    atom = atom.align(names)
    batch = tuple(d.size for d in atom.inputs.values() if d.dtype != "real")
    arrays = tuple(ops.expand(a, batch + tuple(a.shape[len(batch):]))
                   for a in _arrays(atom))
    return atom, arrays


def _scan(sum_op, prod_op, trans, tname: str, pairs: dict):
    # The one-device pairwise scan (a chain of one step is that step).
    if trans.inputs[tname].size == 1:
        return trans(**{tname: 0})
    return parallel_steps(sum_op, prod_op, trans, tname, pairs)


def _compose(sum_op, prod_op, first, second, pairs: dict):
    # (first o second)(prev, curr) = sum_mid first(prev, mid) * second(mid, curr), named as
    # ``term_scans`` names its middle states.
    drop = {curr: f"_drop_{curr}" for curr in pairs.values()}
    x = first(**drop)
    y = second(**{prev: drop[curr] for prev, curr in pairs.items()})
    return Contraction(sum_op, prod_op, frozenset(drop.values()), (x, y))


def _chain_of(atoms: list, arrays: list, tname: str, size: int):
    # The step over ``size`` times from each atom's arrays (None: the atom has no time).
    terms = []
    for atom, arr in zip(atoms, arrays):
        if arr is None:
            terms.append(atom)
        else:
            terms.append(_build(atom, arr, {tname: Bint[size], **{
                k: d for k, d in atom.inputs.items() if k != tname}}))
    return reduce(lambda a, b: a + b, terms)


class _Summary:
    """A block's product as atoms packed into one flat array, and back: the layout (kind,
    inputs, array shapes) is recorded when the first device's program is traced."""

    def __init__(self) -> None:
        self.layout: list | None = None

    def pack(self, term, what: str):
        atoms = _atoms(term)
        if atoms is None:
            raise NotImplementedError(what)
        self.layout = [(a, tuple(tuple(x.shape) for x in _arrays(a))) for a in atoms]
        return ops.cat([ops.reshape(x, (-1,)) for a in atoms for x in _arrays(a)], -1)

    def unpack(self, flat, tname: str | None = None):
        # The atoms' sum; with ``tname``, ``flat`` stacks P summaries along a new time input.
        lead = () if tname is None else (flat.shape[0],)
        start, terms = 0, []
        for atom, shapes in self.layout:
            arrays = []
            for shape in shapes:
                n = math.prod(shape)
                arrays.append(ops.reshape(flat[..., start:start + n], lead + shape))
                start += n
            inputs = dict(atom.inputs) if tname is None else {tname: Bint[lead[0]],
                                                              **atom.inputs}
            terms.append(_build(atom, tuple(arrays), inputs))
        return reduce(lambda a, b: a + b, terms)


def shard_markov_mixed(interp, sum_op, prod_op, trans, time, step: tuple,
                       step_names: tuple):
    """The Markov product of the switching chain ``trans`` (Gaussians plus Tensors, discrete
    and real step pairs) with its time split over the mesh of ``interp`` (a ``Sharded``),
    composed as the module docstring says; None where ``trans`` is not such a sum or the
    chain is shorter than the number of devices (then it runs on one device).

    Raises:
        NotImplementedError: without ``moment_matching`` (the exact mixture), or for a
            semiring other than ``(logaddexp, add)``.

    Example:
        >>> shard_markov_mixed(None, ops.logaddexp, ops.add, None,
        ...                    fc.Variable("t", fc.Bint[2]), (), ()) is None
        True
    """
    if interp is None or trans is None or not is_switching_chain(trans, time, step):
        return None
    atoms = _atoms(trans)
    tname, size = time.name, time.output.size
    if (sum_op, prod_op) != (ops.logaddexp, ops.add):
        raise NotImplementedError(_MAX_MIXED.format(name=tname, sum_op=sum_op.name,
                                                    prod_op=prod_op.name))
    if size == 1:
        return None
    pairs = dict(step)
    # Decided before any device runs: the first two steps composed through the
    # interpretations in force are atoms (moment matched), the mixture over the middle
    # switch state kept as a sum of atoms (exact), or a lazy term (lazy: decline). Under
    # jax.jit this is traced and its unused value dropped by the compiler.
    probe = _compose(sum_op, prod_op, trans(**{tname: 0}), trans(**{tname: 1}), pairs)
    if _atoms(probe) is None:
        if _is_mixture(probe):
            raise NotImplementedError(_EXACT_MIXTURE.format(name=tname))
        return None
    proto = _arrays(next(a for a in atoms if type(a) is Gaussian))[0]
    backend, (shards,) = interp.spmd(proto, [tname])
    block, rest = divmod(size, shards)
    if block == 0:
        return None
    aligned = [_time_first(a, tname) if tname in a.inputs else (a, None) for a in atoms]
    atoms = [a for a, _ in aligned]
    split, dims, index = [], [], []
    for arrays in (arr for _, arr in aligned):
        index.append(None if arrays is None else len(split))
        for x in arrays or ():
            # Uneven: every device reads its block from the whole (replicated) array, as the
            # tail does; split arrays would let XLA's partitioner split what produced them
            # and move the tail's rows between devices.
            split.append(x if rest else x[:block * shards])
            dims.append(None if rest else 0)
    what = _EXACT_MIXTURE.format(name=tname)
    summary, product = _Summary(), _Summary()

    def regroup(blocks):
        out = []
        for atom, i in zip(atoms, index):
            out.append(None if i is None else tuple(blocks[i:i + len(_arrays(atom))]))
        return out

    def local(device, *blocks):
        if rest:
            rows = ops.new_arange(blocks[0], block) + device * block
            blocks = tuple(x[rows] for x in blocks)
        chain = _chain_of(atoms, regroup(blocks), tname, block)
        return summary.pack(_scan(sum_op, prod_op, chain, tname, pairs), what)

    def combine(stack):
        chain = summary.unpack(stack, tname)
        return product.pack(_scan(sum_op, prod_op, chain, tname, pairs), what)

    result = product.unpack(backend.shard_all_gather(interp.mesh, local, combine, split, dims,
                                                     interp.mesh_axes(tname)))
    if rest:  # the last R < P steps, on every device, appended as one device appends them
        tail = regroup([x[block * shards:] for _, arr in aligned for x in arr or ()])
        tail = _scan(sum_op, prod_op, _chain_of(atoms, tail, tname, rest), tname, pairs)
        result = _compose(sum_op, prod_op, result, tail, pairs)
    renames = rename_free(step, step_names)
    return result(**renames) if renames else result
