"""The ``Funsor`` base class: a lazy function of named, typed inputs into an output domain.

Every term class is built through ``FunsorMeta.__call__``: arguments are normalized and
checked by the class's ``_prepare`` (so a mistake raises at once, under every interpretation),
then the active interpretation rewrites or builds the term. This module knows no other term:
the methods that build terms are installed on ``Funsor`` by the modules of those terms
(``terms/methods.py``: ``f(i=0)``, ``f.reduce``, ``f.align``, ``f[...]``;
``terms/operators.py``: ``f + g``, ``-f``, ``f.sum()``) when the terms package loads.

Example:
    >>> x = fc.Variable("x", fc.Real)
    >>> (x + 1).inputs
    {'x': Real}
"""

from __future__ import annotations

import math
from typing import Any

from funsor_core import ops
from funsor_core.engine.protocol import Term, TypeHints, _hook

__all__ = ["Funsor", "is_atom"]


class Funsor(Term):
    """Base of all terms: a lazy function of named, typed inputs into an output domain.

    A term class declares its constructor arguments once; the rest is derived::

        class Reduce(Funsor):
            fields = ("op", "arg", "reduced_vars")   # constructor args, stored as attributes
            binds = ("reduced_vars",)                # fields naming variables bound inside
            arrays = ()                              # fields holding backend arrays

    and defines ``_prepare`` (normalize and check the arguments, at construction under every
    interpretation) and ``_setup`` (compute ``inputs`` and ``output``). Slots, ``bound``,
    alpha-renaming, substitution, pickling and JAX pytree flattening follow from the
    declaration.

    Attributes:
        inputs: ordered mapping of free variable names to domains.
        output: the domain of the value.

    Example:
        >>> f = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
        >>> (f * 2).reduce(ops.add, "i").item()
        6.0
    """

    __slots__ = ()
    __annotations__ = TypeHints()

    @property
    def dtype(self):
        """The output's dtype: ``"real"``, or the bound ``n`` of a ``Bint[n]`` output.

        Example:
            >>> fc.Variable("x", fc.Reals[2]).dtype, fc.Variable("i", fc.Bint[3]).dtype
            ('real', 3)
        """
        return self.output.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """The output's shape (inputs are not part of it).

        Example:
            >>> fc.Tensor(np.zeros((4, 2)), {"i": fc.Bint[4]}).shape
            (2,)
        """
        return self.output.shape

    def __bool__(self) -> bool:
        if not self.inputs and not self.shape:
            return bool(_hook("to_data")(self))
        raise TypeError(
            f"the truth value of a funsor with inputs {self.inputs} and output {self.output} is "
            "ambiguous; reduce it first, or compare its data")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError(f"a funsor of output {self.output} has no len()")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    @property
    def data(self):
        """The array of a Tensor, the number of a Number; any other term raises NoDataError
        (a LazyTermError naming the pattern with no rule, or the free inputs of an atom).

        Example:
            >>> fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]}).data
            array([1., 2.])
        """
        raise _hook("lazy_error")(self, ".data")

    def item(self):
        """The Python number of a funsor with no inputs and a scalar output. It reads the
        value, so not under ``jax.jit`` (jax's own ``.item()`` cannot): there, use ``.data``.

        Example:
            >>> fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]}).reduce(ops.add).item()
            3.0
        """
        if self.inputs or math.prod(self.shape) != 1:  # several values: float()'s error,
            return _hook("to_number")(self, ".item()")  # naming the inputs and the fix
        data = _hook("to_data")(self)
        return data.item() if hasattr(data, "item") else data

    def reshape(self, shape) -> Funsor:
        """The same function with its output reshaped (inputs untouched), as funsor's.

        Example:
            >>> f = fc.Tensor(np.arange(12.0).reshape(2, 6), {"i": fc.Bint[2]})
            >>> f.reshape((2, 3)).output, f.reshape((3, -1))(i=1).data[0]
            (Reals[2, 3], array([6., 7.]))
        """
        return ops.reshape(self, shape)
    def sample(self, sampled_vars, sample_inputs=None, rng_key=None):
        """Draw samples of ``sampled_vars`` (see ``funsor_core.sampling.draw.sample``): the
        same log density with each sampled input a Delta at its draw (plus a log weight).

        Example:
            >>> logits = fc.Tensor(np.array([0.0, -np.inf]), {"i": fc.Bint[2]})  # i = 0 surely
            >>> s = logits.sample(frozenset({"i"}), rng_key=np.random.default_rng(0))
            >>> float(s(i=0)), float(s(i=1))
            (0.0, -inf)
        """
        return _hook("sample")(self, sampled_vars, sample_inputs, rng_key)

    # -- moments over output dims (``sum``, ``max``, ... are installed by terms/operators.py) --
    def std(self, axis=None, ddof=0, keepdims=False):
        """The standard deviation over output dims (``ops.std``), as numpy's ``std``.

        Example:
            >>> fc.Tensor(np.array([1.0, 3.0])).std().item()  # |1 - 2| = |3 - 2| = 1
            1.0
        """
        return ops.std(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def var(self, axis=None, ddof=0, keepdims=False):
        """The variance over output dims (``ops.var``), as numpy's ``var``.

        Example:
            >>> fc.Tensor(np.array([1.0, 3.0])).var().item()  # mean of 1 and 1
            1.0
        """
        return ops.var(self, axis=axis, ddof=ddof, keepdims=keepdims)


def is_atom(x: Any) -> bool:
    """Whether ``x`` is an atom term (Tensor, Gaussian, Delta, Number, Variable, Slice).

    Example:
        >>> is_atom(fc.Number(1.0)), is_atom(fc.Variable("x", fc.Real).exp())
        (True, False)
    """
    return getattr(type(x), "_atom", False)
