"""Forward filtering of a Markov chain with a window of exact discrete states.

``windowed_filter(sum_op, prod_op, trans, time, step, init, window)`` folds the factors of a
chain ``trans(time, prev, curr)`` into a forward message, starting from ``init`` over the
first state's prev names. Real state names are summed at every step. A discrete (Bint) state
is kept as an input of the message for ``window`` steps (the message depends on the last
``window`` discrete states) and summed when it leaves the window.

Under ``exact`` with Tensor factors this is the forward algorithm (the window changes the
cost, not the value). With discrete and Gaussian factors (a switching linear dynamical
system) summing a switch state out of a Gaussian gives a mixture, which ``exact`` alone would
keep lazy (its components multiply with every step); the filter collapses each such sum to
one Gaussian per assignment of the states still in the window by matching moments, under
``exact`` as under ``moment_matching`` (whose rule does it first): window 1 is the
generalized pseudo-Bayes filter GPB2 (``method="imm"`` gives the interacting multiple model
filter instead, which mixes before predicting: ``filter.imm``), and a window of all the chain's
states (``T``, counting the first) is exact enumeration of the ``K^T`` switch paths (the final
collapse keeps the total mass). A step costs ``O(K^(window + 1))`` Gaussian operations for
``K`` switch values, so the filter is ``O(T K^(window + 1))``.

Under ``moment_matching`` the steps whose structure repeats run on arrays, the layout of the
collapse planned once (``filter.fused``); on a compiling backend they run as one compiled
scan, the backend's ``scan`` under its ``jit`` (``filter.fused_scan``), so that under
``jax.jit`` the program does not grow with the chain.

Example:
    >>> import funsor_core as fc
    >>> t = fc.Tensor(np.log(np.full((3, 2, 2), 0.5)),
    ...               {"time": fc.Bint[3], "s_prev": fc.Bint[2], "s_curr": fc.Bint[2]})
    >>> init = fc.Tensor(np.log(np.array([0.5, 0.5])), {"s_prev": fc.Bint[2]})
    >>> m = windowed_filter(ops.logaddexp, ops.add, t, "time", {"s_prev": "s_curr"}, init, 2)
    >>> m.inputs, float(m.reduce(ops.logaddexp).data)
    ({'s_curr': Bint[2]}, 0.0)
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.filter.fused import FusedCollapses
from funsor_core.algorithms.filter.imm import imm_filter
from funsor_core.algorithms.filter.masked import masked_filter
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian
from funsor_core.atoms.gaussian.mixture import collapse_sum, mixture_vars
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.markov import require_funsor

__all__ = ["windowed_filter"]


def _slot_names(step: dict, discrete: list, window: int, taken: set) -> dict:
    """``slots[prev][j]``: the names a state takes in turn, so that the message never needs
    renaming. A discrete state cycles through ``window + 1`` names (its prev name, its curr
    name, then fresh ones), a real state alternates between its prev and curr names."""
    slots = {}
    for prev, curr in step.items():
        names = [prev, curr]
        if prev in discrete:
            for k in range(2, window + 1):
                new = f"{prev}@{k - 1}"
                while new in taken:
                    new += "'"
                taken.add(new)
                names.append(new)
        slots[prev] = names
    return slots


def _check(trans: Funsor, time: str, step: dict, init: Funsor, window) -> None:
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise ValueError(f"windowed_filter: window must be an int >= 1 (the number of discrete "
                         f"states kept exact), got {window!r}")
    if time not in trans.inputs:
        raise ValueError(f"windowed_filter: '{time}' is not an input of the transition factor, "
                         f"whose inputs are {list(trans.inputs)}")
    missing = [n for n in (*step, *step.values()) if n not in trans.inputs]
    if missing:
        raise ValueError(f"windowed_filter: {missing} are not inputs of the transition factor, "
                         f"whose inputs are {list(trans.inputs)}; every prev/curr name of "
                         f"step={step} must be one")
    for prev, curr in step.items():
        if trans.inputs[prev] is not trans.inputs[curr]:
            raise ValueError(f"windowed_filter: the prev input '{prev}' is {trans.inputs[prev]} "
                             f"but its curr input '{curr}' is {trans.inputs[curr]}")
    extra = [n for n in init.inputs if n in step.values() or n == time]
    if extra:
        raise ValueError(f"windowed_filter: init is a factor of the first state's prev names "
                         f"{list(step)}, but it has inputs {extra}")


def _check_steps(trans: Funsor, time: str) -> None:
    require_funsor(trans, "windowed_filter")
    # A chain of no steps is refused, as by MarkovProduct, markov_marginals, markov_map and
    # sequential_sum_product (one rule for every chain function); a batch entry of no steps
    # is ``lengths[b] = 0`` on a time axis of T >= 1.
    domain = trans.inputs.get(time)
    if domain is not None and domain.dtype != "real" and domain.size == 0:
        raise ValueError(f"windowed_filter over '{time}': the chain is empty ('{time}' is "
                         f"{domain}); it needs at least one step. For sequences of which some "
                         "have no step, pad the time axis and give lengths= (an entry of "
                         "length 0 gets init under the curr names)")


def _check_time_variable(trans: Funsor, time: Variable) -> None:
    # A Variable time states its domain: it must be the transition factor's Bint[T].
    domain = trans.inputs.get(time.name)
    if time.output.dtype == "real" or time.output.shape or (domain and domain is not time.output):
        raise ValueError(f"windowed_filter: time '{time.name}' must be Bint[T] and match the "
                         f"transition factor's input, got {time.output} (the factor has {domain})")


def windowed_filter(sum_op, prod_op, trans: Funsor, time, step: dict, init: Funsor,
                    window: int = 1, each_step=None, method: str = "gpb2", *, lengths=None,
                    mask=None) -> Funsor:
    """The forward message of a chain after its last step (see the module docstring).

    Args:
        sum_op, prod_op: the semiring, e.g. ``ops.logaddexp, ops.add``.
        trans: the factors, with inputs ``time`` (``Bint[T - 1]`` for a chain of ``T``
            states), the prev and curr names of ``step``, and any batch or global inputs.
        time: the time input (a name or a Variable).
        step: a mapping from prev names to curr names.
        init: the factor of the first state, over (some of) the prev names.
        window: how many discrete states the message keeps exact (``>= 1``).
        each_step: optional ``each_step(t, message)``, called after step ``t`` with the
            filtering message of that step over its curr names (lags summed out), e.g. to
            record filtered marginals; it costs one more sum per step.
        lengths, mask: a ragged batch (``filter.masked``): step ``t`` of batch entry ``b``
            counts iff ``t < lengths[b]`` (a Tensor over batch names) and ``mask[t, b]``
            (a 0/1 Tensor, Tensor chains only); the result of entry ``b`` is its message
            after its last valid step (with either ``method``; a switching chain with
            ``window=1`` only).
        method: with ``window=1`` and Gaussian factors, which collapse: ``"gpb2"`` (the
            default: predict and update every (previous, next) switch pair, then collapse
            over the previous switch) or ``"imm"`` (interacting multiple model: mix the
            previous switch's posteriors first, then predict and update once per next
            switch; ``filter.imm``). They give different numbers; a chain of Tensors gets
            the exact forward algorithm from both.

    Returns:
        A factor of the curr names of the last step (and the batch and global inputs):
        ``sum_op``-summing it gives the chain's total (its marginal likelihood in log space).

    Raises:
        ValueError: a name of ``step`` is not an input of ``trans``, prev and curr domains
            differ, ``init`` has inputs of the curr names or ``time``, ``window < 1``, or
            the chain is empty (``time`` is ``Bint[0]``: a chain needs at least one step, as
            in ``MarkovProduct``, ``markov_marginals`` and ``markov_map``; with ``lengths``,
            an entry of length 0 gets ``init`` under the curr names);
            ``method="imm"`` with a window other than 1, another semiring than
            ``(logaddexp, add)``, or a real factor over a previous switch state.

    Example:
        >>> t = fc.Tensor(np.ones((4, 2, 2)), {"t": fc.Bint[4], "a": fc.Bint[2], "b": fc.Bint[2]})
        >>> windowed_filter(ops.add, ops.mul, t, "t", {"a": "b"}, fc.Number(1.0)).data
        array([16., 16.])
    """
    if isinstance(time, Variable):
        _check_time_variable(trans, time)
    _check_steps(trans, time.name if isinstance(time, Variable) else time)
    if lengths is not None or mask is not None:
        return masked_filter(sum_op, prod_op, trans, time, step, init, window, lengths, mask,
                             windowed_filter, method)
    if isinstance(time, Variable):
        time = time.name
    step = dict(step)
    _check(trans, time, step, init, window)
    if method != "gpb2":
        return _imm(sum_op, prod_op, trans, time, step, init, window, each_step, method)
    discrete = [p for p in step if trans.inputs[p].dtype != "real"]
    slots = _slot_names(step, discrete, window, set(trans.inputs) | set(init.inputs))
    # At step t a discrete state's prev is slot t and its curr slot t + 1 (mod window + 1),
    # a real state's prev and curr alternate (mod 2); the message before step t holds the
    # discrete slots t - window + 1 .. t, and the oldest and the real prev are summed. So the
    # names of the factors change from step to step and the message's never do.
    period = math.lcm(window + 1, 2)

    def names(p, j):
        return slots[p][j % (window + 1)] if p in discrete else slots[p][j % 2]

    renames = [{n: names(p, v + s) for p in step for s, n in enumerate((p, step[p]))}
               for v in range(period)]
    summed = [frozenset(names(p, v) for p in step if p not in discrete)
              | frozenset(names(p, v - window + 1) for p in discrete) for v in range(period)]
    factors = _StepFactors(trans, time, prod_op, renames)

    def current(msg, t):  # the message after step t over the curr names (lags summed out)
        latest = {names(p, t + 1): step[p] for p in step}
        lagged = frozenset(n for p in discrete for n in slots[p]
                           if n in msg.inputs and n not in latest)
        msg = msg.reduce(sum_op, lagged) if lagged else msg
        renamed = {k: Variable(v, trans.inputs[v]) for k, v in latest.items()
                   if k != v and k in msg.inputs}
        return msg(**renamed) if renamed else msg

    def reduced_names(t, terms):
        return frozenset(n for n in summed[t % period] if any(n in f.inputs for f in terms))

    # Moment-matching steps of one structure run on arrays (filtering_fused).
    fused = (FusedCollapses(factors, reduced_names, tries=window + period + 1)
             if each_step is None and sum_op is ops.logaddexp and prod_op is ops.add else None)
    msg = init
    size = trans.inputs[time].size
    t = 0
    while t < size:
        if fused is not None and t:
            msg, t = fused.run(msg, t, size)
            fused = None if fused.exhausted else fused
            if t == size:
                break
        # (msg * factor).reduce(sum, names), built as its normal form at once: one term,
        # the message's own product flattened into it (as normalize would).
        flat = (msg.terms if isinstance(msg, Contraction) and msg.red_op is None
                and msg.bin_op is prod_op else (msg,))
        terms = (*flat, *factors(t))
        reduced = reduced_names(t, terms)
        msg = _collapsed(Contraction(sum_op if reduced else None, prod_op, reduced, terms))
        if each_step is not None:
            each_step(t, current(msg, t))
        t += 1
    return current(msg, size - 1)


def _imm(sum_op, prod_op, trans, time, step, init, window, each_step, method):
    if method != "imm":
        raise ValueError(f"windowed_filter: method must be 'gpb2' or 'imm', got {method!r}")
    if window != 1 or sum_op is not ops.logaddexp or prod_op is not ops.add:
        raise ValueError(f"windowed_filter(method='imm') keeps one Gaussian per switch value "
                         f"of log densities: it needs window=1 and the semiring (ops.logaddexp, "
                         f"ops.add), got window={window}, ({sum_op}, {prod_op})")
    return imm_filter(trans, time, step, init, each_step)


_NO_MOMENTS = (
    "windowed_filter: summing the switch state(s) {names} out of the message leaves a mixture "
    "of Gaussians with no moments to match (a component is flat along some direction of the "
    "real states {reals}: no information on it yet), so the window cannot collapse it. Give "
    "the first state a proper prior, e.g. init = prior(x_prev) + ..., so that every "
    "component has a mean and a covariance.")


def _collapsed(msg: Funsor) -> Funsor:
    """A step's message, its mixture collapsed where the active interpretation left it lazy.

    The window is what ``windowed_filter`` promises: a Bint state leaving it is summed out of
    a Gaussian message by matching moments (``collapse_sum``: one Gaussian per assignment of
    the states still in the window), whatever the interpretation. ``moment_matching`` has
    collapsed it already; ``exact`` leaves it a lazy mixture of atoms, whose components would
    multiply with every step (``K^T`` switch paths: memory runs out at K = 3, T = 20). A term
    of non-atoms (under ``lazy``, say) is recorded as it is.
    """
    if not (isinstance(msg, Contraction) and msg.red_op is ops.logaddexp
            and msg.bin_op is ops.add
            and all(isinstance(x, (Gaussian, Tensor, Number)) for x in msg.terms)
            and mixture_vars(msg.reduced_vars, msg.terms)):
        return msg
    result = collapse_sum(msg.reduced_vars, msg.terms)
    if result is None:
        reals = sorted({k for x in msg.terms for k, d in x.inputs.items() if d.dtype == "real"})
        raise ValueError(_NO_MOMENTS.format(
            names=sorted(mixture_vars(msg.reduced_vars, msg.terms)), reals=reals))
    return result


class _StepFactors:
    """``factors(t)``: terms whose ``prod_op``-combination is the factor of step ``t``,
    ``trans(time=t)`` with the names of step ``t``'s version (``renames[t % len(renames)]``).

    Each version is renamed once, not per step. When ``trans`` is a Tensor, a Gaussian or a
    ``prod_op``-combination of them and step 0 shows that the active interpretation slices
    them to the same atoms, the time axis of each atom's arrays is moved to the front once,
    and a step's atoms are built from ``array[t]`` (what substituting a constant into a Bint
    input of an atom computes) and returned as they are, for the step's Contraction to
    combine by ``prod_op`` (as substituting into their sum would).
    """

    def __init__(self, trans, time, prod_op, renames):
        self.trans, self.time, self.prod_op, self.renames = trans, time, prod_op, renames
        self.size = trans.inputs[time].size
        self.versions = {}
        self.atoms = None  # [(kind, arrays with time first, ikey per version)]

    def __call__(self, t):
        v = t % len(self.renames)
        if self.atoms is not None:
            return self._fast(t, v)
        version = self.versions.get(v)
        if version is None:
            rename = {k: Variable(n, self.trans.inputs[k])
                      for k, n in self.renames[v].items() if k != n}
            version = self.versions[v] = self.trans(**rename) if rename else self.trans
        factor = version(**{self.time: Number(t, self.size)})
        if t == 0 and self.size > 1:
            self.atoms = _time_major_atoms(self.trans, self.time, self.prod_op, factor,
                                           self.renames)
        return (factor,)

    def _fast(self, t, v):
        result = []
        for kind, arrays, ikeys in self.atoms:
            ikey = ikeys[v]
            if kind is Tensor:
                atom = Tensor.make(arrays[0][t] if arrays[1] else arrays[0], dict(ikey),
                                   ikey=ikey)
            elif arrays[2]:
                atom = Gaussian.make(arrays[0][t], arrays[1][t], ikey=ikey)
            else:
                atom = Gaussian.make(arrays[0], arrays[1], ikey=ikey)
            result.append(atom)
        return result


def _atoms_of(term, prod_op):
    if isinstance(term, (Tensor, Gaussian)):
        return (term,)
    if (isinstance(term, Contraction) and term.red_op is None and term.bin_op is prod_op
            and all(isinstance(a, (Tensor, Gaussian)) for a in term.terms)):
        return term.terms
    return None


def _time_major_atoms(trans, time, prod_op, first, renames):
    """The atoms of ``trans`` with their time axis first and their input items per version,
    or None unless ``first`` (``trans(time=0)``) has atoms of the same kinds and inputs."""
    atoms, sliced = _atoms_of(trans, prod_op), _atoms_of(first, prod_op)
    if atoms is None or sliced is None or len(atoms) != len(sliced):
        return None
    out = []
    for atom, s in zip(atoms, sliced):
        kind = type(atom)
        rest = tuple((k, d) for k, d in atom._ikey if k != time)
        if type(s) is not kind or kind is Tensor and atom.dtype != "real":
            return None
        ikeys = [tuple((r.get(k, k), d) for k, d in rest) for r in renames]
        if sorted(s._ikey) != sorted(ikeys[0]):
            return None
        has_time = time in atom.inputs
        order = {time: atom.inputs[time], **dict(rest)} if has_time else dict(rest)
        if kind is Tensor:
            arrays = (align_tensor(order, atom), has_time)
        elif has_time:
            arrays = (*align_gaussian(order, atom, expand=True), True)
        else:
            arrays = (atom.white_vec, atom.prec_sqrt, False)
        out.append((kind, arrays, ikeys))
    return out
