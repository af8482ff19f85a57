"""The sum-product normal form: ``Contraction(red_op, bin_op, reduced_vars, terms)``.

A Contraction stands for ``red_op``-reducing, over the names ``reduced_vars``, the
``bin_op``-combination of ``terms``::

    Contraction(logaddexp, add, {"j"}, (f, g))  ==  (f + g).reduce(logaddexp, "j")

``red_op=None`` means no reduction (then ``reduced_vars`` is empty) and ``bin_op=None`` means a
single term. funsor 0.4.8 spells both ``ops.null``; we use ``None`` so that the op vocabulary has
no op that cannot be called.

Terms are kept in a canonical order when ``bin_op`` is commutative: sorted by the rank that
the term's class declares (``sort_rank``: Deltas, Gaussians, generic terms, Tensors, Numbers),
its class name, then its sorted input names (a stable sort, so equal keys keep the order they
were given). Two Contractions of the same factors, given in different orders, are
then built as the same term. The ``normalize`` interpretation rewrites sums and products into
Contractions; ``interpretations/exact/contraction.py`` evaluates them.

Example:
    >>> from interpretations import normalize
    >>> x = fc.Variable("x", fc.Real)
    >>> with normalize:
    ...     y = (x + 1) + 2
    >>> type(y).__name__, len(y.terms)
    ('Contraction', 3)
"""

from __future__ import annotations

import itertools
import operator
import types

from funsor_core import ops
from funsor_core.domains import Domain
from funsor_core.engine.cache import FastCache
from funsor_core.engine.cons import build
from funsor_core.engine.interpreter import _DEFAULT, _STATE_GET
from funsor_core.engine.protocol import FunsorMeta, pending_setup, pending_slot
from funsor_core.terms.backend_check import array_backend, check_backends
from funsor_core.terms.base import Binary, Funsor, Number, merge_all_inputs, to_funsor
from funsor_core.terms.inputs import reduce_constant, reduce_domain, split_reduced_vars

__all__ = ["Contraction", "COMMUTATIVE_OPS", "term_sort_key", "sort_terms", "sum_addends"]

# bin_ops whose terms may be reordered (every associative op of ops.ASSOCIATIVE_OPS is also
# commutative).
COMMUTATIVE_OPS = frozenset(ops.ASSOCIATIVE_OPS)


def term_sort_key(term: Funsor) -> tuple:
    """The canonical-order key of a Contraction term: its class's ``sort_rank``, class name,
    then its sorted input names.

    Cheap and deterministic (no ``repr``): building a Contraction of N terms computes N keys.

    Example:
        >>> term_sort_key(fc.Variable("x", fc.Real))
        (50, 'Variable', ('x',))
    """
    names = tuple(term.inputs)
    cls = type(term)
    if len(names) == 2:  # (a pairwise factor, the common case: no sorted() call)
        a, b = names
        return (cls.sort_rank, cls.__name__, names if a < b else (b, a))
    return (cls.sort_rank, cls.__name__, tuple(sorted(names)) if len(names) > 2 else names)


def sort_terms(terms: tuple) -> tuple:
    """``terms`` in canonical order (stable), returning the same tuple when already sorted.

    Example:
        >>> x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
        >>> [t.name for t in sort_terms((y, x))]
        ['x', 'y']
    """
    order = _sort_order(terms)
    return terms if order is None else tuple(map(terms.__getitem__, order))


def _sort_order(terms: tuple) -> list | None:
    # The positions of ``terms`` in canonical order (a stable sort), None when they are in it.
    # The class's rank decides first: where no two terms share a rank (a Gaussian and a
    # Tensor, a filter step's message), the ranks alone are the order and no key is built.
    if len(terms) <= 8:
        ranks = [type(t).sort_rank for t in terms]
        if len(set(ranks)) == len(ranks):
            if all(ranks[k - 1] < ranks[k] for k in range(1, len(ranks))):
                return None
            return sorted(range(len(terms)), key=ranks.__getitem__)
    keys = [term_sort_key(t) for t in terms]
    # One pass finds the common case (terms flattened from an already sorted Contraction plus
    # terms in order); the stable sort runs only when some neighbour is out of order (a
    # C-level pass for many terms).
    if len(keys) > 8:
        if all(map(operator.le, keys, itertools.islice(keys, 1, None))):
            return None
    elif all(keys[k - 1] <= keys[k] for k in range(1, len(keys))):
        return None
    return sorted(range(len(terms)), key=keys.__getitem__)


_INPUTS, _OUTPUT = operator.attrgetter("inputs"), operator.attrgetter("output")
_NO_VARS = frozenset()


def _repeat(red_op, bin_op, terms, absent) -> tuple:
    # Reducing over Variables no term has repeats the value (Funsor.reduce's policy). When
    # bin_op distributes over red_op, the n-fold red_op of X is X bin_op (the n-fold red_op
    # of bin_op's unit): one more term, e.g. a factor n for (add, mul), log n for
    # (logaddexp, add), nothing new for an idempotent red_op.
    if red_op in ops.IDEMPOTENT_OPS:
        return terms
    if bin_op is None:
        return (reduce_constant(terms[0], red_op, absent),)
    if (red_op, bin_op) not in ops.DISTRIBUTIVE_OPS:
        raise ValueError(f"Contraction({red_op}, {bin_op}) cannot repeat over "
                         f"{[v.name for v in absent]}: not inputs of the contracted terms")
    return terms + (reduce_constant(Number(ops.UNITS[bin_op]), red_op, absent),)


def _output_domain(bin_op, terms) -> Domain:
    # The output of terms[0] . terms[1] . ... . When all terms share one output that the op
    # maps to itself (real terms under add, mul, logaddexp, ...), one lookup decides it.
    out: Domain = terms[0].output
    if len(terms) > 1 and (all(t.output is out for t in terms) if len(terms) <= 8
                           else set(map(_OUTPUT, terms)) == {out}):
        if ops.infer_domain(bin_op, out, out) is out:
            return out
    for t in terms[1:]:
        out = ops.infer_domain(bin_op, out, t.output)
    return out


# Many terms of one class keeping its inputs as an interned key tuple (Tensors, Gaussians):
# (that class, the key tuples) -> (merged inputs, the canonical order as positions or None when
# the terms are in it, the merged inputs in that order). The merge checked the domains agree
# and both depend on the key tuples only, so a recurring structure (a model's 2,000 factors
# built per call) is checked and sorted once. Bounded: each entry holds O(terms) tuples.
_STRUCTURES = FastCache("contraction.structures", 64)
_IKEY = operator.attrgetter("_ikey")


def _known_structure(terms: tuple) -> tuple | None:
    kinds = set(map(type, terms))
    if len(kinds) != 1:
        return None
    cls = kinds.pop()
    if type(getattr(cls, "_ikey", None)) is not types.MemberDescriptorType:
        return None  # (a class whose inputs are not ``dict(_ikey)``)
    key = (cls, tuple(map(_IKEY, terms)))
    entry = _STRUCTURES.data.get(key)
    if entry is None:
        inputs = merge_all_inputs(terms, "contract")  # (a mismatch raises: nothing cached)
        order = _sort_order(terms)
        if order is None:
            entry = (inputs, None, None)
        else:
            ordered = tuple(map(terms.__getitem__, order))
            entry = (inputs, tuple(order), merge_all_inputs(ordered, "contract"))
        entry = _STRUCTURES.put(key, entry)
    return entry


# A few terms (a lazy Contraction of two Tensors, a filter step's Gaussian + Tensor): (red_op,
# bin_op, reduced_vars, each term's signature) -> (the canonical order as positions or None,
# the merged inputs in that order, the output domain). A term's signature is its class, output,
# array type and inputs: what _prepare's checks (backends, domains, ops, reduced names) and its
# sort read, so a structure built per call or per step is checked and sorted once. Only
# structures that pass every check unchanged are kept (no conversion, no repeated Variable).
_SMALL = FastCache("contraction.small_structures", 1024)


def _small_signature(terms: tuple) -> tuple | None:
    sig = []
    for t in terms:
        cls = type(t)
        if not getattr(cls, "_is_funsor", False):
            return None  # (not a funsor: to_funsor converts it)
        fields = cls.arrays
        if fields:
            sig.append((cls, t.output, type(getattr(t, fields[0])), *t.inputs.items()))
        elif cls._atom and array_backend(t) is not None:
            return None  # (an atom of atoms, a Delta: its backend is its points')
        else:
            sig.append((cls, t.output, *t.inputs.items()))
    return tuple(sig)


# Contraction.make of a few terms: (bin_op, each term's class, output and inputs) -> what
# ``_layout`` returns for them.
_LAYOUTS = FastCache("contraction.make_layouts", 1024)


def _make_signature(t) -> tuple:
    # A Tensor's or Gaussian's inputs are ``dict(t._ikey)``: the tuple it holds, not a new
    # one of the dict's items (hashed once, and compared by identity across a filter's steps).
    cls = type(t)
    keyed = _IKEY_CLASSES.get(cls)
    if keyed is None:
        keyed = _IKEY_CLASSES[cls] = \
            type(getattr(cls, "_ikey", None)) is types.MemberDescriptorType
    return (cls, t.output, t._ikey) if keyed else (cls, t.output, *t.inputs.items())


# class -> whether its ``inputs`` is ``dict(_ikey)`` (as ``_known_structure`` reads it).
_IKEY_CLASSES: dict = {}


def _layout(bin_op, terms: tuple) -> tuple:
    # (the canonical order as positions or None when the terms are in it, the merged inputs
    # in that order, the output domain).
    order = _sort_order(terms) if bin_op in COMMUTATIVE_OPS and len(terms) > 1 else None
    if order is not None:
        order = tuple(order)
        terms = tuple(map(terms.__getitem__, order))
    inputs = {}
    for term_inputs in map(_INPUTS, terms):
        inputs.update(term_inputs)
    return order, inputs, _output_domain(bin_op, terms)


def _same(xs, ys) -> bool:
    return all(map(operator.is_, xs, ys))


class ContractionMeta(FunsorMeta):
    """The metaclass of ``Contraction``: builds it as every term is built, and when the active
    interpretation builds every Contraction as it is (``builds_class_as_is``: under ``lazy``
    no rule, hook, tape or debug log sees Contractions), cons-hashes the prepared arguments
    in this frame, as the interpreter would, without computing a dispatch key.

    Example:
        >>> from interpretations import lazy
        >>> t = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
        >>> with lazy:
        ...     s = fc.Contraction(ops.add, ops.mul, frozenset("i"), (t, t))
        >>> s is fc.engine.cons.build(fc.Contraction, s._args)
        True
    """

    def __call__(cls, *args, **kwargs):
        if len(args) > 4:  # funsor 0.4.8 also takes the terms unpacked: (red, bin, vars, *terms)
            args = args[:3] + (args[3:],)
        args = cls._prepare(*args, **kwargs) if kwargs else cls._prepare(*args)
        return _through_interpretation(cls, args, pending_slot(None) or pending_setup())

    def prepared(cls, args: tuple, inputs: dict, output: Domain):
        """The term ``cls(*args)`` built through the active interpretation for arguments that
        ``_prepare`` returned unchanged before for terms of this structure (in canonical
        order, every check passed), with the merged ``inputs`` (before reduction) and
        ``output`` domain it found: a caller that builds one structure per call (a
        schedule's steps) skips re-checking and re-sorting it.

        Example:
            >>> from interpretations import lazy
            >>> t = fc.Tensor(np.ones(2), {"i": fc.Bint[2]})
            >>> with lazy:
            ...     s = fc.Contraction(ops.add, ops.mul, frozenset("i"), (t, t))
            ...     again = fc.Contraction.prepared(s._args, {"i": fc.Bint[2]}, fc.Real)
            >>> again is s, fc.Contraction.prepared(s._args, s.terms[0].inputs, fc.Real).item()
            (True, 2.0)
        """
        slot = pending_slot(None) or pending_setup()
        slot[0] = (args[3], inputs, output)  # what _prepare leaves for _setup
        return _through_interpretation(cls, args, slot)


def _through_interpretation(cls, args: tuple, slot: list):
    # ``cls(*args)`` for prepared ``args`` under the active interpretation; what ``_prepare``
    # left in ``slot`` for ``_setup`` is cleared however the build ends.
    state = _STATE_GET(None)
    interp = _DEFAULT[0] if state is None else state[0]
    try:
        # (The cache of ``builds_class_as_is`` read in place: a miss, or False, asks.)
        if interp._direct.get(cls) or interp.builds_class_as_is(cls):
            return build(cls, args)
        return interp.interpret(cls, args)
    finally:
        slot[0] = None


class Contraction(Funsor, metaclass=ContractionMeta):
    """``red_op``-reduction over ``reduced_vars`` of the ``bin_op``-combination of ``terms``.

    Args:
        red_op: an associative op (``ops.logaddexp``, ``ops.add``, ...) or ``None`` for none.
        bin_op: the op combining the terms, or ``None`` when there is a single term.
        reduced_vars: a name, a Variable or a set of them, with ``Funsor.reduce``'s policy:
            a Variable must have its input's domain; a Bint Variable no term has repeats the
            value over its values; a bare name no term has raises ValueError.
        terms: a tuple of funsors (numbers and arrays are converted with ``to_funsor``).

    Example:
        >>> f = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> g = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})
        >>> fc.Contraction(ops.add, ops.mul, frozenset({"j"}), (f, g)).data
        array([3., 3.])
    """

    fields = ("red_op", "bin_op", "reduced_vars", "terms")
    binds = ("reduced_vars",)
    _stash = True  # pending_setup() holds (terms, inputs, output) of the one being built

    @classmethod
    def _prepare(cls, red_op, bin_op, reduced_vars, terms):
        # Names only: a Variable in the key would be hashed, and compared with ``==``, which
        # builds a term (its truth is no equality), on a hash collision.
        if type(terms) is tuple and len(terms) <= 8 and type(reduced_vars) is frozenset and all(
                type(n) is str for n in reduced_vars):
            key = _small_signature(terms)
            if key is not None:
                key = (red_op, bin_op, reduced_vars, key)
                try:
                    entry = _SMALL.data.get(key)
                except TypeError:  # an unhashable op: the checks below name it
                    entry = key = None
                if entry is not None:
                    order, inputs, out = entry
                    if order is not None:
                        terms = tuple(map(terms.__getitem__, order))
                    (pending_slot(None) or pending_setup())[0] = (terms, inputs, out)
                    return red_op, bin_op, reduced_vars, terms
            args = cls._checked(red_op, bin_op, reduced_vars, terms)
            if key is not None and args[2] is reduced_vars and len(args[3]) == len(terms):
                # (Kept only when the terms came out as given, or as given in canonical order:
                # nothing converted or added. ``is``, not ``==``: a term's == builds a term.)
                order = None if _same(args[3], terms) else _sort_order(terms)
                if order is None or _same(map(terms.__getitem__, order), args[3]):
                    stash = pending_setup()[0]
                    _SMALL.put(key, (None if order is None else tuple(order), stash[1],
                                     stash[2]))
            return args
        return cls._checked(red_op, bin_op, reduced_vars, terms)

    @classmethod
    def _checked(cls, red_op, bin_op, reduced_vars, terms):
        # _prepare's checks and canonical order, every step spelled out.
        if isinstance(terms, Funsor):
            terms = (terms,)
        if len(terms) <= 8 or not all(issubclass(k, Funsor) for k in set(map(type, terms))):
            terms = tuple(t if isinstance(t, Funsor) else to_funsor(t) for t in terms)
        terms = check_backends("contract", tuple(terms))
        if not terms:
            raise ValueError("Contraction needs at least one term")
        if bin_op is None and len(terms) > 1:
            raise ValueError(f"Contraction of {len(terms)} terms needs a bin_op, got None")
        if red_op is not None and red_op not in ops.REDUCE_OPS:
            raise ValueError(f"cannot reduce with ops.{red_op.name}: it has no reduction; use one "
                             f"of {sorted(o.name for o in ops.REDUCE_OPS)} or None")
        known = _known_structure(terms) if len(terms) > 8 else None
        inputs = merge_all_inputs(terms, "contract") if known is None else dict(known[0])
        names, absent = split_reduced_vars(reduced_vars, inputs, "the contracted terms")
        if red_op is None and (names or absent):
            raise ValueError(f"Contraction with red_op=None cannot reduce "
                             f"{sorted(names) + [v.name for v in absent]}")
        if absent:
            terms = _repeat(red_op, bin_op, terms, absent)
            known = None
        if known is not None and bin_op in COMMUTATIVE_OPS:
            if known[1] is not None:  # (the canonical order, and the inputs in it)
                terms = tuple(map(terms.__getitem__, known[1]))
                inputs = dict(known[2])
        elif bin_op in COMMUTATIVE_OPS and len(terms) > 1:
            ordered = sort_terms(terms)
            if ordered is not terms:  # the merged inputs follow the terms' order
                terms = ordered
                inputs = {}
                for term_inputs in map(_INPUTS, terms):  # (checked above: no conflict)
                    inputs.update(term_inputs)
        out = _output_domain(bin_op, terms)
        # Kept for _setup, which a term built from these very arguments runs next.
        pending_setup()[0] = (terms, inputs, out)
        return red_op, bin_op, names, terms

    @classmethod
    def make(cls, bin_op, terms: tuple) -> Contraction:
        """``Contraction(None, bin_op, frozenset(), terms)`` built as it is, skipping checks,
        rules and cons-hashing, as ``Tensor.make`` does, for a rule that has checked that the
        terms' inputs agree and share a backend. The terms are put in canonical order. Not
        cons-hashed: where some term is fresh no equal term exists to share; otherwise two
        makes of the same terms are equal terms, not one object.

        Example:
            >>> t = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
            >>> s = fc.Contraction.make(ops.add, (fc.Number(1.0), t))
            >>> [type(x).__name__ for x in s.terms], s.inputs
            (['Tensor', 'Number'], {'i': Bint[2]})
        """
        if len(terms) <= 8:
            # The order, inputs and output depend on the terms' classes, outputs and inputs
            # only: a filter step makes the same few layouts each step.
            # (Tensors and Gaussians keyed inline: one frame for the terms, not one each.)
            keyed = _IKEY_CLASSES.get
            key = (bin_op, *[(c, t.output, t._ikey) if keyed(c := type(t)) else
                             _make_signature(t) for t in terms])
            entry = _LAYOUTS.data.get(key)
            if entry is None:
                entry = _LAYOUTS.put(key, _layout(bin_op, terms))
            order, inputs, out = entry
            if order is not None:
                terms = tuple(map(terms.__getitem__, order))
            inputs = dict(inputs)
        else:
            if bin_op in COMMUTATIVE_OPS:
                terms = sort_terms(terms)
            inputs = {}
            for term_inputs in map(_INPUTS, terms):
                inputs.update(term_inputs)
            out = _output_domain(bin_op, terms)
        # What _init and _setup do for red_op None (nothing reduced: every input is kept),
        # without the stash: a filter step makes several of these.
        self = object.__new__(cls)
        self._args = (None, bin_op, _NO_VARS, terms)
        self.red_op, self.bin_op, self.reduced_vars, self.terms = self._args
        self.inputs = inputs
        self.output = out
        return self

    @staticmethod
    def _cons_key(args):
        # Ops, None and the frozenset of names are keys as they are; the terms are keyed by
        # identity, as the interpreter keys any term (a live Contraction keeps its terms, so
        # their ids cannot be reused while its entry exists).
        red_op, bin_op, reduced_vars, terms = args
        return (red_op, bin_op, reduced_vars, tuple(map(id, terms)))

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.fields != Contraction.fields:  # (fields of its own: the generic key and _init)
            cls._cons_key = None
            cls._init = Funsor._init

    def _init(self, red_op, bin_op, reduced_vars, terms) -> None:
        # Term._init in one frame: the fields, then _setup.
        self._args = (red_op, bin_op, reduced_vars, terms)
        self.red_op, self.bin_op, self.reduced_vars, self.terms = self._args
        self._setup()

    def _setup(self):
        red_op, bin_op, reduced_vars, terms = self._args
        stash = pending_setup()[0]
        if stash is not None and stash[0] is terms:
            inputs, out = stash[1], stash[2]
        else:
            inputs = merge_all_inputs(terms, "contract")
            out = _output_domain(bin_op, terms)
        self.inputs = ({k: d for k, d in inputs.items() if k not in reduced_vars}
                       if reduced_vars else dict(inputs))
        if red_op is not None and out.dtype != "real":
            # An integer sum (or product) over n assignments widens as n - 1 binary ops do,
            # as the Reduce this contraction stands for.
            n = 1
            for k in reduced_vars:
                d = inputs.get(k)
                if d is not None and d.dtype != "real":
                    n *= d.size
            out = reduce_domain(red_op, out, n)
        self.output = out


def sum_addends(f) -> list:
    """The addends of a sum, in order, built eagerly (a Contraction ``(None, add)`` without
    reduction) or lazily (a tree of ``Binary(ops.add)``); ``[f]`` for anything else.

    Example:
        >>> len(sum_addends(fc.Number(1.0)))
        1
    """
    todo, found = [f], []
    while todo:
        term = todo.pop()
        if isinstance(term, Binary) and term.op is ops.add:
            todo += [term.rhs, term.lhs]
        elif (isinstance(term, Contraction) and term.red_op is None
              and term.bin_op is ops.add and not term.reduced_vars):
            todo += reversed(term.terms)
        else:
            found.append(term)
    return found
