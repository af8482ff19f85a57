"""The Markov product: ``MarkovProduct(sum_op, prod_op, trans, time, step, step_names)``.

For a factor ``trans`` of a time input ``t: Bint[T]`` and pairs ``step = {prev: curr}`` of
its inputs, the Markov product (Appendix A of "Functional Tensors for Probabilistic
Programming") composes the ``T`` steps ``trans(t=0), ..., trans(t=T-1)`` along the chain::

    MP = trans(t=0)                                              if T = 1
    MP = sum_w MP[t < T-1](curr=w) * trans(t=T-1, prev=w)         otherwise

``sum`` and ``*`` are the semiring ``(sum_op, prod_op)``. The result is a function of the
first step's prev names and the last step's curr names (plus every other input of
``trans``, shared by all steps: batch plates and global variables, which are not
eliminated). With no pairs it is the plain product over ``t``. An HMM's forward algorithm is
``MarkovProduct(logaddexp, add, ...)`` of Tensors; a Kalman filter is the same of Gaussians.

The time and the step names are bound: ``step_names`` maps each of them to the free name
under which the result exposes it (the identity by default); substituting a Variable for a
free step name renames it there (``interpretations/lazy.py``). This module holds only the
term; ``exact`` evaluates it (``interpretations/exact/markov.py``) with a strategy chosen by
``funsor_core.algorithms.chains.cost_model``.

Example:
    >>> from interpretations import lazy
    >>> t = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> with lazy:
    ...     mp = MarkovProduct(ops.add, ops.mul, t, "t", {"x": "y"})
    >>> mp.inputs, sorted(mp.bound)
    ({'x': Bint[2], 'y': Bint[2]}, ['t', 'x', 'y'])
    >>> MarkovProduct(ops.add, ops.mul, t, "t", {"x": "y"}).data  # 2 ** 2 paths per pair
    array([[4., 4.],
           [4., 4.]])
"""

from __future__ import annotations

from funsor_core.engine.cache import FastCache
from funsor_core.ops.builtin import DISTRIBUTIVE_OPS
from funsor_core.ops.op import AssociativeOp
from funsor_core.terms.base import Funsor, Variable

__all__ = ["MarkovProduct", "STRATEGIES", "check_semiring", "require_funsor", "time_variable"]

# How the exact rule may evaluate a Markov product (funsor_core.algorithms.chains.cost_model):
# "auto" lets a cost model choose; None (the default) uses the setting of the enclosing block.
STRATEGIES = ("auto", "parallel", "sequential")

# The structures (inputs of trans, time, step, step names) that passed ``_check``.
_CHECKED = FastCache("terms.markov_checked", 1024)  # key -> True

_NOT_A_SEMIRING = (
    "{what}: prod_op {prod} does not distribute over sum_op {sum}, so a chain has no "
    "elimination order that gives the sum over paths of the products along them{hint}; "
    "pass a semiring (sum_op, prod_op) such as (ops.logaddexp, ops.add), (ops.add, ops.mul) "
    "or (ops.max, ops.add)"
)


def check_semiring(what: str, sum_op, prod_op) -> None:
    """Raise ValueError where ``(sum_op, prod_op)`` is a semiring of ``ops.DISTRIBUTIVE_OPS``
    swapped, such as ``(ops.add, ops.logaddexp)``: a chain of it gave a number, not the sum
    over paths the user meant.

    Example:
        >>> check_semiring("MarkovProduct", ops.logaddexp, ops.add)  # a semiring: silent
    """
    # Only a swapped semiring is refused: another pair that does not distribute, such as
    # (logaddexp, mul), has a definition, the left fold along time (as in funsor), that
    # programs may rely on.
    if (sum_op, prod_op) in DISTRIBUTIVE_OPS or (prod_op, sum_op) not in DISTRIBUTIVE_OPS:
        return
    hint = " (the arguments are swapped: sum_op comes first)"
    raise ValueError(_NOT_A_SEMIRING.format(what=what, sum=sum_op, prod=prod_op, hint=hint))


_BAD_STEP = ("MarkovProduct: step must map prev names to curr names of trans, e.g. "
             "{{'x_prev': 'x_curr'}}; got {step!r}")


def _pairs(step) -> tuple:
    # A dict, a set or a tuple of (prev, curr) pairs, as a tuple sorted by prev name: the
    # order in which step_names lists the free names, and a canonical form for cons-hashing.
    if isinstance(step, dict):
        items = list(step.items())
    elif isinstance(step, (frozenset, set, tuple, list)):
        items = list(step)
    else:
        raise TypeError(_BAD_STEP.format(step=step))
    if not all(isinstance(p, tuple) and len(p) == 2 and all(isinstance(n, str) for n in p)
               for p in items):
        raise TypeError(_BAD_STEP.format(step=step))
    return tuple(sorted(items))


def _free_names(step: tuple, step_names) -> tuple:
    # step_names maps bound step names to free names (funsor: a dict or a frozenset of pairs;
    # absent names keep their own). Stored as one (free prev, free curr) pair per step pair,
    # by position, so that renaming the bound names (alpha conversion) leaves it valid.
    if step_names is None:
        return step
    # A tuple with one pair per step pair is that positional form (what the term stores,
    # and what reinterpretation passes back); a dict or a set of pairs is a mapping.
    if isinstance(step_names, tuple) and len(step_names) == len(step) and all(
            isinstance(p, tuple) and len(p) == 2 for p in step_names):
        return step_names
    try:
        mapping = dict(step_names)
    except (TypeError, ValueError):
        mapping = None
    if mapping is None or not all(isinstance(k, str) and isinstance(v, str)
                                  for k, v in mapping.items()):
        raise ValueError(f"MarkovProduct: step_names must map step names to free names (a dict "
                        f"such as {{'x_prev': 'x_prev', 'x_curr': 'x_curr'}} or a set of such "
                        f"pairs), got {step_names!r}")
    names = {n for pair in step for n in pair}
    unknown = sorted(set(mapping) - names)
    if unknown:
        raise ValueError(f"MarkovProduct: step_names renames {unknown}, which are not step "
                         f"names {sorted(names)}")
    return tuple((mapping.get(p, p), mapping.get(c, c)) for p, c in step)


class MarkovProduct(Funsor):
    """The product of ``trans`` along ``time``, chaining each step's ``curr`` names into the
    next step's ``prev`` names (see the module docstring).

    Args:
        sum_op, prod_op: the semiring, e.g. ``ops.logaddexp, ops.add``.
        trans: the transition factor, with inputs ``time`` (optional: a factor without it
            is the same at every step) and every prev and curr name of ``step``.
        time: the time input: a name of ``trans``'s inputs or a ``Variable(name, Bint[T])``.
        step: a dict ``{prev: curr}`` (or a set of pairs) of inputs of equal domains.
        step_names: the free names of the result's step inputs, as a dict from bound step
            names (default: their own names).
        strategy: ``"parallel"``, ``"sequential"`` or ``"auto"`` forces how ``exact``
            evaluates it; ``None`` (default) follows ``funsor_core.sum_product.
            markov_strategy`` (``"auto"`` unless set). It does not change the value.

    Raises:
        ValueError: a step name is not an input of ``trans`` or the domains of a pair
            differ; ``time`` is a name that ``trans`` lacks; the result's names collide.

    Example:
        >>> t = fc.Tensor(np.arange(8.0).reshape(2, 2, 2),
        ...               {"t": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[2]})
        >>> mp = MarkovProduct(ops.add, ops.mul, t, "t", {"x": "y"})
        >>> np.allclose(mp.data, t.data[0] @ t.data[1])
        True
    """

    fields = ("sum_op", "prod_op", "trans", "time", "step", "step_names", "strategy")
    binds = ("time", "step")

    @classmethod
    def _prepare(cls, sum_op, prod_op, trans, time, step, step_names=None, strategy=None):
        if not isinstance(sum_op, AssociativeOp) or not isinstance(prod_op, AssociativeOp):
            raise TypeError(f"MarkovProduct needs associative ops (a semiring such as "
                            f"ops.logaddexp, ops.add), got {sum_op!r}, {prod_op!r}")
        require_funsor(trans, "MarkovProduct")
        check_semiring("MarkovProduct", sum_op, prod_op)
        time = time_variable(trans, time)
        step = _pairs(step)
        step_names = _free_names(step, step_names)
        if strategy is not None and strategy not in STRATEGIES:
            raise ValueError(f"MarkovProduct: unknown strategy {strategy!r}; choose one of "
                             f"{STRATEGIES} (or None to follow markov_strategy)")
        # The checks read only names and domains: a structure that passed once passes again.
        key = (tuple(trans.inputs.items()), time, step, step_names)
        if key not in _CHECKED.data:
            _check(trans, time, step, step_names)
            _CHECKED.put(key, True)
        return sum_op, prod_op, trans, time, step, step_names, strategy

    @staticmethod
    def _cons_key(args):
        # The fields but trans and time are names and ops, keys as they are; the two terms
        # are keyed by identity, as the interpreter keys any term.
        sum_op, prod_op, trans, time, step, step_names, strategy = args
        return (sum_op, prod_op, id(trans), id(time), step, step_names, strategy)

    def _setup(self):
        rename = {}
        for pair, free in zip(self.step, self.step_names):
            rename[pair[0]], rename[pair[1]] = free
        time = self.time.name
        self.inputs = {rename.get(k, k): d for k, d in self.trans.inputs.items() if k != time}
        self.output = self.trans.output

    @property
    def step_dict(self) -> dict:
        """``step`` as a dict ``{prev: curr}`` (funsor's ``MarkovProduct.step``).

        Example:
            >>> t = fc.Tensor(np.ones((2, 2, 2)), {"t": fc.Bint[2], "a": fc.Bint[2],
            ...                                    "b": fc.Bint[2]})
            >>> from interpretations import lazy
            >>> with lazy:
            ...     MarkovProduct(ops.add, ops.mul, t, "t", {"a": "b"}).step_dict
            {'a': 'b'}
        """
        return dict(self.step)

    @property
    def free_names(self) -> dict:
        """The free name of each bound step name, as a dict.

        Example:
            >>> t = fc.Tensor(np.ones((2, 2, 2)), {"t": fc.Bint[2], "a": fc.Bint[2],
            ...                                    "b": fc.Bint[2]})
            >>> from interpretations import lazy
            >>> with lazy:
            ...     MarkovProduct(ops.add, ops.mul, t, "t", {"a": "b"}, {"a": "a0"}).free_names
            {'a': 'a0', 'b': 'b'}
        """
        out = {}
        for (p, c), (fp, fc_) in zip(self.step, self.step_names):
            out[p], out[c] = fp, fc_
        return out


def require_funsor(trans, what: str, factor: str = "trans") -> None:
    """TypeError unless ``trans`` is a funsor: a raw array has no named time and state inputs
    (it failed later, as an AttributeError on ``.inputs``).

    Example:
        >>> require_funsor(np.zeros((3, 2, 2)), "sequential_sum_product")
        Traceback (most recent call last):
        ...
        TypeError: sequential_sum_product: trans must be a funsor over the time and state ...
    """
    if not isinstance(trans, Funsor):
        raise TypeError(f"{what}: {factor} must be a funsor over the time and state names, got "
                        f"{type(trans).__name__}; wrap an array as fc.Tensor(data, {{'t': "
                        "fc.Bint[T], 'x_prev': fc.Bint[K], 'x_curr': fc.Bint[K]}})")


def time_variable(trans, time, what: str = "MarkovProduct", factor: str = "trans") -> Variable:
    """The time of a chain of ``trans`` as a ``Variable`` of domain ``Bint[T]``, checked: a
    name must be an input of ``trans`` (a misspelt one would otherwise read as a factor that
    is the same at every step); a Variable may be absent from ``trans`` (it then gives the
    number of steps) but must agree with ``trans``'s input when present. ``what`` and
    ``factor`` name the caller and the factor in the errors.

    Example:
        >>> t = fc.Tensor(np.ones((3, 2)), {"t": fc.Bint[3], "x": fc.Bint[2]})
        >>> time_variable(t, "t")
        Variable('t', Bint[3])
    """
    require_funsor(trans, what, factor)
    if isinstance(time, Variable):
        domain = trans.inputs.get(time.name)
        if (time.output.dtype == "real" or time.output.shape
                or (domain is not None and domain is not time.output)):
            raise ValueError(f"{what}: time '{time.name}' must be Bint[T] and match {factor}'s "
                             f"input, got {time.output} ({factor} has {domain})")
        return time
    if not isinstance(time, str):
        raise TypeError(f"{what}: time must be a name or a Variable, got {time!r}")
    domain = trans.inputs.get(time)
    if domain is None:
        raise ValueError(
            f"{what}: time '{time}' is not an input of {factor}, whose inputs are "
            f"{dict(trans.inputs)}; pass Variable('{time}', Bint[T]) for a factor that is the "
            "same at every step")
    if domain.dtype == "real" or domain.shape:
        raise ValueError(f"{what}: time '{time}' must be Bint[T], got {domain}")
    return Variable(time, domain)


def _check(trans, time: Variable, step: tuple, step_names: tuple) -> None:
    names = [n for pair in step for n in pair]
    if time.name in names or len(set(names)) != len(names):
        raise ValueError(f"MarkovProduct: step {dict(step)} must pair distinct names, none of "
                         f"them the time '{time.name}'")
    missing = [n for n in names if n not in trans.inputs]
    if missing:
        raise ValueError(
            f"MarkovProduct: step names {missing} are not inputs of trans, whose inputs are "
            f"{list(trans.inputs)}; every prev and curr name of step={dict(step)} must be one")
    for prev, curr in step:
        if trans.inputs[prev] is not trans.inputs[curr]:
            raise ValueError(
                f"MarkovProduct over '{time.name}': prev '{prev}' is {trans.inputs[prev]} but "
                f"curr '{curr}' is {trans.inputs[curr]}; a step maps a state to the next one "
                "of the same domain")
    if time.output.size == 0:
        raise ValueError(f"MarkovProduct over '{time.name}': the chain is empty "
                         f"({time.output}); it needs at least one step")
    free = [n for pair in step_names for n in pair]
    others = [n for n in trans.inputs if n != time.name and n not in names]
    clash = sorted({n for n in free if free.count(n) > 1 or n in others})
    if clash:
        raise ValueError(f"MarkovProduct: the result would have names {clash} twice (step "
                         f"names {dict(zip(names, free))}, other inputs {others}); rename them")
    if not all(isinstance(n, str) for n in free):
        raise ValueError(f"MarkovProduct: step_names must map to names, got {step_names!r}")

