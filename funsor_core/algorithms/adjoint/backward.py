"""The backward rules of the adjoint: for each recorded term class, the messages that the
adjoint ``A`` of a term's output sends to its arguments.

Read ``A`` as "everything outside this term": in a semiring ``(sum_op, prod_op)``, the root
equals ``sum_op``-reducing ``prod_op(A, output)`` over the output's inputs. Each rule returns
``(argument, factors)`` pairs: the argument's share of the adjoint is the ``prod_op``
product of ``factors``, and the driver (``tape.py``) ``sum_op``-reduces it over the names
the argument does not have, in one planned contraction, and adds it (``sum_op``) to what the
argument already received. The rules, for ``S = sum_op`` and ``P = prod_op``:

- ``P(x, y)``: ``x`` receives ``P(A, y)`` and ``y`` receives ``P(A, x)`` (the product rule);
  ``S(x, y)``: both receive ``A``.
- ``S``-reduction of ``x`` over ``V``: ``x`` receives ``A``, wrapped in
  ``Approximate(S, A, P(A, x), V)``: the local posterior of ``V`` is the guide, so an
  approximating interpretation turns the message into a point mass at its mode (MAP), at a
  sample (posterior sampling), and ``exact`` leaves ``A`` (marginals).
- ``P``-reduction over a plate ``i``: ``x(i)`` receives ``A`` times the product of the other
  slices ``out / x(i)`` (safe division: a zero slice gets a zero message, whose marginal is
  zero anyway).
- ``Contraction(S, P, V, terms)``: each term receives ``Approximate(S, A, ..., V)`` times the
  product of the other terms (prefix and suffix products, so n terms cost O(n) products).
- ``Subs(x, {k: v})``: the transpose of a substitution, ``Scatter(S, {k: v}, A)``; a renaming
  renames back, and a real value ``v`` puts a point mass ``Delta(k, v)``.
- ``Scatter``, ``Cat``, ``Align`` and ``-x`` (linear ``(add, mul)`` only) as their transposes.
- ``MarkovProduct`` of a Gaussian chain in ``(logaddexp | max, add)``: step ``t`` receives the
  forward filter's message into its prev states plus the backward filter's message into its
  curr states, with the chain's adjoint as the boundaries (the Kalman smoother,
  ``chains.gaussian_smooth``). The tape runs other chains as their pairwise steps.

Example:
    >>> table = sorted(c.__name__ for c in BACKWARD)
    >>> "Contraction" in table and "Subs" in table
    True
"""

from __future__ import annotations

import itertools
import math

from funsor_core import ops
from funsor_core.algorithms.adjoint.scatter import Scatter
from funsor_core.algorithms.chains.gaussian_filter import boundary_arrays
from funsor_core.algorithms.chains.gaussian_scan import gaussian_chain_parts, gaussian_result
from funsor_core.algorithms.chains.gaussian_smooth import smooth_gaussian_chain
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import Align, Binary, Funsor, Number, Reduce, Subs, Unary, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.markov import MarkovProduct
from funsor_core.terms.reshaping import Cat, Slice

__all__ = ["BACKWARD", "Semiring", "arith_op", "check_batch_vars", "same_sum"]

_FRESH = itertools.count(1)


def arith_op(op):
    """The op that computes ``op``'s values: ``ops.sample`` computes as ``ops.logaddexp``.

    Example:
        >>> arith_op(ops.sample)
        ops.logaddexp
    """
    return ops.logaddexp if op is ops.sample else op


def same_sum(op, sum_op) -> bool:
    """Whether the forward reduction ``op`` is the semiring's sum (``sample`` and
    ``logaddexp`` reduce alike).

    Example:
        >>> same_sum(ops.logaddexp, ops.sample), same_sum(ops.add, ops.logaddexp)
        (True, False)
    """
    return op is sum_op or (arith_op(op) is ops.logaddexp and arith_op(sum_op) is ops.logaddexp)


class Semiring:
    """The ops of one backward pass and the names its messages keep: the root's inputs and
    the batch names. ``batch_vars`` may be a set that grows during the pass (a
    ``Precondition`` adds a noise input per step), so it is read at each use.

    Example:
        >>> ring = Semiring(ops.sample, ops.add, frozenset({"x"}), batch_vars={"particle"})
        >>> ring.arith, sorted(ring.keep)  # sampling computes as logaddexp
        (ops.logaddexp, ['particle', 'x'])
    """

    __slots__ = ("sum_op", "prod_op", "arith", "root_names", "batch_vars", "approximate")

    def __init__(self, sum_op, prod_op, root_names: frozenset, batch_vars=frozenset(),
                 approximate: bool = True) -> None:
        self.sum_op = sum_op
        self.prod_op = prod_op
        self.arith = arith_op(sum_op)
        self.root_names = root_names
        self.batch_vars = batch_vars
        self.approximate = approximate

    @property
    def keep(self) -> frozenset:
        if not self.batch_vars:
            return self.root_names
        return self.root_names | {getattr(v, "name", v) for v in self.batch_vars}


_BATCH_NAME_TAKEN = (
    "the sample (batch) input '{name}' is also a name that the forward computation eliminates "
    "(as {domain!r}): the draws would be indexed by it instead of crossed with it. Give the "
    "sample input a name of its own, e.g. '{name}_sample'.")


def check_batch_vars(terms, root: Funsor, batch_vars) -> None:
    """Raise ``ValueError`` where a batch name of a backward pass is also a name that the
    recorded ``terms`` eliminate (the root lacks it).

    Example:
        >>> x = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> check_batch_vars([x], x.reduce(ops.add), {"particle"})  # not taken: no error
    """
    # A batch name shared with a free input of the root is funsor's shared-particle idiom;
    # shared with an eliminated name (a plate, a summed variable) it silently merges the two.
    names = frozenset(getattr(v, "name", v) for v in batch_vars) - root.inputs.keys()
    if not names:
        return
    for term in terms:
        taken = names & term.inputs.keys()
        if taken:
            name = min(taken)
            raise ValueError(_BATCH_NAME_TAKEN.format(name=name, domain=term.inputs[name]))


def _unsupported(what: str, ring: Semiring) -> NotImplementedError:
    return NotImplementedError(
        f"the adjoint has no backward rule for {what} in the semiring "
        f"({ring.sum_op}, {ring.prod_op}); the forward computation may use sum_op and prod_op "
        "(and their reductions), substitution, Cat, Scatter and Align")


def _approximate(ring: Semiring, adj, terms, reduced_vars: frozenset):
    # The message to the terms of a reduction, with the local posterior P(A, terms...) as the
    # guide, built lazily (reflect): only an approximating interpretation evaluates it, and
    # none is built when no such interpretation is active (exact would return A itself).
    if not reduced_vars or not ring.approximate:
        return adj
    with reflect:
        guide = adj
        for t in terms:
            guide = Binary(ring.prod_op, guide, t)
    return Approximate(ring.sum_op, adj, guide, frozenset(
        Variable(k, d) for t in terms for k, d in t.inputs.items() if k in reduced_vars))


def backward_binary(ring: Semiring, adj, output, op, lhs, rhs):
    if op is ring.prod_op:
        return ((lhs, (adj, rhs)), (rhs, (adj, lhs)))
    if same_sum(op, ring.sum_op):
        return ((lhs, (adj,)), (rhs, (adj,)))
    if op is ops.sub and ring.sum_op is ops.add and ring.prod_op is ops.mul:
        return ((lhs, (adj,)), (rhs, (-adj,)))  # linear: d(x - y) = dx - dy
    raise _unsupported(f"Binary(ops.{op.name})", ring)


def backward_unary(ring: Semiring, adj, output, op, arg):
    if op is ops.neg and ring.sum_op is ops.add and ring.prod_op is ops.mul:
        return ((arg, (-adj,)),)
    raise _unsupported(f"Unary(ops.{op.name})", ring)


def _plate(ring: Semiring, adj, output, arg, plates: frozenset):
    # d/dx(i) prod_j x(j) = prod_{j != i} x(j) = out / x(i), with a safe division; a
    # Gaussian cannot be divided by (its precision would lose rows it never had as rows), so
    # its product over the other slices is formed directly (a leave-one-out product).
    if ring.prod_op is ops.mul and isinstance(arg, (Tensor, Number)):
        rest = ops.safediv(output, arg)
    elif ring.prod_op is ops.add and isinstance(arg, Tensor) and isinstance(output, Tensor):
        rest = _log_exclusive(output, arg)
    elif ring.prod_op is ops.add:
        rest = _leave_one_out(arg, plates)
    else:
        raise _unsupported(f"a {ring.prod_op}-product over a plate of a "
                           f"{type(arg).__name__}", ring)
    return ((arg, (adj, rest)),)


def _leave_one_out(arg, plates: frozenset):
    # sum_{j != i} x(j) in log space: rename the plates, mask the diagonal, sum.
    renamed = {p: f"{p}__other{next(_FRESH)}" for p in sorted(plates)}
    same = None
    proto = None
    for p, q in renamed.items():
        n = arg.inputs[p].size
        if proto is None:
            proto = _prototype_array(arg)
        eye = Tensor(ops.new_eye(proto, n), {p: arg.inputs[p], q: arg.inputs[p]})
        same = eye if same is None else same * eye
    others = arg(**renamed) * (1.0 - same)
    return others.reduce(ops.add, frozenset(renamed.values()))


def _prototype_array(term):
    # A floating array of the term, to build the mask on its backend.
    todo = [term]
    while todo:
        node = todo.pop()
        leaves, _ = type(node).tree_flatten(node)
        for leaf in leaves:
            if isinstance(leaf, Funsor):
                todo.append(leaf)
            elif hasattr(leaf, "dtype") and ops.is_floating(leaf):
                return leaf
    raise NotImplementedError(f"no real array in the {type(term).__name__} to build a mask on")


def _log_exclusive(output: Tensor, arg: Tensor) -> Tensor:
    # out - x(i) in log space, and -inf where x(i) = -inf (out is -inf there too, and a zero
    # factor's marginal is zero whatever its message; -inf - -inf would be nan, and warn).
    finite = ops.gt(arg.data, -math.inf)
    diff = output - Tensor(ops.where(finite, arg.data, ops.full_like(arg.data, 0.0)),
                           arg.inputs, arg.dtype)
    data = diff.data
    x = align_tensor(diff.inputs, arg, expand=True)
    data = ops.where(ops.gt(x, -math.inf), data, ops.full_like(data, -math.inf))
    return Tensor(data, diff.inputs, diff.dtype)


def backward_reduce(ring: Semiring, adj, output, op, arg, reduced_vars):
    if same_sum(op, ring.sum_op):
        return ((arg, (_approximate(ring, adj, (arg,), reduced_vars),)),)
    if op is ring.prod_op:
        return _plate(ring, adj, output, arg, reduced_vars)
    raise _unsupported(f"Reduce(ops.{op.name})", ring)


def backward_contraction(ring: Semiring, adj, output, red_op, bin_op, reduced_vars, terms):
    if bin_op is None or len(terms) == 1:
        (arg,) = terms
        if red_op is None or not reduced_vars:
            return ((arg, (adj,)),)
        return backward_reduce(ring, adj, output, red_op, arg, reduced_vars)
    if bin_op is ring.prod_op and (red_op is None or same_sum(red_op, ring.sum_op)):
        message = _approximate(ring, adj, terms, reduced_vars)
        return tuple((t, (message,) + others) for t, others in zip(terms, _others(terms)))
    if same_sum(bin_op, ring.sum_op) and (red_op is None or same_sum(red_op, ring.sum_op)):
        return tuple((t, (adj,)) for t in terms)  # a sum is linear in each term
    raise _unsupported(f"Contraction({red_op}, {bin_op})", ring)


def _others(terms: tuple) -> list:
    # For each term, the other terms as a tuple of factors (the driver multiplies them in
    # its planned contraction, so no product of the others is formed here).
    return [terms[:k] + terms[k + 1:] for k in range(len(terms))]


def backward_align(ring: Semiring, adj, output, arg, names):
    return ((arg, (adj,)),)


def backward_cat(ring: Semiring, adj, output, name, parts, part_name):
    if name not in adj.inputs:
        return tuple((p, (adj,)) for p in parts)
    size = output.inputs[name].size
    out, start = [], 0
    for p in parts:
        stop = start + p.inputs[part_name].size
        out.append((p, (adj(**{name: Slice(part_name, start, stop, 1, size)}),)))
        start = stop
    return tuple(out)


def backward_scatter(ring: Semiring, adj, output, op, subs, source, reduced_vars):
    return ((source, (adj(**dict(subs)),)),)


def backward_subs(ring: Semiring, adj, output, arg, subs):
    # The transpose of arg(k = v): arg's message at k is the S-sum of A over the points where
    # v equals k. A key that is still a name of the output (v mentions k, as in a time index
    # x(t = 2 t)) is scattered under a fresh name first, then renamed back.
    arg_names = {k for k, _ in subs}
    points, renames, scatter, relabel = [], {}, [], {}
    for k, v in subs:
        domain = arg.inputs[k]
        if (type(v) is Variable and v.output is domain and v.name not in arg.inputs
                and v.name not in renames and v.name not in arg_names
                and k not in adj.inputs):
            renames[v.name] = Variable(k, domain)  # the transpose of a renaming renames back
        elif domain.dtype == "real" and ring.arith in (ops.logaddexp, ops.max):
            points.append((k, v))  # the transpose of conditioning: a point mass at v
        else:
            fresh = f"{k}__adj{next(_FRESH)}" if k in output.inputs or k in adj.inputs else k
            relabel[fresh] = k
            scatter.append((fresh, v))
    message = adj(**renames) if renames else adj
    if scatter and not points:
        lazy = _lazy_scatter(ring, arg, arg_names, scatter, relabel, message)
        if lazy is not None:
            return ((arg, (lazy,)),)
    if scatter:
        kept = (set(arg.inputs) - arg_names) | ring.keep
        names = set(message.inputs)
        for _, v in scatter:
            names.update(v.inputs)
        reduced = frozenset(names - kept - set(relabel))
        message = Scatter(ring.arith, tuple(scatter), message, reduced)
        back = {f: Variable(k, arg.inputs[k]) for f, k in relabel.items() if f != k}
        if back:
            message = message(**back)
    factors = (message,)
    if points:
        factors = factors + (Delta(tuple((k, v) for k, v in points)),)
    return ((arg, factors),)


def _lazy_scatter(ring: Semiring, arg, arg_names, scatter, relabel, message):
    # The message as one Scatter built lazily (reflect), keyed by arg's own names: a name of
    # the message or of an index value that is also a key is renamed apart in them first
    # (instead of scattering under a fresh key and renaming that back). The driver evaluates
    # it through the interpreter, or accumulates it into the argument's adjoint
    # (``logaddexp(t, Scatter(...))`` updates ``t`` where the message lands). None when a
    # key is also a kept name of the message (the general path renames the key back then).
    kept = (set(arg.inputs) - arg_names) | ring.keep
    apart = {k: f"{k}__adj{next(_FRESH)}" for f, k in relabel.items() if f != k}
    if set(apart) & kept:
        return None
    if apart:
        message = message(**{k: n for k, n in apart.items() if k in message.inputs})
    pairs, names = [], set(message.inputs)
    for fresh, v in scatter:
        if apart and set(apart) & set(v.inputs):
            if type(v) is Tensor:  # an index array: relabelled as it is
                v = Tensor.make(v.data, {apart.get(n, n): d for n, d in v.inputs.items()},
                                v.dtype)
            else:
                v = v(**{k: n for k, n in apart.items() if k in v.inputs})
        pairs.append((relabel[fresh], v))
        names.update(v.inputs)
    with reflect:
        return Scatter(ring.arith, tuple(pairs), message, frozenset(names - kept))


def backward_markov_product(ring: Semiring, adj, output, sum_op, prod_op, trans, time, step,
                            step_names, strategy):
    chain = None
    if (ring.arith in (ops.logaddexp, ops.max) and not ring.approximate
            and prod_op is ring.prod_op and same_sum(sum_op, ring.sum_op)):
        # The arrays of the chain's steps, whatever the semiring that composes them.
        chain = gaussian_chain_parts(ops.logaddexp, prod_op, trans, time, step)
    if chain is None and ring.approximate and ring.arith in (ops.logaddexp, ops.max):
        real = sorted(n for n, d in trans.inputs.items() if d.dtype == "real")
        if real:  # a Gaussian chain: its messages are smoothed, not approximated
            raise NotImplementedError(
                f"the adjoint of a Gaussian MarkovProduct (real inputs {real}) has no rule "
                f"under an approximating interpretation (argmax_approximate, "
                f"PosteriorSample, ...): run forward_backward without it, and read the "
                f"smoothed marginals (logaddexp) or max-marginals (max, whose means are the "
                f"MAP path) with fc.moments(adjoints[step] + step - value)")
    if chain is None or chain.power is not None:
        raise _unsupported("this MarkovProduct (the adjoint smooths chains of Tensors, and "
                           "Gaussian chains over real step pairs with a time input in "
                           "(logaddexp, add) or (max, add))", ring)
    free = dict(p for pair in zip(step, step_names) for p in zip(*pair))
    prevs, currs = [p for p, _ in step], [c for _, c in step]
    glob = {n: d for n, d in chain.reals.items() if n not in free}
    first = {free[n]: chain.reals[n] for n in prevs}
    last = {free[n]: chain.reals[n] for n in currs}
    left, right, const = _split_boundaries(ring, adj, set(first), set(last), set(glob),
                                           chain.batch)
    proto = chain.w
    left = boundary_arrays(left, {**chain.batch, **glob, **first}, proto, 0)
    right = boundary_arrays(right, {**chain.batch, **last, **glob}, proto, 0)
    w, s, k = smooth_gaussian_chain(chain, left, right, strategy, ring.arith is ops.max)
    for t in const:
        k = ops.add(k, align_tensor(chain.batch, t, expand=True) if type(t) is Tensor
                    else t.data)
    message = gaussian_result(w, s, k, {time.name: time.output, **chain.batch}, chain.reals)
    return ((trans, (message,)),)


def _split_boundaries(ring: Semiring, adj, first: set, last: set, glob: set, batch: dict):
    # The chain's adjoint as a sum of Gaussians over its first states (and globals), of
    # Gaussians over its last states, and of constants over the batch inputs. One factor
    # over both ends would need the chain composed from every step to both ends (a matrix
    # per step, not a filter): that raises.
    terms = adj.terms if (type(adj) is Contraction and adj.red_op is None
                          and adj.bin_op is ops.add) else (adj,)
    left, right, const = [], [], []
    for t in terms:
        reals = {n for n, d in t.inputs.items() if d.dtype == "real"}
        bints = set(t.inputs) - reals
        if type(t) in (Tensor, Number) and not reals and bints <= set(batch):
            const.append(t)
        elif type(t) is Gaussian and bints <= set(batch) and reals <= first | glob:
            left.append(t)
        elif type(t) is Gaussian and bints <= set(batch) and reals <= last | glob:
            right.append(t)
        else:
            raise _unsupported(
                f"a Gaussian MarkovProduct whose adjoint has a {type(t).__name__} over "
                f"{sorted(t.inputs)} (a smoother needs factors of the first states "
                f"{sorted(first)} apart from those of the last states {sorted(last)}, and "
                f"only the chain's batch inputs {sorted(batch)})", ring)
    return left, right, const


# The backward rule of each recorded term class. The tape records exactly these classes; any
# other term is evaluated through (its subterms, if built through the interpreter, are seen).
BACKWARD = {
    Binary: backward_binary,
    Unary: backward_unary,
    Reduce: backward_reduce,
    Contraction: backward_contraction,
    Subs: backward_subs,
    Scatter: backward_scatter,
    Cat: backward_cat,
    Align: backward_align,
    MarkovProduct: backward_markov_product,
}
