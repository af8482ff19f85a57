"""The ops' docstrings, attached to each op's class by ``document_ops``.

Kept apart from ``ops.builtin`` (the vocabulary and its tables): what each op computes on
arrays, and an example that runs on numpy (``tests/ops/test_op_docs.py`` runs them all);
``help(ops.add)`` shows it. An example that reads ``x`` gets ``x = [[1., 2.], [3., 4.]]``.
"""

from __future__ import annotations

from typing import Any

# name: (what the op computes, an example call, the result numpy prints)
_TABLE: dict[str, tuple[str, str, str]] = {
    "neg": (
        "Elementwise negation ``-x``.",
        "ops.neg(np.array([1., -2.]))",
        "array([-1.,  2.])"),
    "abs": (
        "Elementwise absolute value ``|x|``.",
        "ops.abs(np.array([1., -2.]))",
        "array([1., 2.])"),
    "exp": (
        "Elementwise ``exp(x)``; the inverse of ``ops.log``.",
        "ops.exp(np.array([0., 1.]))",
        "array([1.        , 2.71828183])"),
    "log": (
        "Elementwise natural logarithm; ``log(0) = -inf``.",
        "ops.log(np.array([1., np.e]))",
        "array([0., 1.])"),
    "log1p": (
        "Elementwise ``log(1 + x)``, accurate for small ``x``.",
        "ops.log1p(np.array([0., 1e-20]))",
        "array([0.e+00, 1.e-20])"),
    "expm1": (
        "Elementwise ``exp(x) - 1``, accurate for small ``x``.",
        "ops.expm1(np.array([0., 1e-20]))",
        "array([0.e+00, 1.e-20])"),
    "sqrt": (
        "Elementwise square root.",
        "ops.sqrt(np.array([4., 9.]))",
        "array([2., 3.])"),
    "sigmoid": (
        "Elementwise logistic function ``1 / (1 + exp(-x))``.",
        "ops.sigmoid(np.array([0.]))",
        "array([0.5])"),
    "tanh": (
        "Elementwise hyperbolic tangent.",
        "ops.tanh(np.array([0.]))",
        "array([0.])"),
    "atanh": (
        "Elementwise inverse hyperbolic tangent.",
        "ops.atanh(np.array([0.]))",
        "array([0.])"),
    "reciprocal": (
        "Elementwise ``1 / x``.",
        "ops.reciprocal(np.array([2., 4.]))",
        "array([0.5 , 0.25])"),
    "invert": (
        "Logical not of booleans (``~x``); bitwise not of integers.",
        "ops.invert(np.array([True, False]))",
        "array([False,  True])"),
    "isfinite": (
        "Elementwise test for finite values (not inf, not NaN).",
        "ops.isfinite(np.array([1., np.inf, np.nan]))",
        "array([ True, False, False])"),
    "clamp": (
        "``clamp(x, min=None, max=None)``: ``x`` limited to ``[min, max]``.",
        "ops.clamp(np.array([-2., 0.5, 3.]), 0., 1.)",
        "array([0. , 0.5, 1. ])"),
    "astype": (
        "``astype(x, dtype)``: ``x`` converted to ``\"real\"`` (a float dtype kept, ints to "
        "the default float), ``\"int\"`` or ``\"bool\"``; any other dtype name or dtype "
        "(``\"float32\"``, ``\"uint8\"``) exactly, as in funsor.",
        "ops.astype(np.array([1.7, 2.2]), \"int\")",
        "array([1, 2])"),
    "add": (
        "Elementwise sum ``x + y``; as a reduction (``t.reduce(ops.add, \"i\")``) a sum "
        "over a variable.",
        "ops.add(np.array([1., 2.]), 3.)",
        "array([4., 5.])"),
    "sub": (
        "Elementwise difference ``x - y``.",
        "ops.sub(np.array([1., 2.]), 3.)",
        "array([-2., -1.])"),
    "mul": (
        "Elementwise product ``x * y``; the product of the sum-product semiring.",
        "ops.mul(np.array([1., 2.]), 3.)",
        "array([3., 6.])"),
    "truediv": (
        "Elementwise quotient ``x / y``.",
        "ops.truediv(np.array([1., 2.]), 4.)",
        "array([0.25, 0.5 ])"),
    "floordiv": (
        "Elementwise floor division ``x // y``.",
        "ops.floordiv(np.array([7, -7]), 2)",
        "array([ 3, -4])"),
    "mod": (
        "Elementwise remainder ``x % y`` (the sign of ``y``, as Python's).",
        "ops.mod(np.array([7, -7]), 3)",
        "array([1, 2])"),
    "lshift": (
        "Elementwise ``x << y`` on integers.",
        "ops.lshift(np.array([1, 2]), 1)",
        "array([2, 4])"),
    "rshift": (
        "Elementwise ``x >> y`` on integers.",
        "ops.rshift(np.array([4, 8]), 2)",
        "array([1, 2])"),
    "pow": (
        "Elementwise power ``x ** y``.",
        "ops.pow(np.array([2., 3.]), 2.)",
        "array([4., 9.])"),
    "min": (
        "Elementwise minimum of two arrays; as a reduction, the minimum over a variable.",
        "ops.min(np.array([1., 5.]), np.array([3., 2.]))",
        "array([1., 2.])"),
    "max": (
        "Elementwise maximum of two arrays; the sum of the max-plus (Viterbi) semiring.",
        "ops.max(np.array([1., 5.]), np.array([3., 2.]))",
        "array([3., 5.])"),
    "logaddexp": (
        "Elementwise ``log(exp(x) + exp(y))`` without overflow; the sum of the log-space "
        "semiring.",
        "ops.logaddexp(np.log(np.array([1., 2.])), np.log(np.array([3., 2.])))",
        "array([1.38629436, 1.38629436])"),
    "sample": (
        "A sampling reduction: computes as ``logaddexp``, but interpretations read it as "
        "\"draw ``v``\" (Monte Carlo, the adjoint's sampling semiring) rather than \"sum "
        "``v`` out\".",
        "float(ops.sample(np.log(0.5), np.log(0.5)))",
        "0.0"),
    "safesub": (
        "``x - y`` with ``y`` clamped below at the most negative float: ``y = -inf`` gives "
        "a finite number, never ``inf`` or NaN (funsor's semantics).",
        "ops.safesub(1., -np.inf)",
        "1.7976931348623157e+308"),
    "safediv": (
        "``x / y`` with ``1 / y`` clamped at the largest float: ``y = 0`` gives ``x * max``, "
        "and ``0 / 0 = 0`` (funsor's semantics).",
        "ops.safediv(np.array([0., 1.]), np.array([0., 2.]))",
        "array([0. , 0.5])"),
    "and_": (
        "Elementwise logical (booleans) or bitwise (integers) and, ``x & y``.",
        "ops.and_(np.array([True, True]), np.array([True, False]))",
        "array([ True, False])"),
    "or_": (
        "Elementwise logical (booleans) or bitwise (integers) or, ``x | y``.",
        "ops.or_(np.array([True, False]), np.array([False, False]))",
        "array([ True, False])"),
    "xor": (
        "Elementwise logical (booleans) or bitwise (integers) exclusive or, ``x ^ y``.",
        "ops.xor(np.array([True, True]), np.array([True, False]))",
        "array([False,  True])"),
    "lt": (
        "Elementwise comparison ``x < y``.",
        "ops.lt(np.array([1, 2]), 2)",
        "array([ True, False])"),
    "le": (
        "Elementwise comparison ``x <= y``.",
        "ops.le(np.array([1, 2]), 2)",
        "array([ True,  True])"),
    "gt": (
        "Elementwise comparison ``x > y``.",
        "ops.gt(np.array([1, 2]), 1)",
        "array([False,  True])"),
    "ge": (
        "Elementwise comparison ``x >= y``.",
        "ops.ge(np.array([1, 2]), 2)",
        "array([False,  True])"),
    "eq": (
        "Elementwise comparison ``x == y``.",
        "ops.eq(np.array([1, 2]), 2)",
        "array([False,  True])"),
    "ne": (
        "Elementwise comparison ``x != y``.",
        "ops.ne(np.array([1, 2]), 2)",
        "array([ True, False])"),
    "matmul": (
        "Matrix product over the two rightmost dims, batched on the left (``x @ y``).",
        "ops.matmul(x, np.array([[1.], [1.]]))",
        "array([[3.],\n"
        "       [7.]])"),
    "cholesky": (
        "Lower Cholesky factor ``L`` of a positive definite matrix (``L @ L.T = x``), "
        "batched.",
        "ops.cholesky(np.array([[4., 2.], [2., 2.]]))",
        "array([[2., 0.],\n"
        "       [1., 1.]])"),
    "triangular_solve": (
        "``triangular_solve(x, y, upper=False, transpose=False)``: ``z`` with ``y @ z = "
        "x`` for triangular ``y`` (``y.T @ z = x`` if ``transpose``).",
        "ops.triangular_solve(np.array([[2.], [4.]]), np.array([[2., 0.], [1., 1.]]))",
        "array([[1.],\n"
        "       [3.]])"),
    "cholesky_solve": (
        "``cholesky_solve(x, y)``: ``(y @ y.T)^{-1} @ x`` for a lower Cholesky factor "
        "``y``.",
        "ops.cholesky_solve(np.array([[2.], [4.]]), np.array([[2., 0.], [1., 1.]]))",
        "array([[-1.],\n"
        "       [ 3.]])"),
    "cholesky_inverse": (
        "``(x @ x.T)^{-1}`` for a lower Cholesky factor ``x``.",
        "ops.cholesky_inverse(np.array([[2., 0.], [1., 1.]]))",
        "array([[ 0.5, -0.5],\n"
        "       [-0.5,  1. ]])"),
    "det": (
        "Determinant of the two rightmost dims, batched.",
        "float(ops.det(x))",
        "-2.0000000000000004"),
    "logdet": (
        "``log |det x|`` of the two rightmost dims, batched.",
        "round(float(ops.logdet(np.array([[2., 0.], [0., 3.]]))), 6)",
        "1.791759"),
    "inv": (
        "Matrix inverse of the two rightmost dims, batched.",
        "ops.inv(np.array([[2., 0.], [0., 4.]]))",
        "array([[0.5 , 0.  ],\n"
        "       [0.  , 0.25]])"),
    "transpose": (
        "``transpose(x, dim0=-2, dim1=-1)``: two dims swapped.",
        "ops.transpose(x)",
        "array([[1., 3.],\n"
        "       [2., 4.]])"),
    "qr_r": (
        "The ``R`` factor of a reduced QR decomposition (``x = Q @ R``, ``R`` upper "
        "triangular).",
        "ops.qr_r(x).shape",
        "(2, 2)"),
    "diagonal": (
        "``diagonal(x, dim1=-2, dim2=-1)``: the diagonal, as the last dim.",
        "ops.diagonal(x)",
        "array([1., 4.])"),
    "diag_embed": (
        "A last dim made into the diagonal of a matrix; the inverse of ``ops.diagonal``.",
        "ops.diag_embed(np.array([1., 2.]))",
        "array([[1., 0.],\n"
        "       [0., 2.]])"),
    "triu": (
        "``triu(x, k=0)``: the upper triangle of the two rightmost dims, zeros below.",
        "ops.triu(x)",
        "array([[1., 2.],\n"
        "       [0., 4.]])"),
    "tril": (
        "``tril(x, k=0)``: the lower triangle of the two rightmost dims, zeros above.",
        "ops.tril(x)",
        "array([[1., 0.],\n"
        "       [3., 4.]])"),
    "flip": (
        "``flip(x, axis=None)``: the order of the entries along axes reversed.",
        "ops.flip(np.array([1, 2, 3]))",
        "array([3, 2, 1])"),
    "triangular_inv": (
        "``triangular_inv(x, upper=False)``: the inverse of the lower (upper) triangle of "
        "``x``.",
        "ops.triangular_inv(np.array([[2., 0.], [1., 1.]]))",
        "array([[ 0.5,  0. ],\n"
        "       [-0.5,  1. ]])"),
    "sum": (
        "``sum(x, axis=None, keepdims=False)``: sum over axes of an array.",
        "ops.sum(x, 0)",
        "array([4., 6.])"),
    "prod": (
        "``prod(x, axis=None, keepdims=False)``: product over axes of an array.",
        "ops.prod(x, 0)",
        "array([3., 8.])"),
    "logsumexp": (
        "``logsumexp(x, axis=None, keepdims=False)``: ``log(sum(exp(x)))`` over axes "
        "without overflow.",
        "ops.logsumexp(np.log(x), 1)",
        "array([1.09861229, 1.94591015])"),
    "amax": (
        "``amax(x, axis=None, keepdims=False)``: maximum over axes of an array.",
        "ops.amax(x, 0)",
        "array([3., 4.])"),
    "amin": (
        "``amin(x, axis=None, keepdims=False)``: minimum over axes of an array.",
        "ops.amin(x, 0)",
        "array([1., 2.])"),
    "argmax": (
        "``argmax(x, axis)``: the index of the maximum along one axis.",
        "int(ops.argmax(np.array([1., 5., 2.]), 0))",
        "1"),
    "argmin": (
        "``argmin(x, axis)``: the index of the minimum along one axis.",
        "int(ops.argmin(np.array([1., 5., 0.]), 0))",
        "2"),
    "all": (
        "``all(x, axis=None, keepdims=False)``: whether all entries are true over axes.",
        "ops.all(np.array([[True, False], [True, True]]), 1)",
        "array([False,  True])"),
    "any": (
        "``any(x, axis=None, keepdims=False)``: whether any entry is true over axes.",
        "ops.any(np.array([[True, False], [False, False]]), 1)",
        "array([ True, False])"),
    "mean": (
        "``mean(x, axis=None, keepdims=False)``: the mean over axes of an array.",
        "ops.mean(x, 0)",
        "array([2., 3.])"),
    "std": (
        "``std(x, axis=None, ddof=0, keepdims=False)``: the standard deviation over axes.",
        "float(ops.std(np.array([1., 3.])))",
        "1.0"),
    "var": (
        "``var(x, axis=None, ddof=0, keepdims=False)``: the variance over axes.",
        "float(ops.var(np.array([1., 3.])))",
        "1.0"),
    "einsum": (
        "``einsum(equation, *operands)``: an Einstein summation of arrays (on Tensors, "
        "``funsor_core.einsum``).",
        "ops.einsum(\"ij,j->i\", x, np.array([1., 1.]))",
        "array([3., 7.])"),
    "cat": (
        "``cat(parts, axis=0)``: arrays concatenated along an existing axis.",
        "ops.cat([np.array([1.]), np.array([2., 3.])])",
        "array([1., 2., 3.])"),
    "stack": (
        "``stack(parts, axis=0)``: arrays stacked along a new axis.",
        "ops.stack([np.array([1., 2.]), np.array([3., 4.])])",
        "array([[1., 2.],\n"
        "       [3., 4.]])"),
    "permute": (
        "``permute(x, axes)``: the axes of an array reordered.",
        "ops.permute(x, (1, 0))",
        "array([[1., 3.],\n"
        "       [2., 4.]])"),
    "reshape": (
        "``reshape(x, shape)``, or ``reshape(x, shape, ndim=k)`` for the rightmost ``k`` "
        "dims only; on a funsor it reshapes the output.",
        "ops.reshape(x, (4,))",
        "array([1., 2., 3., 4.])"),
    "expand": (
        "``expand(x, shape)``: ``x`` broadcast to ``shape`` (a view where the backend "
        "allows).",
        "ops.expand(np.array([1., 2.]), (2, 2))",
        "array([[1., 2.],\n"
        "       [1., 2.]])"),
    "getitem": (
        "``getitem(x, index)``: ``x[index]``.",
        "float(ops.getitem(x, (0, 1)))",
        "2.0"),
    "where": (
        "``where(cond, x, y)``: ``x`` where ``cond`` holds, ``y`` elsewhere.",
        "ops.where(np.array([True, False]), 1., 0.)",
        "array([1., 0.])"),
    "full_like": (
        "``full_like(x, fill_value)``: an array of ``x``'s shape, dtype and backend "
        "filled with a value.",
        "ops.full_like(np.zeros(2), 0.5)",
        "array([0.5, 0.5])"),
    "new_zeros": (
        "``new_zeros(proto, shape)``: zeros of ``proto``'s dtype and backend.",
        "ops.new_zeros(x, (2,))",
        "array([0., 0.])"),
    "new_full": (
        "``new_full(proto, shape, value)``: an array of ``proto``'s dtype and backend "
        "filled with a value.",
        "ops.new_full(x, (2,), 7.)",
        "array([7., 7.])"),
    "new_arange": (
        "``new_arange(proto, start, stop, step)``: a range of integers on ``proto``'s "
        "backend.",
        "ops.new_arange(x, 0, 4, 2)",
        "array([0, 2])"),
    "new_eye": (
        "``new_eye(proto, n)``: the identity matrix of ``proto``'s dtype and backend.",
        "ops.new_eye(x, 2)",
        "array([[1., 0.],\n"
        "       [0., 1.]])"),
    "new_array": (
        "``new_array(proto, data)``: ``data`` as an array of ``proto``'s backend.",
        "ops.new_array(x, [1, 2])",
        "array([1, 2])"),
    "scatter_add": (
        "``scatter_add(dest, index_tuple, values)``: ``dest`` with ``values`` added at "
        "the indices (repeats accumulate), out of place.",
        "ops.scatter_add(np.zeros(3), (np.array([0, 0, 2]),), np.array([1., 2., 3.]))",
        "array([3., 0., 3.])"),
    "scatter_set": (
        "``scatter_set(dest, index_tuple, values)``: ``dest`` with ``dest[index] = "
        "values``, out of place (indices must not repeat).",
        "ops.scatter_set(np.zeros(3), (np.array([0, 2]),), np.array([1., 3.]))",
        "array([1., 0., 3.])"),
    "to_numpy": (
        "An array of any backend as a numpy array.",
        "type(ops.to_numpy(x)).__name__",
        "'ndarray'"),
    "is_floating": (
        "Whether an array has a floating-point dtype.",
        "ops.is_floating(x), ops.is_floating(np.array([1]))",
        "(True, False)"),
    "is_concrete": (
        "Whether an array has values now (``False`` for a jax tracer under ``jit``): "
        "rules that read values decline or decide structurally when it is ``False``.",
        "ops.is_concrete(x)",
        "True"),
    "detach": (
        "An array cut from the autodiff graph (torch ``detach``, jax ``stop_gradient``; "
        "numpy: itself).",
        "ops.detach(x) is x",
        "True"),
    "lgamma": (
        "Elementwise ``log |Gamma(x)|``.",
        "round(float(ops.lgamma(5.)), 6)",
        "3.178054"),
    "digamma": (
        "Elementwise digamma, ``d/dx log Gamma(x)``.",
        "round(float(ops.digamma(1.)), 6)",
        "-0.577216"),
    "i0e": (
        "Elementwise exponentially scaled Bessel ``I_0``: ``exp(-|x|) I_0(x)``, so ``log "
        "I_0(x) = log(i0e(x)) + |x|`` never overflows.",
        "float(ops.i0e(0.))",
        "1.0"),
    "xlogy": (
        "Elementwise ``x * log(y)``, ``0`` where ``x == 0`` (and ``y`` is not NaN).",
        "float(ops.xlogy(0., 0.)), float(ops.xlogy(2., 1.))",
        "(0.0, 0.0)"),
    "xlog1py": (
        "Elementwise ``x * log1p(y)``, ``0`` where ``x == 0`` (and ``y`` is not NaN).",
        "float(ops.xlog1py(0., -1.)), float(ops.xlog1py(2., 0.))",
        "(0.0, 0.0)"),
    "betaln": (
        "Elementwise ``log B(x, y) = lgamma(x) + lgamma(y) - lgamma(x + y)``.",
        "round(float(ops.betaln(2., 3.)), 6)",
        "-2.484907"),
    "cos": (
        "Elementwise cosine.",
        "float(ops.cos(0.))",
        "1.0"),
    "acos": (
        "Elementwise inverse cosine.",
        "float(ops.acos(1.))",
        "0.0"),
}

_SETUP = (">>> import numpy as np", ">>> from funsor_core import ops")
_X = ">>> x = np.array([[1., 2.], [3., 4.]])"


def _docstring(summary: str, call: str, result: str) -> str:
    setup = _SETUP + ((_X,) if _reads_x(call) else ())
    lines = (*setup, ">>> " + call, *result.splitlines())
    return summary + "\n\nExample:\n" + "".join("    " + line + "\n" for line in lines)


def _reads_x(call: str) -> bool:
    # ``x`` as a name of its own (not inside "ij,j->i" or a longer name)
    code = call.replace('"ij,j->i"', "")
    return any(not (code[i - 1:i].isalnum() or code[i + 1:i + 2].isalnum())
               for i, ch in enumerate(code) if ch == "x")


DOCS: dict[str, str] = {name: _docstring(*entry) for name, entry in _TABLE.items()}


def document_ops(namespace: dict[str, Any]) -> None:
    """Give each op of ``namespace`` named in ``DOCS`` its docstring (on the op's own class).

    Example:
        >>> from funsor_core import ops
        >>> ops.logaddexp.__doc__.startswith("Elementwise ``log(exp(x) + exp(y))``")
        True
    """
    for name, doc in DOCS.items():
        op = namespace.get(name)
        if op is not None:
            type(op).__doc__ = doc
