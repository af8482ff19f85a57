"""The leaf terms of the language: ``Variable`` (a free input) and ``Number`` (a scalar
constant, real or a ``Bint[n]`` value).

Example:
    >>> fc.Variable("i", fc.Bint[3]).inputs, fc.Number(2, 3).output
    ({'i': Bint[3]}, Bint[3])
"""

from __future__ import annotations

import math
import numbers

from funsor_core.domains import Bint, Domain, Real
from funsor_core.terms.funsor import Funsor
from funsor_core.terms.inputs import DomainError, _as_domain, python_number

__all__ = ["Variable", "Number"]


class Variable(Funsor):
    """A free variable: ``Variable("x", Real)``.

    Example:
        >>> fc.Variable("i", fc.Bint[3]).inputs
        {'i': Bint[3]}
    """

    fields = ("name", "output")
    _atom = True

    @classmethod
    def _prepare(cls, name, output=Real):
        if not isinstance(name, str):
            raise TypeError(f"a Variable's name must be a str, got {name!r}")
        return name, _as_domain(output)

    def _setup(self):
        self.output = output = self._args[1]
        self.inputs = {self.name: output}


class Number(Funsor):
    """A scalar constant: ``Number(0.5)`` or an integer ``Number(2, 3)`` of ``Bint[3]``.

    Example:
        >>> (fc.Number(2.0) * 3).data
        6.0
    """

    fields = ("data", "dtype")
    _atom = True
    sort_rank = 80

    @classmethod
    def _prepare(cls, data, dtype="real"):
        if dtype == "real" and type(data) is float:
            return data, dtype
        if isinstance(dtype, Domain):
            dtype = dtype.dtype
        if not isinstance(data, numbers.Number):
            data = python_number(data)
        if dtype != "real":
            if type(data) is bool:  # a bool is the Bint value 0 or 1, as in funsor
                data = int(data)
            elif type(data) is float and data.is_integer():  # 2.0 names the value 2
                data = int(data)
            if type(dtype) is not int and isinstance(dtype, numbers.Integral) and not isinstance(
                    dtype, bool):
                dtype = int(dtype)  # a numpy int bound (a shape entry) is the int bound
            if type(dtype) is not int or dtype < 0:
                raise DomainError(f"Number({data!r}, {dtype!r}): a dtype is 'real' or an int "
                                  "bound n (the values 0 .. n-1 of Bint[n]), e.g. Number(2, 3)")
            if not isinstance(data, numbers.Integral):
                raise DomainError(f"Number({data!r}) cannot have dtype {dtype!r}: a Bint[n] "
                                  "value must be an integer")
            if not 0 <= data < dtype:
                raise DomainError(f"Number({data}) is out of range for Bint[{dtype}]")
        return data, dtype

    @staticmethod
    def _cons_key(args):
        # -0.0 == 0.0 (and hashes the same) but 1 / -0.0 = -inf: key floats by their sign too.
        data = args[0]
        if type(data) is float:
            return (float, data, math.copysign(1.0, data), args[1])
        return (type(data), data, args[1])

    def _setup(self):
        dtype = self._args[1]
        self.inputs = {}
        self.output = Real if dtype == "real" else Bint[dtype]

    @property
    def dtype(self):
        return self.output.dtype
