"""The adjoint tape: record one forward computation, then run it backwards in a semiring.

``AdjointTape`` is a stateful interpretation that wraps construction: entered (``with
AdjointTape() as tape:``) above any interpretation, it lets that interpretation evaluate every
term and records the terms whose adjoints it knows (sums, products and their reductions,
contractions, substitutions, ``Cat``, ``Scatter``, ``Align``: ``backward.BACKWARD``). A
``Contraction`` of more than two terms is run along its contraction plan
(``algorithms.plan``), so that each pairwise step is recorded and the backward pass sends
messages through the same small intermediates as the forward pass (variable elimination both
ways). A ``(logaddexp, add)`` chain of one step Tensor is evaluated by its kernel, and its
exact messages computed on arrays (``chain_arrays``); another Markov product of Tensors is
run as its pairwise contractions, on a tape of its own kept with the chain (exact messages
run back through it; points, the MAP or posterior paths, are placed along the whole path at
once by ``chain_paths``); a switching chain (a discrete step pair beside real ones) runs as
its T steps in order on such a tape, so that the rules of its steps apply, and the messages
of its steps are stacked back along time; any other ``MarkovProduct`` is recorded whole,
and its backward rule is the Kalman smoother of a Gaussian chain (``chains.gaussian_smooth``).
A term without a backward rule that a rule computed on arrays from recorded values or atoms
(a ``Stack``, say) is recorded too: the adjoints behind it are unknown, and reading one
raises ``NotImplementedError`` naming it (instead of a silent zero), as the adjoint of a
factor of an expression given already evaluated raises ``NotOnTapeError``. A term without a
backward rule that evaluates into recorded terms (a distribution into Gaussian algebra) or
into a constant is known by the term as written too, and so are the terms built on it (a
chain's step written with distributions); a term of the expression the tape recorded under
no form raises ``NotOnTapeError`` (``Adjoints``). The tape is just another interpretation:
nothing changes when none is active.

``tape.adjoint(sum_op, prod_op, root)`` then walks the record backwards from ``root``: each
recorded term passes its adjoint to its arguments by its backward rule, and an argument's
share is ``sum_op``-reduced over the names it lacks in one planned contraction. In the
semiring ``(logaddexp, add)`` the adjoint of a factor ``f`` times ``f`` is the unnormalized
log marginal of ``f``'s inputs (``root`` minus it is normalized); in ``(max, add)`` it is the
max-marginal; in ``(add, mul)`` of a linear map it is the transpose. Under an approximating
interpretation (``argmax_approximate``, posterior sampling) the same pass gives point masses
at the MAP assignment or at posterior samples.

Example:
    >>> from interpretations import lazy
    >>> x = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
    >>> with lazy:
    ...     z = x.reduce(ops.logaddexp, "i")
    >>> log_z, adjoints = forward_backward(ops.logaddexp, ops.add, z)
    >>> marginal = (adjoints[x] + x - log_z).exp()  # the posterior p(i)
    >>> np.allclose(marginal.data, np.exp([0.0, 1.0]) / np.exp([0.0, 1.0]).sum())
    True
"""

from __future__ import annotations

from typing import Any

from funsor_core import ops
from funsor_core.algorithms.adjoint.adjoints import Adjoints, canonical_key
from funsor_core.algorithms.adjoint.backward import BACKWARD, Semiring, check_batch_vars
from funsor_core.algorithms.adjoint.chain_arrays import chain_array_shares, has_array_backward
from funsor_core.algorithms.adjoint.chain_paths import chain_path_shares
from funsor_core.algorithms.adjoint.kinds import PosteriorSample, approximation_active
from funsor_core.algorithms.adjoint.points import eliminate_points
from funsor_core.algorithms.adjoint.scatter import Scatter
from funsor_core.algorithms.chains.discrete_plan import tensor_factors
from funsor_core.algorithms.chains.evaluate import markov_terms
from funsor_core.algorithms.contract.plan import plan_terms
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.interpreter import ENTERED, Interpretation, build, get_interpretation
from funsor_core.engine.protocol import terms_in
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.markov import MarkovProduct
from funsor_core.terms.reshaping import Stack
from funsor_core.terms.traversal import map_args, reinterpret

__all__ = ["AdjointTape", "Adjoints", "adjoint", "canonical_key", "forward_backward"]
_LATER = "steps later"  # the sub of a chain evaluated by its kernel (_run_steps)


class _Node:
    """One recorded term: its value, class and arguments, the tape position of the node that
    produced each funsor argument (None: a leaf), and its lazy form (for lookups)."""

    __slots__ = ("output", "cls", "args", "parents", "lazy", "aliases", "sub", "written")

    def __init__(self, output, cls, args, parents, lazy, sub=None) -> None:
        self.output = output
        self.cls = cls
        self.args = args
        self.parents = parents
        self.lazy = lazy
        self.aliases: list = []
        self.sub = sub  # a chain's own tape of its pairwise steps
        self.written = lazy  # the form later lazy forms name it by (the user's term)


def _planned(args: tuple) -> bool:
    # A reduction of a product of more than two terms that distributes (for every sign of the
    # terms): run it as the pairwise steps of its plan.
    red_op, bin_op, reduced_vars, terms = args
    if len(terms) <= 2 or red_op is None or bin_op is None or not reduced_vars:
        return False
    pair = (red_op, bin_op)
    return pair in ops.DISTRIBUTIVE_OPS and pair not in ops.NONNEGATIVE_DISTRIBUTIVE_OPS


class AdjointTape(Interpretation):
    """Records a forward computation for a backward pass (funsor's ``AdjointTape``).

    Enter it above the interpretation that should evaluate (``exact`` by default); the
    ``tape`` attribute lists the recorded terms. Each ``with`` block starts a new record.

    Example:
        >>> x = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> y = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})
        >>> with AdjointTape() as tape:
        ...     z = (x * y).reduce(ops.add, "j")
        >>> adj = tape.adjoint(ops.add, ops.mul, z, (x, y))
        >>> adj[x] is y, adj[y] is x  # z(i) = sum_j x(i, j) y(j) is linear in each
        (True, True)
    """

    stateful = True

    def __init__(self) -> None:
        super().__init__("adjoint_tape", fallback=ENTERED)
        self.tape: list = []
        self._producer: dict = {}
        self._forms: dict = {}  # canonical key of a term as written -> that of its leaf value
        self._form_of: dict = {}  # canonical key of a leaf value -> its written form (or None)
        self._lazies: set = set()
        self._shared: set = set()

    def __enter__(self) -> AdjointTape:
        self.tape, self._producer, self._forms, self._form_of = [], {}, {}, {}
        self._lazies, self._shared = set(), set()  # recorded lazy forms; forms of two nodes
        return super().__enter__()

    # -- recording ------------------------------------------------------------------------------
    def interpret(self, cls: type, args: tuple) -> Any:
        if cls is Contraction and _planned(args):
            red_op, bin_op, reduced_vars, terms = args
            # Each pairwise step is built through the interpreter, so this tape records it.
            result = plan_terms(terms, reduced_vars).run_terms(red_op, bin_op, reduced_vars,
                                                               terms)
            node = self._producer.get(canonical_key(result))
            if node is not None:
                self.tape[node].aliases.append(build(cls, map_args(args, self._lazy_of)))
            return result
        if cls is MarkovProduct:
            steps = _chain_steps(args)
            if steps is not None:
                # A discrete chain is run as its pairwise contractions (a parallel scan, or
                # a left fold for a sequential chain), a switching chain as its T steps in
                # order, each built through the interpreter and recorded on a tape of its
                # own, kept with the chain's node: exact messages run back through the same
                # steps, and points (MAP, samples) of a discrete chain are placed along the
                # whole path at once (``chain_paths``). A Gaussian chain is recorded whole:
                # its backward rule is the Kalman smoother.
                result, sub = _run_steps(self, args, steps)
                if sub is not None:
                    self._record(result, cls, args, sub)
                    return result
        if cls not in BACKWARD:
            first = len(self.tape)
            result = self.defer(cls, args)
            if self._opaque(result, args):
                self._record(result, cls, args)  # no backward rule: reading past it raises
            else:
                self._rewritten(result, cls, args, first)
            return result
        # Evaluate below the tape: the rules' own intermediate terms are not recorded.
        with self.rest():
            result = self.defer(cls, args)
        self._record(result, cls, args)
        return result

    def _opaque(self, result, args: tuple) -> bool:
        # A term without a backward rule whose value was computed on arrays (not by recorded
        # terms) from recorded values or atoms: the adjoint cannot pass it to them.
        if not isinstance(result, Funsor) or canonical_key(result) in self._producer:
            return False
        return any(canonical_key(f) in self._producer or (type(f)._atom and type(f) is not Number)
                   for f in terms_in(args))

    def _rewritten(self, result, cls: type, args: tuple, first: int) -> None:
        # A term without a backward rule that evaluated into recorded terms (a distribution
        # into a Gaussian substituted and shifted, say): their node is also known by the term
        # as written, and later lazy forms name it, so that the user's terms built from it (a
        # chain's step) find their adjoints. One that evaluated to a constant (a density of
        # constants) names that leaf, unless another written term gave the same constant
        # (the tape merges their adjoints: None, and looking either up raises).
        if cls._atom or not isinstance(result, Funsor) or type(result) is Variable:
            return
        value = canonical_key(result)
        node = self._producer.get(value)
        if node is not None and node < first:
            return  # an earlier value passed through: not named (looking it up raises)
        written = build(cls, map_args(args, self._lazy_of))
        if node is not None:
            self.tape[node].aliases.append(written)
            self.tape[node].written = written
            return
        form = canonical_key(written)
        self._forms[form] = value
        known = self._form_of.get(value, written)
        self._form_of[value] = written if known is written or canonical_key(known) == form else None

    def _lazy_of(self, x: Funsor) -> Funsor:
        key = canonical_key(x)
        node = self._producer.get(key)
        if node is not None:
            return self.tape[node].written
        form = self._form_of.get(key)
        return x if form is None else form

    def _record(self, result, cls: type, args: tuple, sub=None) -> None:
        value = canonical_key(result)
        keys = {id(f): canonical_key(f) for f in terms_in(args)}
        if value in keys.values():
            return  # passes an argument through (x * 1 = x): that value keeps its own form
        parents = {i: self._producer.get(key) for i, key in keys.items()}
        lazy = build(cls, map_args(args, self._lazy_of))
        form = canonical_key(lazy)
        if value in self._producer or form in self._lazies:
            # One value computed in two places: the adjoints of the two are merged under
            # these keys, so neither names its own (looking either up raises).
            self._shared.update((value, form))
        self._lazies.add(form)
        self._producer[value] = len(self.tape)
        self.tape.append(_Node(result, cls, args, parents, lazy, sub))

    # -- the backward pass ----------------------------------------------------------------------
    def adjoint(self, sum_op, prod_op, root: Funsor, targets=None, *,
                batch_vars=frozenset(), approximate: bool | None = None) -> dict:
        """The adjoint of every recorded term (and leaf) from ``root`` backwards, in the
        semiring ``(sum_op, prod_op)``.

        Args:
            sum_op, prod_op: the semiring: ``(ops.logaddexp, ops.add)`` for marginals,
                ``(ops.max, ops.add)`` for max-marginals (and MAP under
                ``argmax_approximate``), ``(ops.add, ops.mul)`` for transposes,
                ``(ops.sample, ops.add)`` for posterior samples (see ``forward_backward``).
            root: the result of the recorded forward computation.
            targets: funsors whose adjoints to return (all when None).
            batch_vars: names (or Variables) that messages keep instead of reducing, as the
                inputs of ``root`` are kept (e.g. a particle input of samples).
            approximate: whether messages to eliminated names become ``Approximate`` terms
                (points, samples); None: when an approximating interpretation (Monte Carlo,
                ``argmax_approximate``, ...) is active. False gives exact messages
                (marginals) under any interpretation.

        Returns:
            A dict from funsors (the leaves and the lazy forms of the recorded terms, as the
            terms were written, and the recorded values themselves) to their adjoints; a
            funsor that received nothing maps to the unit of ``sum_op`` (a ``defaultdict``).
        """
        _check_root("AdjointTape.adjoint", root)
        approximate = approximation_active() if approximate is None else approximate
        drawn = getattr(get_interpretation(), "sample_vars", None) if approximate else None
        if drawn:
            # The draws of a sampling interpretation (PosteriorSample, MonteCarlo) index its
            # sample inputs; a backward message that summed them out would be neither the
            # samples nor the marginals, so they are always kept as batch inputs.
            batch_vars = frozenset(batch_vars) | drawn
        if batch_vars:
            check_batch_vars((t for n in self.tape for t in (n.output, *terms_in(n.args))),
                             root, batch_vars)
        zero = Number(ops.UNITS[sum_op])
        one = Number(ops.UNITS[prod_op])
        ring = Semiring(sum_op, prod_op, frozenset(root.inputs), batch_vars,
                        approximate=approximate)
        start = self._producer.get(canonical_key(root))
        node_adj, leaf_adj, blocked_nodes, blocked_leaves = self._backward(
            ring, root, -1 if start is None else start, one)
        result = Adjoints(zero)
        result._tape = self
        if self._shared:
            result._shared = set(self._shared)
        if self._forms:
            result._forms = {form: value for form, value in self._forms.items()
                             if self._form_of[value] is not None}
        for index, blocked in blocked_nodes.items():
            node = self.tape[index]
            for key in (node.lazy, node.output, *node.aliases):
                result.block(canonical_key(key), blocked, ring)
        for key, blocked in blocked_leaves.items():
            result.block(key, blocked, ring)
        for leaf, adj in leaf_adj.values():
            result.add(leaf, _evaluate(adj), ring.arith)
        for index, adj in node_adj.items():
            adj = _evaluate(adj)
            node = self.tape[index]
            keys = {canonical_key(k): k for k in (node.lazy, node.output, *node.aliases)}
            for key in keys.values():
                result.add(key, adj, ring.arith)
        if targets is None:
            return result
        return {target: result[target] for target in targets}

    def _backward(self, ring: Semiring, root: Funsor, start: int, seed: Funsor) -> tuple:
        """Run the record backwards from node ``start`` (-1: ``root`` is a leaf), whose
        adjoint is ``seed``: ``(node_adj, leaf_adj, blocked_nodes, blocked_leaves)``."""
        # A share stays a lazy Scatter (from backward_subs) until read, so that a second one
        # for the same argument is written into the same array (``_accumulate``).
        node_adj: dict = {}
        leaf_adj: dict = {}  # canonical key -> [leaf, adjoint]
        if start < 0:
            leaf_adj[canonical_key(root)] = [root, seed]
        else:
            node_adj[start] = seed
        # What lies behind a term without a backward rule (that received an adjoint): the
        # names of those terms, by node index and by leaf key.
        blocked_nodes: dict = {}
        blocked_leaves: dict = {}
        for index in range(start, -1, -1):
            node = self.tape[index]
            adj = node_adj.get(index)
            rule = BACKWARD.get(node.cls)
            blocked = blocked_nodes.get(index) or (
                node.cls.__name__ if rule is None and adj is not None else None)
            if blocked:
                for arg in terms_in(node.args):
                    parent = node.parents.get(id(arg))
                    if parent is None:
                        blocked_leaves[canonical_key(arg)] = blocked
                    else:
                        blocked_nodes[parent] = blocked
            if adj is None or rule is None:
                continue  # not on a path to the root: its adjoint is zero
            adj = node_adj[index] = _evaluate(adj)
            shares = (_chain_shares(ring, adj, node) if node.sub is not None
                      else rule(ring, adj, node.output, *node.args))
            for arg, factors in shares:
                share = _contract(ring, arg, factors)
                parent = node.parents.get(id(arg))
                if parent is None and node.sub is not None:
                    parent = self._producer.get(canonical_key(arg))
                if parent is None:
                    entry = leaf_adj.get(canonical_key(arg))
                    if entry is None:
                        leaf_adj[canonical_key(arg)] = [arg, share]
                    else:
                        entry[1] = _accumulate(ring, entry[1], share)
                else:
                    old = node_adj.get(parent)
                    node_adj[parent] = share if old is None else _accumulate(ring, old, share)
        return node_adj, leaf_adj, blocked_nodes, blocked_leaves


def _chain_steps(args: tuple):
    # The strategy by which the tape runs a chain as its steps: a discrete chain by its own;
    # a chain with a discrete step pair and other factors (a switching linear dynamical
    # system, whose Gaussian smoother would need every switch path) as its T steps in order
    # (the generic fallback: any backward rule then applies to each step). None: a Gaussian
    # chain, recorded whole.
    sum_op, prod_op, trans, time, step, step_names, strategy = args
    if tensor_factors(trans, prod_op) is not None:
        return "auto" if strategy is None else strategy
    if any(trans.inputs[p].dtype != "real" for p, _ in step if p in trans.inputs):
        return "sequential"
    return None


def _run_steps(tape: AdjointTape, args: tuple, strategy) -> tuple:
    # (result, its tape) of the chain run as its steps below ``tape``; (None, None) where a
    # switching chain's steps cannot be composed apart from its boundaries (moment matching
    # a mixture over a state that only a boundary informs): the chain is then recorded
    # whole, and its backward pass raises naming it.
    if has_array_backward(args) or (approximation_active()
                                    and tensor_factors(args[2], args[1]) is not None):
        # Its exact messages on arrays (chain_arrays) and points along it (chain_paths) need
        # its value only; a tape of steps when another semiring asks for one.
        with tape.rest():
            return tape.defer(MarkovProduct, args), _LATER
    sub = AdjointTape()
    try:
        with tape.rest(), sub:
            return markov_terms(*args[:6], strategy), sub
    except (ValueError, NotImplementedError):
        if tensor_factors(args[2], args[1]) is not None:
            raise
        return None, None


def _chain_shares(ring: Semiring, adj: Funsor, node: _Node) -> list:
    # A discrete chain: under an approximation, points along its whole path at once
    # (``chain_paths``: its pairwise steps would give each step's points apart, in messages
    # that no Scatter over time can stack); else its exact messages on arrays
    # (``chain_arrays``) or through its own tape of pairwise steps, seeded with its adjoint.
    shares = (chain_path_shares if ring.approximate else chain_array_shares)(
        ring, adj, node.output, *node.args)
    if shares is not None:
        return shares
    if node.sub is _LATER:
        with AdjointTape() as node.sub:
            markov_terms(*node.args[:6], _chain_steps(node.args))
        node.sub._producer.setdefault(canonical_key(node.output), len(node.sub.tape) - 1)
    sub = node.sub
    start = sub._producer.get(canonical_key(node.output))
    try:
        _, leaf_adj, _, _ = sub._backward(ring, node.output, -1 if start is None else start,
                                          adj)
        return [(leaf, (_evaluate(share),)) for leaf, share in leaf_adj.values()]
    except (ValueError, NotImplementedError) as e:
        if tensor_factors(node.args[2], node.args[1]) is not None:
            raise
        # e.g. moment matching a backward message, a likelihood that is no density
        raise NotImplementedError(
            f"the adjoint cannot run back through this switching MarkovProduct over "
            f"'{node.args[3].name}' with step {dict(node.args[4])} as its steps: {e}") from e


def _evaluate(share: Funsor) -> Funsor:
    # A transposed substitution comes as a Scatter built lazily (``backward_subs``): built
    # through the interpreter here, where the message is the argument's first share.
    if type(share) is Scatter:
        return Scatter(*share._args)
    if type(share) is Contraction and share.red_op is None and len(share.terms) > 1:
        stacked = _stacked(share)
        if stacked is not None:
            return stacked
    return share


def _stacked(share: Contraction):
    # The sum_op of Scatters of one message per index of a name (the steps of a chain run
    # as its steps, each a Gaussian, say, that no array Scatter writes into): each is its
    # source at its index and the unit of sum_op elsewhere, so together they are the Stack
    # of the sources along the name. None unless they cover the name's values once each.
    # A part that lacks an input is constant along it (Stack broadcasts it).
    parts: dict = {}
    name = None
    for t in share.terms:
        if type(t) is not Scatter or t.op is not share.bin_op or t.reduced_vars:
            return None
        if len(t.subs) != 1 or type(t.subs[0][1]) is not Number:
            return None
        key, index = t.subs[0]
        if name not in (None, key) or key in t.source.inputs:
            return None
        name = key
        parts[index.data] = t.source
    size = share.terms[0].subs[0][1].dtype
    if not isinstance(size, int) or sorted(parts) != list(range(size)):
        return None
    stacked = Stack(name, tuple(parts[k] for k in range(size)))
    return None if type(stacked) is Stack else stacked  # no rule: keep the Scatters


def _accumulate(ring: Semiring, old: Funsor, share: Funsor) -> Funsor:
    # sum_op of a share into what the argument received. A lazy Scatter meets a Tensor in
    # ``sum_op(old, Scatter(...))``, whose rule updates the points it lands on (exact).
    # Two lazy Scatters meet in ``sum_op(Scatter, Scatter)``, written into one array.
    if type(share) is Scatter:
        if type(share.source) is not Tensor or not (
                type(old) is Tensor or type(old) is Scatter and type(old.source) is Tensor):
            share = Scatter(*share._args)
    if type(old) is Scatter and type(share) is not Scatter:
        old = Scatter(*old._args)
    return ring.arith(old, share)


def _contract(ring: Semiring, arg: Funsor, factors: tuple) -> Funsor:
    # prod_op of the factors, sum_op-reduced over the names that the argument lacks and the
    # pass does not keep: one Contraction, which exact plans as a semiring einsum.
    unit = ops.UNITS[ring.prod_op]
    flat: list = []
    for f in factors:  # splice products in (a message with point masses is a sum of terms)
        if (type(f) is Contraction and f.red_op is None and f.bin_op is ring.prod_op):
            flat.extend(f.terms)
        else:
            flat.append(f)
    factors = tuple(flat)
    kept = tuple(f for f in factors if not (type(f) is Number and f.data == unit))
    if any(type(f) is not Number for f in kept):
        factors = kept  # a unit factor changes nothing (and keeps `adj[x] is y` exact)
    names = set()
    for f in factors:
        names.update(f.inputs)
    reduced = frozenset(names - set(arg.inputs) - ring.keep)
    if reduced and ring.prod_op is ops.add and any(type(f) is Delta for f in factors):
        factors, reduced = eliminate_points(factors, reduced)
    if len(factors) == 1:
        (f,) = factors
        return f.reduce(ring.arith, reduced) if reduced else f
    return Contraction(ring.arith if reduced else None, ring.prod_op, reduced, factors)


def _check_root(what: str, expr) -> None:
    if not isinstance(expr, Funsor):
        raise TypeError(f"{what}: the expression must be a funsor (usually lazy, e.g. a "
                        f"sum_product built under `with lazy:`), got {type(expr).__name__}; "
                        "wrap an array first, e.g. fc.Tensor(data, {'i': fc.Bint[n]})")


def forward_backward(sum_op, prod_op, expr: Funsor, batch_vars=frozenset(), *,
                     rng_key=None, sample_inputs=None, approximate: bool | None = None) -> tuple:
    """Evaluate ``expr`` on a tape, then run the backward pass: ``(value, adjoints)``.

    ``expr`` is usually lazy (built under ``lazy`` or ``reflect``, e.g. a ``sum_product``
    or ``einsum``); it is evaluated by the active interpretation. ``adjoints`` maps the
    leaves and subterms of ``expr`` to their adjoints (see ``AdjointTape.adjoint``).

    Args:
        sum_op, prod_op: the semiring: ``(ops.logaddexp, ops.add)`` gives marginals
            (``adjoints[f] + f - value`` is the log marginal of a factor ``f``),
            ``(ops.max, ops.add)`` max-marginals, and under ``argmax_approximate`` a MAP
            assignment (point masses in the adjoints); under a sampling interpretation
            (``PosteriorSample``, Monte Carlo) posterior samples.
        expr: the forward computation.
        batch_vars: names or Variables the backward messages keep (sample particles).
        rng_key, sample_inputs: for ``sum_op=ops.sample``: the backward pass draws posterior
            samples (``PosteriorSample(rng_key, **sample_inputs)``); the sample inputs
            (e.g. ``{"particle": Bint[100]}``) are kept as batch inputs.
        approximate: False for exact messages (marginals) even under an approximating
            interpretation; None decides by the active one (see ``AdjointTape.adjoint``).

    Example:
        >>> from interpretations import lazy
        >>> f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])), {"a": fc.Bint[2],
        ...                                                              "b": fc.Bint[2]})
        >>> with lazy:
        ...     z = f.reduce(ops.logaddexp, frozenset({"a", "b"}))
        >>> value, adj = forward_backward(ops.logaddexp, ops.add, z)
        >>> np.exp((adj[f] + f - value).data)  # p(a, b)
        array([[0.1, 0.2],
               [0.3, 0.4]])
    """
    _check_root("forward_backward", expr)
    with AdjointTape() as tape:
        forward = reinterpret(expr)
    if sum_op is not ops.sample or (rng_key is None and sample_inputs is None and isinstance(
            get_interpretation(), PosteriorSample)):
        adj = tape.adjoint(sum_op, prod_op, forward, batch_vars=batch_vars,
                           approximate=approximate)
    else:  # the sampling semiring: marginalize forward, draw backward
        with PosteriorSample(rng_key, **(sample_inputs or {})) as sampler:
            adj = tape.adjoint(sum_op, prod_op, forward,
                               batch_vars=frozenset(batch_vars) | sampler.sample_vars)
    evaluated = type(expr)._atom and not isinstance(expr, Variable)  # d x / d y = 0 stays
    adj._unrecorded = type(expr).__name__ if evaluated else ""
    adj._expr = expr
    return forward, adj


def adjoint(sum_op, prod_op, expr: Funsor, batch_vars=frozenset()) -> dict:
    """The adjoints of the leaves and subterms of ``expr`` (``forward_backward`` without the
    forward value), as funsor's ``funsor.adjoint.adjoint``.

    Example:
        >>> from interpretations import lazy
        >>> x = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
        >>> with lazy:
        ...     y = x + x
        >>> adjoint(ops.add, ops.mul, y)[x]  # the transpose of y = 2 x
        Number(2.0, 'real')
    """
    return forward_backward(sum_op, prod_op, expr, batch_vars)[1]

