"""Gaussians indexed by a new Bint input, and reductions of a log-sum of Gaussian terms.

``stack_gaussians`` evaluates ``Stack(i, (g_0, g_1, ...))`` of Gaussians (or Gaussian plus
Tensor sums) to one Gaussian batched over ``i``, so that reducing it over its real inputs and
``i`` is the exact mixture integral. ``reduce_logaddexp_terms`` evaluates
``Contraction(logaddexp, logaddexp, V, terms)`` (what normalizing a reduction of such a Stack
gives): ``log ∫ (e^{g_1} + e^{g_2}) = logaddexp(log ∫ e^{g_1}, log ∫ e^{g_2})``.

Example:
    >>> g1 = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> g2 = fc.Gaussian(mean=np.ones(1), covariance=4 * np.eye(1), inputs={"x": fc.Real})
    >>> s = stack_gaussians("i", (g1, g2))
    >>> s.inputs
    {'i': Bint[2], 'x': Real}
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.gaussian.algebra import (
    dense_sum,
    gaussian_sum,
    is_gaussian_sum,
    split_gaussian_sum,
)
from funsor_core.atoms.gaussian.atom import (
    Gaussian,
    align_gaussian,
    gaussian_batch_inputs,
    merge_gaussian_inputs,
)
from funsor_core.atoms.gaussian.collapse_replay import replay_collapse
from funsor_core.atoms.gaussian.moments import collapse_layout, collapse_mixture
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.engine.cache import cached
from funsor_core.terms.backend_check import _BACKEND_OF_TYPE, array_backend, check_backends
from funsor_core.terms.base import Funsor, Number, Variable, merge_inputs
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.reshaping import Cat, Stack

__all__ = ["cat_gaussians", "collapse_args", "collapse_sum", "gram_collapse_plan", "mixture_vars",
           "pending_sum",
           "reduce_logaddexp_terms", "rename_gaussian_names", "rename_gaussian_sum",
           "stack_gaussians", "would_compress"]

# A pending sum sums its dense summands once it holds more than this many (a loop that adds
# Tensors to a Gaussian and never reduces would otherwise grow its term without bound).
_MAX_DENSE = 4


def stack_gaussians(name: str, parts) -> Funsor | None:
    """``Stack(name, parts)`` for parts that are each one Gaussian (plus Tensors or Numbers):
    one Gaussian over ``name`` and the union of the parts' inputs (a part lacking a real input
    has no information on it: zero rows), plus the Stack of the dense parts. Ranks differ by
    zero columns, which add nothing. None for any other part.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> stack_gaussians("i", (g, g * 4.0)).precision[:, 0, 0]
        array([1., 4.])
    """
    split = _split_parts(parts)
    if split is None:
        return None
    gaussians, denses = split
    inputs = merge_gaussian_inputs(*gaussians)
    batch = gaussian_batch_inputs(inputs)
    whites, roots = _padded([align_gaussian(inputs, g, expand=True) for g in gaussians])
    new_inputs = {name: Bint[len(parts)], **batch,
                  **{k: d for k, d in inputs.items() if d.dtype == "real"}}
    stacked = Gaussian(ops.stack(whites, 0), ops.stack(roots, 0), tuple(new_inputs.items()))
    if all(d is None for d in denses):
        return stacked
    proto = whites[0]  # Numbers become arrays, so that the Stack is a Tensor
    dense = Stack(name, tuple(
        Tensor.make(ops.new_full(proto, (), 0.0 if d is None else float(d.data)), {})
        if d is None or isinstance(d, Number) else d for d in denses))
    return gaussian_sum(stacked, dense) if isinstance(dense, Tensor) else None


def cat_gaussians(name: str, parts, part_name: str) -> Funsor | None:
    """``Cat(name, parts, part_name)`` for parts that are each one Gaussian (plus Tensors or
    Numbers): one Gaussian whose batch over ``name`` is the parts' batches over ``part_name``
    laid end to end (a part lacking another input is broadcast over it, a real input it lacks
    gets zero rows), plus the Cat of the dense parts. None for any other part.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.eye(1),
        ...                 inputs={"u": fc.Bint[2], "x": fc.Real})
        >>> cat_gaussians("u", (g, g * 4.0), "u").precision[:, 0, 0]
        array([1., 1., 4., 4.])
    """
    split = _split_parts(parts)
    if split is None:
        return None
    gaussians, denses = split
    sizes = [p.inputs[part_name].size for p in parts]
    rest = _merge_without(gaussians, part_name)
    whites, roots = _padded([align_gaussian({part_name: Bint[n], **rest}, g, expand=True)
                             for g, n in zip(gaussians, sizes)])
    new_inputs = {name: Bint[sum(sizes)], **rest}
    joined = Gaussian(ops.cat(whites, 0), ops.cat(roots, 0), tuple(new_inputs.items()))
    if all(d is None for d in denses):
        return joined
    # Each dense part as a Tensor over part_name (zeros + d broadcasts d), then one Cat.
    dense = Cat(name, tuple(
        Tensor.make(ops.new_zeros(whites[0], (n,)), {part_name: Bint[n]})
        + (Number(0.0) if d is None else d) for d, n in zip(denses, sizes)), part_name)
    return gaussian_sum(joined, dense) if isinstance(dense, Tensor) else None


def _split_parts(parts) -> tuple[list, list] | None:
    # Each part's one Gaussian and its dense sum (None where it has none), or None.
    gaussians, denses = [], []
    for part in parts:
        if not isinstance(part, Funsor):
            return None
        try:
            more_g, more_d = split_gaussian_sum(part)
        except AssertionError:  # a term that is neither a Gaussian nor a Tensor
            return None
        if len(more_g) != 1:
            return None
        gaussians.append(more_g[0])
        denses.append(dense_sum(more_d))
    return gaussians, denses


def _merge_without(gaussians, part_name: str) -> dict:
    # The union of the Gaussians' inputs but part_name (whose size differs between parts):
    # Bint inputs first, then real ones.
    inputs: dict = {}
    for g in gaussians:
        inputs = merge_inputs(inputs, {k: d for k, d in g.inputs.items() if k != part_name},
                              "cat")
    batch = gaussian_batch_inputs(inputs)
    return {**batch, **{k: d for k, d in inputs.items() if d.dtype == "real"}}


def _padded(aligned) -> tuple[list, list]:
    # Ranks differ by zero columns, which add nothing: -0.5 * ||x @ 0 - 0||^2 = 0.
    rank = max(int(root.shape[-1]) for _, root in aligned)
    whites, roots = [], []
    for white_vec, prec_sqrt in aligned:
        missing = rank - int(prec_sqrt.shape[-1])
        if missing:
            white_vec = ops.cat([white_vec, ops.new_zeros(
                white_vec, tuple(white_vec.shape[:-1]) + (missing,))], -1)
            prec_sqrt = ops.cat([prec_sqrt, ops.new_zeros(
                prec_sqrt, tuple(prec_sqrt.shape[:-1]) + (missing,))], -1)
        whites.append(white_vec)
        roots.append(prec_sqrt)
    return whites, roots


def mixture_vars(reduced_vars: frozenset, terms) -> frozenset:
    """The reduced Bint names that some Gaussian of ``terms`` depends on.

    Example:
        ``i`` indexes the Gaussian's components; ``j`` only a weight's entries.

        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> w = fc.Tensor(np.zeros(3), {"j": fc.Bint[3]})
        >>> sorted(mixture_vars(frozenset({"i", "j", "x"}), (g, w)))
        ['i']
    """
    return frozenset(v for t in terms if isinstance(t, Gaussian)
                     for v in reduced_vars & t.inputs.keys() if t.inputs[v].dtype != "real")


def would_compress(gaussians) -> bool:
    """Whether the sum of these Gaussians would be compressed (``gaussian_from_arrays``):
    when their square-root factors hold more columns than ``compression_threshold`` times
    the real dimension.

    Example:
        >>> h = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> fc.Gaussian.compression_threshold, would_compress([h, h]), would_compress([h] * 3)
        (2, False, True)
    """
    ikeys, rank = [], 0
    for g in gaussians:  # (a loop: a filter step asks this of every sum it builds)
        ikeys.append(g._ikey)
        rank += g.prec_sqrt.shape[-1]
    return _would_compress(tuple(ikeys), rank, Gaussian.compression_threshold)


@cached("gaussian.mixture.would_compress", maxsize=512, fast=True)
def _would_compress(ikeys: tuple, rank: int, threshold: float) -> bool:
    reals = {k: d for ikey in ikeys for k, d in ikey if d.dtype == "real"}
    dim = sum(d.num_elements for d in reals.values())
    return dim == 0 or rank > threshold * dim


def pending_sum(lhs: Funsor, rhs: Funsor) -> Funsor | None:
    """``lhs + rhs`` for Gaussians, Tensors, Numbers and sums of them, as the sum of their
    summands side by side: ``Contraction(None, add, {}, (g1, g2, ..., t1, ...))``, nothing
    aligned or concatenated (``collapse_mixture`` places each Gaussian in its layout). None
    where ``gaussian_sum`` would compress the Gaussians (exact's, then), for a sum that is no
    Gaussian sum, or for no Gaussian.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> h = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"y": fc.Real})
        >>> [type(t).__name__ for t in pending_sum(g, h).terms]
        ['Gaussian', 'Gaussian']
    """
    if type(lhs) is Gaussian and type(rhs) is Number:  # g + c (a filter's observation)
        return Contraction.make(ops.add, (lhs, rhs))  # (what the general case below gives)
    left, right = _summands(lhs), _summands(rhs)
    terms = left + right
    gaussians = []
    for t in terms:
        cls = type(t)
        if cls is Gaussian or (cls is not Tensor and cls is not Number and isinstance(t, Gaussian)):
            gaussians.append(t)
        elif cls is not Tensor and cls is not Number and not isinstance(t, (Tensor, Number)):
            return None
    if not gaussians:
        return None
    if len(gaussians) > 1 and would_compress(gaussians):
        return None
    # The constructor's checks, for the two sides (each side's summands were checked when
    # it was built), then the sum as it is: a step of a filter builds several.
    merge_inputs(lhs.inputs, rhs.inputs, "add")
    # Each side's summands share a backend (checked when it was built): where both sides
    # name the same one, nothing is mixed and nothing converted; otherwise every summand
    # is looked at (the error, or numpy scalars met by another backend's arrays).
    # (A Number holds no array: added to a checked side, nothing can be mixed. Arrays of
    # one type on both sides are one backend's: nothing is looked at again.)
    if type(rhs) is not Number and type(lhs) is not Number:
        kind = _side_array_type(left)
        if kind is None or kind is not _side_array_type(right) or \
                type(_BACKEND_OF_TYPE.data.get(kind)) is not str:
            backend = _side_backend(left)
            if backend is None or backend != _side_backend(right):
                terms = check_backends("add", terms)
    if len(terms) - len(gaussians) > _MAX_DENSE:
        terms = (*gaussians, dense_sum([t for t in terms if not isinstance(t, Gaussian)]))
    return Contraction.make(ops.add, terms)


def _side_array_type(terms: tuple) -> type | None:
    """The type of the first array a summand holds itself, or None."""
    for t in terms:
        fields = type(t).arrays
        if fields:
            return type(getattr(t, fields[0]))
    return None


def _side_backend(terms: tuple) -> str | None:
    """The backend of the first summand that holds arrays (a Gaussian first, in canonical
    order), or None."""
    for t in terms:
        name = array_backend(t)
        if name is not None:
            return name
    return None


def rename_gaussian_sum(term: Contraction, subs: tuple) -> Funsor | None:
    """``term(**dict(subs))`` for a sum of Gaussians, Tensors and Numbers when every value
    is a Variable of its input's domain and no two names merge: each summand relabelled (no
    array changes), the sum rebuilt as it was. None for any other substitution.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> s = pending_sum(g, fc.Tensor(np.zeros(2), {"i": fc.Bint[2]}))
        >>> rename_gaussian_sum(s, (("i", fc.Variable("j", fc.Bint[2])),)).inputs
        {'j': Bint[2], 'x': Real}
    """
    key = []
    for k, v in subs:
        if type(v) is not Variable:
            return None
        key.append((k, v.name, v.output))
    return _renamed(term, tuple(key))


def rename_gaussian_names(term: Funsor, names: dict) -> Funsor | None:
    """``term(**names)`` for a Gaussian sum (``is_gaussian_sum``) and names given as str
    (each a Variable of its input's domain; names that are not inputs ignored), as
    ``rename_gaussian_sum`` gives it, without building the Variables; None otherwise (the
    eager program of ``f(x="y")``, ``terms.methods``).

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> s = pending_sum(g, fc.Tensor(np.zeros(2), {"i": fc.Bint[2]}))
        >>> rename_gaussian_names(s, {"i": "j", "z": "w"}).inputs
        {'j': Bint[2], 'x': Real}
    """
    if not is_gaussian_sum(term):
        return None
    inputs = term.inputs
    key = tuple([(k, v, inputs[k]) for k, v in names.items() if k in inputs])
    return _renamed(term, key) if key else None


def _renamed(term: Contraction, key: tuple) -> Funsor | None:
    """The summands of ``term`` relabelled by ``key``, ``(name, new name, domain)`` triples."""
    terms = term.terms
    ikeys = _rename_plan(tuple([None if isinstance(t, Number) else t._ikey for t in terms]), key)
    if ikeys is None:
        return None
    parts = tuple([t if ikey is None else Gaussian.make(t.white_vec, t.prec_sqrt, ikey=ikey)
                   if isinstance(t, Gaussian) else Tensor.make(t.data, dict(ikey), t.dtype,
                                                               ikey, t.output)
                   for t, ikey in zip(terms, ikeys)])
    # Fresh summands of the checked sum, relabelled one to one: built as it is.
    return Contraction.make(ops.add, parts)


@cached("gaussian.mixture.rename_plan", maxsize=512, fast=True)
def _rename_plan(ikeys: tuple, subs: tuple) -> tuple | None:
    """The summands' relabelled input items (None for a Number), for substitutions
    ``(name, new name, domain)``; None where one is not a renaming (a domain that is not the
    input's, two names merging)."""
    inputs = {k: d for ikey in ikeys if ikey is not None for k, d in ikey}
    mapping = {}
    for k, name, domain in subs:
        if domain != inputs.get(k):
            return None
        mapping[k] = name
    new = set(mapping.values())
    if len(new) != len(mapping) or not new.isdisjoint(inputs.keys() - mapping.keys()):
        return None
    return tuple(None if ikey is None else tuple((mapping.get(k, k), d) for k, d in ikey)
                 for ikey in ikeys)


def _summands(term: Funsor) -> tuple:
    if isinstance(term, Contraction) and term.red_op is None and term.bin_op is ops.add:
        return term.terms
    return (term,)


def collapse_args(reduced_vars: frozenset, mixed: frozenset, gaussians: list, dense: list):
    """``collapse_mixture``'s arguments: the real names of ``reduced_vars`` that a Gaussian
    has are integrated in its QR; names only the weights have are summed there (exactly).
    Returns ``(gaussian or tuple of them, dense terms, names summed, real names integrated)``.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> w = fc.Tensor(np.zeros(3), {"j": fc.Bint[3]})
        >>> _, dense, summed, real = collapse_args(frozenset("ijx"), frozenset("i"), [g], [w])
        >>> dense == (w,), sorted(summed), sorted(real)
        (True, ['i', 'j'], ['x'])
    """
    exact_vars = reduced_vars - mixed
    g = gaussians[0] if len(gaussians) == 1 else tuple(gaussians)
    real = frozenset(v for v in exact_vars if any(v in x.inputs for x in gaussians))
    return g, tuple(dense), mixed | (exact_vars - real), real


def collapse_sum(reduced_vars: frozenset, terms) -> Funsor | None:
    """``Contraction(logaddexp, add, reduced_vars, terms)`` of Gaussians, Tensors and Numbers
    moment-matched: the real names of ``reduced_vars`` integrated and the Bint names a
    Gaussian depends on collapsed to one Gaussian per remaining assignment (the rule of
    ``moment_matching``, and the window of ``windowed_filter``). None where there is no
    mixture or a component has no moments.

    Example:
        >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> gaussian, log_weight = collapse_sum(frozenset("i"), (g,)).terms
        >>> float(gaussian.covariance[0, 0])
        2.0
    """
    # A structure met before runs its recorded program (``collapse_replay``); where that
    # declines, the general path below decides.
    replayed = replay_collapse(reduced_vars, terms, gram_collapse_plan)
    if replayed is not None:
        return replayed
    mixed = mixture_vars(reduced_vars, terms)
    if not mixed:
        return None
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    dense = [t for t in terms if not isinstance(t, Gaussian)]
    if len(gaussians) > 1 and would_compress(gaussians):  # their sum is compressed first
        gaussians, dense = split_gaussian_sum(gaussian_sum(*terms))
    if not gaussians:
        return None
    # Several Gaussians are aligned and concatenated inside the collapse (their sum,
    # uncompressed, is that concatenation): the joint is never built as a term. One QR per
    # component integrates the real names and gives the moments.
    return collapse_mixture(*collapse_args(reduced_vars, mixed, gaussians, dense))


def gram_collapse_plan(reduced_vars: frozenset, terms) -> tuple | None:
    """``(plan, gaussians)`` where ``collapse_sum(reduced_vars, terms)`` collapses several
    uncompressed Gaussians by their joint Gram matrix (``moments.collapse_planned_gram``):
    the layout ``moments.collapse_layout`` gives and the Gaussians in its order; None where
    it takes another path. Depends on the terms' structure only (what ``collapse_replay``
    records).

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> plan, gs = gram_collapse_plan(frozenset("i"), (g, g))
        >>> plan.n, len(gs)
        (2, 2)
    """
    mixed = mixture_vars(reduced_vars, terms)
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    if not mixed or len(gaussians) < 2 or would_compress(gaussians):
        return None
    dense = [t for t in terms if not isinstance(t, Gaussian)]
    gs, ds, names, real = collapse_args(reduced_vars, mixed, gaussians, dense)
    plan = collapse_layout(gs, ds, names, real)
    if plan is None or plan.rank < plan.dim:
        return None
    return plan, gs


def reduce_logaddexp_terms(reduced_vars: frozenset, terms) -> Funsor | None:
    """``Contraction(logaddexp, logaddexp, reduced_vars, terms)``: the terms are added in
    probability space, so the reduction distributes over them. A term lacking a Bint input of
    size ``n`` counts ``n`` times (``+ log n``); a term lacking a real one would integrate a
    constant over the real line (infinite, or the rule of the atom decides): None.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> r = reduce_logaddexp_terms(frozenset("x"), (g, g))  # log(2 sqrt(2 pi))
        >>> bool(np.isclose(r.data, np.log(2 * np.sqrt(2 * np.pi))))
        True
    """
    domains: dict = {}
    for t in terms:
        domains.update((k, d) for k, d in t.inputs.items() if k in reduced_vars)
    parts = []
    for t in terms:
        own = reduced_vars & t.inputs.keys()
        missing = reduced_vars - own
        if any(domains[v].dtype == "real" for v in missing):
            return None
        part = t.reduce(ops.logaddexp, own) if own else t
        count = math.prod(domains[v].size for v in missing)
        parts.append(part + math.log(count) if count != 1 else part)
    result = parts[0]
    for part in parts[1:]:
        result = ops.logaddexp(result, part)
    return result
