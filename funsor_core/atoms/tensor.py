"""The Tensor atom: an array whose leftmost dims are named Bint inputs.

``Tensor(data, inputs, dtype)`` holds ``data`` of shape ``batch_shape + output.shape`` where
``batch_shape`` lists the sizes of ``inputs`` in order. This module holds the atom and the pure
array math its rules call (alignment by name, indexing); the rules live in
``interpretations/exact/tensor.py``.

Example:
    >>> t = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2]})
    >>> t.inputs, t.output
    ({'i': Bint[2]}, Reals[3])
"""

from __future__ import annotations

import copy

from funsor_core import ops
from funsor_core.atoms.tensor_checks import (
    KNOWN_INPUTS,
    NUMPY_SCALARS,
    TensorMeta,
    _add_input,
    _arange_at,
    _as_int_index,
    _check_index_range,
    check_dtype,
    check_tensor_args,
    progression_slices,
)
from funsor_core.atoms.tensor_idioms import (  # noqa: F401  (funsor.tensor's names live here too)
    REDUCE_OP_TO_NUMERIC,
    Einsum,
    Getitem,
    fold_axes,
    get_default_prototype,
    numeric_array,
    tensordot,
)
from funsor_core.domains import Bint, Domain
from funsor_core.engine.backend import backend_module
from funsor_core.engine.cache import FastCache
from funsor_core.ops.op import is_array_type
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.reshaping import Slice

__all__ = ["Tensor", "align_tensor", "align_tensors", "align_binary", "is_array", "index_tensor",
           "index_tensor_numbers", "index_tensor_number", "INDEX_TYPES", "getitem_tensor",
           "name_output_dim",
           "REDUCE_OP_TO_NUMERIC", "Einsum", "Getitem", "get_default_prototype",
           "numeric_array", "tensordot", "fold_axes", "null_set_product",
           "null_set_mul"]

def is_array(x) -> bool:
    """Whether ``x`` is an array of a loaded backend.

    Example:
        >>> is_array(np.zeros(2)), is_array([0.0])
        (True, False)
    """
    return is_array_type(type(x))


# (dtype, output shape) -> Domain, for Tensors built by their constructor.
_OUTPUTS_CACHE = FastCache("tensor.outputs", 4096)
_OUTPUTS = _OUTPUTS_CACHE.data
_new = object.__new__


class Tensor(Funsor, metaclass=TensorMeta):
    """A discrete factor: an array with named Bint batch dims on the left.

    Args:
        data: an array of the numpy, torch or jax backend (lists are converted).
        inputs: mapping of input names to ``Bint[n]`` domains, in data order.
        dtype: ``"real"`` or the bound ``n`` of integer values.

    Example:
        >>> f = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
        >>> f(i=1).item()
        1.0
    """

    __slots__ = ("data", "_ikey")
    fields = ("data", "inputs", "dtype")
    arrays = ("data",)
    plain = ("inputs", "dtype")  # (name, Bint) pairs and a bound: no child terms to walk
    _atom = True
    sort_rank = 70

    @classmethod
    def _prepare(cls, data, inputs=None, dtype="real"):
        # The common case, checked in one dict lookup: an array of a loaded backend and a
        # mapping of inputs seen before (then already validated, its key tuple interned, so
        # that rules compare input signatures with ``is``); only the shape is compared.
        if is_array_type(type(data)) and (inputs is None or isinstance(inputs, dict)):
            try:
                known = KNOWN_INPUTS.get(tuple(inputs.items()) if inputs else ())
            except TypeError:  # an unhashable domain: the full check names it
                known = None
            if known is not None:
                ikey, sizes = known
                if data.shape[:len(sizes)] == sizes:
                    if type(dtype) is str and dtype == "real":
                        return data, ikey, dtype
                    return data, ikey, check_dtype(data, dtype, len(sizes))
        return check_tensor_args(data, inputs, dtype)

    @staticmethod
    def _cons_key(args):
        data, inputs, dtype = args
        return (id(data), inputs, dtype)

    def _init(self, data, inputs, dtype) -> None:
        # Term._init and _setup in one frame: a Tensor is built per factor of every model.
        self._args = (data, inputs, dtype)
        self.data = data
        self._ikey = inputs
        self.inputs = dict(inputs)
        shape = data.shape
        n = len(inputs)
        # Output domains by (dtype, output shape), so that no Domain is built per Tensor.
        key = (dtype, shape[n:] if len(shape) > n else ())
        output = _OUTPUTS.get(key)
        if output is None:
            output = _OUTPUTS_CACHE.put(key, Domain(dtype, tuple(key[1])))
        self.output = output

    def _setup(self):
        self._init(*self._args)

    @classmethod
    def make(cls, data, inputs: dict, dtype="real", ikey: tuple | None = None,
             output: Domain | None = None) -> Tensor:
        """Build a Tensor from arrays a rule just computed, skipping checks and interpretation.

        Rules use this for results: the data is fresh, so cons-hashing could never share it,
        and no rule rewrites a Tensor's constructor. ``output``, when the rule knows it, saves
        recomputing the domain from the shape.

        Example:
            >>> fc.Tensor.make(np.zeros((2, 3)), {"i": fc.Bint[2]}).output
            Reals[3]
        """
        self = _new(cls)
        if ikey is None:
            ikey = tuple(inputs.items())
        if type(data) in NUMPY_SCALARS:  # numpy's 0-d results are scalars: hold an array
            data = data.__array__()
        self._args = (data, ikey, dtype)
        self.data = data
        self._ikey = ikey
        self.inputs = inputs
        if output is None:  # (the domain cache ``_init`` reads: no Domain call per result)
            shape, n = data.shape, len(ikey)
            output = _OUTPUTS.get(key := (dtype, shape[n:] if len(shape) > n else ()))
            if output is None:
                output = _OUTPUTS_CACHE.put(key, Domain(dtype, tuple(key[1])))
        self.output = output
        return self

    @property
    def dtype(self):
        """``"real"``, or the bound ``n`` of Bint[n] data, as funsor's.

        Example:
            >>> fc.Tensor(np.array([0, 2]), dtype=3).dtype
            3
        """
        return self.output.dtype

    def __deepcopy__(self, memo):
        # A deep copy owns a copy of the data (as funsor's): terms are immutable, but arrays
        # may be mutated in place by their owner. ``memo`` can map the data to itself, and
        # then the Tensor is shared too.
        data = copy.deepcopy(self.data, memo)
        if data is self.data:
            return self
        result = Tensor.make(data, dict(self.inputs), self.dtype, ikey=self._ikey,
                             output=self.output)
        memo[id(self)] = result
        return result

    def new_arange(self, name: str, *args, dtype=None) -> Tensor:
        """A Bint-valued Tensor ``arange`` on this tensor's backend, with input ``name``.

        Example:
            >>> fc.Tensor(np.zeros(2)).new_arange("i", 3).data
            array([0, 1, 2])
        """
        data = ops.new_arange(self.data, *args)
        size = data.shape[0]
        if dtype is None:
            dtype = (args[1] if len(args) > 1 else args[0]) if args else size
        return Tensor.make(data, {name: Bint[size]}, dtype)

    def materialize(self, x: Funsor) -> Funsor:
        """``x`` with an arange (on this tensor's backend) substituted for each Bint input, so
        that a lazy function of Bint variables becomes a Tensor (funsor's ``materialize``).

        Example:
            >>> u = fc.Variable("u", fc.Bint[3])
            >>> fc.Tensor(np.zeros(1)).materialize(u + 1).data
            array([1., 2., 3.])
        """
        if isinstance(x, (Number, Tensor)):
            return x
        subs = {name: self.new_arange(name, d.size) for name, d in x.inputs.items()
                if d.dtype != "real"}
        return x(**subs) if subs else x


# ---------------------------------------------------------------------------------------------
# Alignment by name: pure functions of arrays and input mappings.
# Alignment recipes keyed by the two input signatures. Bounded: a loop over fresh input names
# makes a fresh key per step.
_ALIGN_CACHE = FastCache("tensor.align_binary", 4096)
_ALIGNS = _ALIGN_CACHE.data  # read directly on the hot path


def align_binary(lhs: Tensor, rhs: Tensor):
    """Align two tensors for a broadcasting binary op.

    Returns ``(inputs, ikey, lhs_data, rhs_data)`` (``ikey`` is ``tuple(inputs.items())``):
    both arrays have one dim per merged input (size 1
    where absent), then their output dims padded on the left with 1s to a common number, so
    that numpy broadcasting matches names. The recipe is cached per pair of input signatures.

    Example:
        >>> a = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> b = fc.Tensor(np.zeros((3, 4)), {"j": fc.Bint[3], "k": fc.Bint[4]})
        >>> inputs, _, x, y = align_binary(a, b)
        >>> list(inputs), x.shape, y.shape
        (['i', 'j', 'k'], (2, 3, 1), (1, 3, 4))
    """
    ld, rd = lhs.data, rhs.data
    lo, ro = len(ld.shape) - len(lhs._ikey), len(rd.shape) - len(rhs._ikey)
    key = (lhs._ikey, rhs._ikey, lo, ro)
    recipe = _ALIGNS.get(key)
    if recipe is None:
        recipe = _ALIGN_CACHE.put(key, _align_recipe(lhs, rhs, lo, ro))
    inputs, ikey, lperm, lshape, rperm, rshape = recipe
    if lperm is not None:
        ld = ops.permute(ld, lperm)
    if lshape is not None:
        ld = ops.reshape(ld, lshape + tuple(ld.shape[len(ld.shape) - lo:]) if lo else lshape)
    if rperm is not None:
        rd = ops.permute(rd, rperm)
    if rshape is not None:
        rd = ops.reshape(rd, rshape + tuple(rd.shape[len(rd.shape) - ro:]) if ro else rshape)
    return inputs, ikey, ld, rd


def _align_recipe(lhs: Tensor, rhs: Tensor, lo: int, ro: int):
    inputs = dict(lhs.inputs)
    for k, d in rhs.inputs.items():
        if k not in inputs:
            inputs[k] = d
    names = list(inputs)
    out_nd = max(lo, ro)
    result = [inputs, tuple(inputs.items())]
    for x, o in ((lhs, lo), (rhs, ro)):
        own = list(x.inputs)
        order = [n for n in names if n in x.inputs]
        perm = None
        if order != own:
            perm = tuple(own.index(n) for n in order) + tuple(range(len(own), len(own) + o))
        pad = (1,) * (out_nd - o)
        shape = tuple(inputs[n].dtype if n in x.inputs else 1 for n in names) + pad
        needs = len(names) != len(own) or bool(pad)
        result += [perm, shape if needs else None]
    return tuple(result)


def align_tensor(new_inputs: dict, x: Tensor, expand: bool = False):
    """The data of ``x`` permuted to the order of ``new_inputs``, with size-1 dims for inputs it
    lacks (or expanded to full size with ``expand``).

    Example:
        >>> x = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> align_tensor({"k": fc.Bint[4], "j": fc.Bint[3], "i": fc.Bint[2]}, x).shape
        (1, 3, 2)
    """
    data = x.data
    own = list(x.inputs)
    out_shape = tuple(data.shape[len(own):])
    order = [n for n in new_inputs if n in x.inputs]
    if len(order) != len(own):
        extra = set(own) - set(new_inputs)
        raise ValueError(f"cannot align: inputs {sorted(extra)} are not in {list(new_inputs)}")
    if order != own:
        nd = len(own)
        perm = tuple(own.index(n) for n in order) + tuple(range(nd, nd + len(out_shape)))
        data = ops.permute(data, perm)
    if len(order) != len(new_inputs):
        shape = tuple(d.dtype if n in x.inputs else 1 for n, d in new_inputs.items()) + out_shape
        data = ops.reshape(data, shape)
        if expand:
            full = tuple(d.dtype for d in new_inputs.values()) + out_shape
            data = ops.expand(data, full)
    return data


def align_tensors(*args: Funsor, expand: bool = False):
    """Align several Tensors (or Numbers) to their merged inputs.

    Returns ``(inputs, datas)``.

    Example:
        >>> a = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> b = fc.Tensor(np.zeros(3), {"j": fc.Bint[3]})
        >>> inputs, (x, y) = align_tensors(a, b)
        >>> x.shape, y.shape
        ((2, 1), (1, 3))
    """
    inputs: dict = {}
    for x in args:
        for k, d in x.inputs.items():
            inputs.setdefault(k, d)
    datas = []
    for x in args:
        if isinstance(x, Tensor):
            datas.append(align_tensor(inputs, x, expand=expand))
        else:
            datas.append(x.data)
    return inputs, datas


def null_set_product(weights: Funsor, integrand: Funsor) -> Funsor:
    """``weights * integrand`` for nonnegative Tensor ``weights`` (a measure), 0 where the
    weight is 0: a set of measure zero adds nothing to an integral, even where the integrand
    is infinite or NaN there (an ELBO's ``q (p - q)`` at q = 0 is 0 log 0 = 0, not 0 * inf).
    The integrand is set to 0 there before the product (0 * 0 = 0), so gradients through
    either factor stay finite too. Other operands: the plain product.

    Example:
        >>> w = fc.Tensor(np.array([0.5, 0.0]), {"i": fc.Bint[2]})
        >>> f = fc.Tensor(np.array([2.0, np.inf]), {"i": fc.Bint[2]})
        >>> null_set_product(w, f).data
        array([1., 0.])
    """
    if not (isinstance(weights, Tensor) and isinstance(integrand, Tensor)):
        return weights * integrand
    inputs, (w, f) = align_tensors(weights, integrand)
    if len(f.shape) > len(w.shape):  # the integrand's output dims
        w = w[(...,) + (None,) * (len(f.shape) - len(w.shape))]
    return Tensor.make(null_set_mul(w, f), inputs, integrand.dtype)


def null_set_mul(w, f):
    """The arrays' ``w * f`` with ``f`` set to 0 where ``w`` is 0 (see ``null_set_product``):
    masked before the product, since the gradient of ``w * f`` at ``w = 0`` is ``f``.

    Example:
        >>> null_set_mul(np.array([0.5, 0.0]), np.array([2.0, -np.inf]))
        array([1., 0.])
    """
    return w * ops.where(w > 0, f, 0.0)


def backend_of(*terms):
    """The first array among the terms' data, for creating arrays on the same backend."""
    for t in terms:
        data = getattr(t, "data", None)
        if is_array(data):
            return data
    return backend_module().asarray(0.0, "real")


# -- indexing: substitution into a Tensor -------------------------------------------------------
INDEX_TYPES = (Tensor, Number, Variable, Slice)  # what index_tensor substitutes


def index_tensor_numbers(t: Tensor, values: dict) -> Tensor:
    """Select ``t`` at integer ``Number`` values of some inputs (basic indexing).

    Example:
        >>> t = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> index_tensor_numbers(t, {"j": fc.Number(2, 3)}).data
        array([2., 5.])
    """
    if len(values) == 1:  # the hot case f(i=0)
        ((name, value),) = values.items()
        return index_tensor_number(t, name, value.data)
    index = tuple(values[n].data if n in values else slice(None) for n in t.inputs)
    inputs = {n: d for n, d in t.inputs.items() if n not in values}
    return Tensor.make(t.data[index], inputs, t.dtype, output=t.output)


# (input signature, name) -> (position, remaining inputs, their ikey). Bounded: fresh input
# names make fresh keys. The inputs dict is shared by every result (terms are immutable).
_ONE_INDEX_CACHE = FastCache("tensor.index_one", 4096)
_ONE_INDEX = _ONE_INDEX_CACHE.data  # read directly on the hot path


def index_tensor_number(t: Tensor, name: str, value: int) -> Tensor:
    """Select ``t`` at the integer ``value`` of its input ``name``: one basic index on that
    input's axis (a view where the backend makes views). ``value`` must be in range.

    Example:
        >>> t = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
        >>> index_tensor_number(t, "j", 2).data
        array([2., 5.])
    """
    ikey = t._ikey
    recipe = _ONE_INDEX.get((ikey, name))
    if recipe is None:
        recipe = _ONE_INDEX_CACHE.put((ikey, name), _one_index_recipe(ikey, name))
    lead, inputs, new_ikey = recipe
    data = t.data[value] if lead is None else t.data[lead + (value,)]
    return Tensor.make(data, inputs, t.output.dtype, new_ikey, t.output)


def _one_index_recipe(ikey: tuple, name: str) -> tuple:
    pos = [n for n, _ in ikey].index(name)
    new_ikey = ikey[:pos] + ikey[pos + 1:]
    return ((slice(None),) * pos if pos else None), dict(new_ikey), new_ikey


def index_tensor(t: Tensor, values: dict) -> Tensor | None:
    """Substitute Numbers, Variables (renames), Slices and Bint-valued Tensors for inputs of
    ``t`` by advanced indexing, broadcasting the index tensors by name.

    Index values are checked against the input's size whenever they are concrete (numpy,
    torch, eager jax). A traced jax index cannot be checked: out-of-range entries of real data
    become NaN instead of jax's silent clamping; Bint data has no NaN, so then ``None``.

    Example:
        >>> t = fc.Tensor(np.array([10.0, 20.0, 30.0]), {"i": fc.Bint[3]})
        >>> idx = fc.Tensor(np.array([2, 0]), {"k": fc.Bint[2]}, 3)
        >>> index_tensor(t, {"i": idx}).data
        array([30., 10.])
    """
    for value in values.values():  # inline: the common (Tensor index) case pays one test
        if type(value) is not Slice:
            break
    else:
        sliced = _slice_in_place(t, values)
        if sliced is not None:
            return sliced
    traced = False
    for name, value in values.items():
        if isinstance(value, Tensor) and not _check_index_range(
                name, t.inputs[name].size, value.data):
            if t.dtype != "real":
                return None
            traced = True
    new_inputs: dict = {}
    for name, domain in t.inputs.items():
        value = values.get(name)
        if value is None:
            _add_input(new_inputs, name, domain)
        else:
            for k, d in value.inputs.items():
                _add_input(new_inputs, k, d)
    numbers = sum(type(v) is Number for v in values.values())
    if len(new_inputs) == len(t.inputs) - numbers:  # each other input made a new one:
        if not numbers and all(isinstance(v, Variable) for v in values.values()):  # a rename
            renamed = {values[n].name if n in values else n: d for n, d in t.inputs.items()}
            return Tensor.make(t.data, renamed, t.dtype)
        # a view (basic indexing): no gather, whose derivative would be a scatter-add
        index = None if traced else progression_slices(t.inputs, values, Tensor)
        if index is not None:
            return Tensor.make(t.data[index], new_inputs, t.dtype)
    positions = {n: i for i, n in enumerate(new_inputs)}
    nb = len(new_inputs)
    index = []
    for name, domain in t.inputs.items():
        value = values.get(name, None)
        if value is None:
            index.append(_arange_at(t.data, domain.size, positions[name], nb))
        elif isinstance(value, Number):
            index.append(value.data)
        elif isinstance(value, Variable):
            index.append(_arange_at(t.data, domain.size, positions[value.name], nb))
        elif isinstance(value, Tensor):
            index.append(_as_int_index(align_tensor(new_inputs, value)))
        else:  # a Slice: start + step * arange
            start, _, step = value.slice_args
            size = value.inputs[value.name].size
            idx = _arange_at(t.data, size, positions[value.name], nb)
            index.append(idx * step + start if (start or step != 1) else idx)
    data = t.data[tuple(index)]
    if traced:
        data = _mask_invalid(data, new_inputs, values, t)
    return Tensor.make(data, new_inputs, t.dtype)


def _slice_in_place(t: Tensor, values: dict) -> Tensor | None:
    # Every value (a Slice) forward over its own input's name: basic slicing (a strided view,
    # no gather; under jax.jit a slice fuses where a gather is a kernel of its own: the
    # parallel scan's halves, benchmarks/README "Kalman idiom under jax.jit"). None otherwise.
    if not all(v.name == n and v.slice_args[2] > 0 for n, v in values.items()):
        return None
    index, inputs = [], {}
    for name, domain in t.inputs.items():
        value = values.get(name)
        if value is None:
            index.append(slice(None))
            inputs[name] = domain
            continue
        start, _, step = value.slice_args
        size = value.inputs[name].size
        index.append(slice(start, start + step * (size - 1) + 1, step))
        inputs[name] = value.inputs[name]
    return Tensor.make(t.data[tuple(index)], inputs, t.dtype)


def _mask_invalid(data, new_inputs, values, t):
    # NaN wherever any traced index was out of range (jax clamps; we refuse a plausible value).
    ok = None
    for name, value in values.items():
        if isinstance(value, Tensor):
            size = t.inputs[name].size
            idx = align_tensor(new_inputs, value)
            in_range = ops.and_(ops.ge(idx, 0), ops.lt(idx, size))
            ok = in_range if ok is None else ops.and_(ok, in_range)
    ok = ops.reshape(ok, tuple(ok.shape) + (1,) * (len(data.shape) - len(ok.shape)))
    return ops.where(ok, data, ops.full_like(data, float("nan")))


# -- indexing an output dim ---------------------------------------------------------------------
def name_output_dim(t: Tensor, name: str, offset: int) -> Tensor:
    """Output dim ``offset`` of ``t`` becomes the new last input ``name`` (``t[..., "name"]``).

    When nothing moves (``offset`` 0) the result shares ``t.data`` and goes through the
    constructor, so it is cons-hashed: ``Tensor(x)["i"] is Tensor(x, {"i": Bint[n]})``.

    Example:
        >>> t = fc.Tensor(np.zeros((2, 3, 4)))
        >>> y = name_output_dim(t, "j", 1)
        >>> y.inputs, y.output
        ({'j': Bint[3]}, Reals[2, 4])
    """
    nb = len(t.inputs)
    inputs = dict(t.inputs)
    inputs[name] = Bint[t.output.shape[offset]]
    if offset == 0:
        return Tensor(t.data, inputs, t.dtype)
    ndim = len(t.data.shape)
    perm = list(range(ndim))
    del perm[nb + offset]
    perm.insert(nb, nb + offset)
    return Tensor.make(ops.permute(t.data, tuple(perm)), inputs, t.dtype)


def getitem_tensor(t: Tensor, index: Tensor, offset: int) -> Tensor | None:
    """Output dim ``offset`` of ``t`` gathered at the ``Bint``-valued ``index``, broadcasting
    inputs by name: ``result[b][o] = t[b][o[:offset], index[b], o[offset:]]``.

    Concrete index values are checked against the dim's size. Traced ones (``jax.jit``) cannot
    be: out-of-range entries of real data become NaN instead of jax's silent clamping, and
    integer data (no NaN) gives ``None``.

    Example:
        >>> t = fc.Tensor(np.arange(6.0).reshape(2, 3))
        >>> idx = fc.Tensor(np.array([2, 0]), {"k": fc.Bint[2]}, 3)
        >>> getitem_tensor(t, idx, 1).data
        array([[2., 5.],
               [0., 3.]])
    """
    size = t.output.shape[offset]
    traced = not _check_index_range(f"output dim {offset}", size, index.data)
    if traced and t.dtype != "real":
        return None
    inputs = dict(t.inputs)
    for k, d in index.inputs.items():
        _add_input(inputs, k, d)
    data = align_tensor(inputs, t)
    idx = _as_int_index(align_tensor(inputs, index))
    # Every dim left of the gathered one is indexed by a broadcast arange, so that all the
    # advanced indices are adjacent and numpy, torch and jax agree on the result's layout:
    # broadcast(batch, output dims before offset), then the output dims after it.
    lead = len(inputs) + offset
    aranges = []
    for pos in range(lead):
        shape = [1] * lead
        shape[pos] = data.shape[pos]
        aranges.append(ops.reshape(ops.new_arange(data, data.shape[pos]), tuple(shape)))
    if offset:
        idx = ops.reshape(idx, tuple(idx.shape) + (1,) * offset)
    result = data[tuple(aranges) + (idx,)]
    if traced:
        ok = ops.and_(ops.ge(idx, 0), ops.lt(idx, size))
        ok = ops.reshape(ok, tuple(ok.shape) + (1,) * (len(result.shape) - len(ok.shape)))
        result = ops.where(ok, result, ops.full_like(result, float("nan")))
    return Tensor.make(result, inputs, t.dtype)
