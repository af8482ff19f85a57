"""``CompressedMessages``: compressed cluster messages (Singh 2014, chapter 8.2) as the rule of
an ``Approximate`` term.

``CompressedMessages(method, k, rng_key)`` is a stateful interpretation kind that falls back to
the interpretation it was entered in. It rewrites ``Approximate(logaddexp, m, m, V)``, where
``m`` is a discrete Tensor whose inputs are exactly the names ``V`` (a cluster message that is
its own guide), to the projection of ``m`` by ``method`` (``"samples"``, ``"merged"``,
``"frak"``: ``funsor_core.algorithms.loopy.cluster_compress``) as a Tensor over the same
inputs: the dense log table of the compressed message, ``-inf`` where it puts no mass.

- ``frak`` keeps one list per set of inputs (names and domains) in the instance, so every
  ``Approximate`` of that message under the same instance grows the same list.
- ``samples`` draws from a stream of keys seeded by ``rng_key`` (each message its own draws;
  one seed, one sequence of messages).
- The last projection is kept as ``.result`` (its ``nbytes``, its ``state``).

Anything else (another op, a model other than the guide, batch or real inputs) declines.

Example:
    >>> from interpretations.cluster_messages import CompressedMessages
    >>> m = fc.Tensor(np.log(np.array([[0.5, 0.25], [0.125, 0.125]])),
    ...               {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> with CompressedMessages("merged", k=1):
    ...     q = fc.Approximate(ops.logaddexp, m, m, frozenset({"a", "b"}))
    >>> np.exp(q.data).round(4).tolist()
    [[0.5, 0.1667], [0.1667, 0.1667]]
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.loopy.cluster_compress import PROJECTIONS
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.interpreter import ENTERED, Interpretation
from funsor_core.sampling.keys import KeyStream
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import Funsor

__all__ = ["CompressedMessages"]


class CompressedMessages(Interpretation):
    """Compress cluster messages ``Approximate(logaddexp, m, m, V)`` by ``method`` (see the
    module docstring).

    Args:
        method: ``"samples"``, ``"merged"`` or ``"frak"``.
        k: draws (samples), kept configurations (merged), or the best configurations added
            per call when absent (frak; None: the MAP only, as the thesis does).
        rng_key: seeds ``samples``' draws (an int, a backend key or None).

    Example:
        >>> CompressedMessages("frak").lists
        {}
    """

    stateful = True

    def __init__(self, method: str, k: int | None = None, rng_key=None) -> None:
        super().__init__("compressed_messages", fallback=ENTERED)
        if method not in PROJECTIONS:
            raise ValueError(f"unknown compression method {method!r}; choose one of "
                             f"{sorted(PROJECTIONS)}")
        if k is None and method != "frak":
            raise ValueError(f"CompressedMessages({method!r}) needs k, the number of "
                             f"{'draws' if method == 'samples' else 'kept configurations'}")
        self.method, self.k = method, k
        self.keys = KeyStream(rng_key)
        self.lists: dict = {}
        self.result = None


# Approximate(logaddexp, m, m, V) ~ the compressed message of m over V (m a discrete Tensor
# over exactly V): the same log Z for merged and FRAK, a subset of m's support for samples.
@CompressedMessages.register(Approximate, type(ops.logaddexp), Funsor, Tensor, frozenset)
def compressed_messages_approximate_tensor(cm, op, model, guide, approx_vars):
    names = frozenset(v if isinstance(v, str) else v.name for v in approx_vars)
    if (model is not guide or frozenset(guide.inputs) != names or guide.dtype != "real"
            or guide.output.shape or any(d.dtype == "real" for d in guide.inputs.values())):
        return None
    if cm.method == "frak":
        key = tuple(guide.inputs.items())
        cm.result = PROJECTIONS["frak"](guide.data, k=cm.k, state=cm.lists.get(key))
        cm.lists[key] = cm.result.state
    elif cm.method == "samples":
        cm.result = PROJECTIONS["samples"](guide.data, k=cm.k, rng_key=cm.keys.next(guide))
    else:
        cm.result = PROJECTIONS[cm.method](guide.data, k=cm.k)
    return Tensor(cm.result.log_table, guide.inputs)
