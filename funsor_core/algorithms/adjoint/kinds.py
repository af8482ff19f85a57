"""The interpretations of a backward pass: approximations at a point (argmax, mean,
Laplace), posterior sampling and preconditioning.

Their rules live in ``interpretations/approximations.py`` (they rewrite ``Approximate``
terms); the interpretations are declared here, with their state, so that the algorithms
built on them (``forward_backward`` with ``ops.sample``, the recipes, ``infer_discrete``) can
enter them.

Example:
    >>> s = PosteriorSample(rng_key=0, particle=fc.Bint[3])
    >>> s.sample_inputs, s.chain()[0]
    ({'particle': Bint[3]}, 'posterior_sample')
"""

from __future__ import annotations

from funsor_core.algorithms.adjoint.points import KeyStream
from funsor_core.domains import Domain, Reals
from funsor_core.engine.interpreter import ENTERED, Interpretation, get_interpretation
from funsor_core.terms.base import Variable

__all__ = ["NotOnTapeError", "PosteriorSample", "Precondition", "approximating",
           "approximation_active", "argmax_approximate", "laplace_approximate",
           "mean_approximate", "unrecorded"]

_NOT_BINT = ("PosteriorSample(**sample_inputs): '{name}' is {domain!r}; sample inputs are new "
             "Bint inputs that index independent draws, e.g. "
             "PosteriorSample(rng_key=0, particle=Bint[1000])")

def approximating(kind: type) -> type:
    """Mark an interpretation kind as one that rewrites ``Approximate`` terms (a class
    decorator, or call it on ``type(instance)``): a backward pass builds ``Approximate``
    terms (and their guides) only when such an interpretation is in the active chain, so
    that exact marginals pay nothing for them.

    Example:
        >>> approximating(type(argmax_approximate)).approximates
        True
    """
    kind.approximates = True
    return kind


def approximation_active() -> bool:
    """Whether an interpretation marked ``approximating`` is in the active chain.

    Example:
        >>> approximation_active()
        False
        >>> with argmax_approximate:
        ...     approximation_active()
        True
    """
    interp = get_interpretation()
    while interp is not None:
        if getattr(type(interp), "approximates", False):
            return True
        interp = interp.base
    return False


argmax_approximate = Interpretation("argmax_approximate", fallback=ENTERED, doc="""
Point-approximate each ``Approximate`` at the argmax of its guide (MAP in a backward pass).

Falls back to the interpretation it was entered in.

Example:
    >>> m = fc.Tensor(np.array([0.0, 2.0, 1.0]), {"i": fc.Bint[3]})
    >>> from funsor_core.approximations import argmax_approximate
    >>> with argmax_approximate:
    ...     a = fc.Approximate(ops.logaddexp, m, m, "i")
    >>> [float(a(i=k).data) for k in range(3)]  # a point mass at i = 1, weighted m(i=1)
    [-inf, 2.0, -inf]
""".strip("\n"))

mean_approximate = Interpretation("mean_approximate", fallback=ENTERED, doc="""
Point-approximate each ``Approximate`` at the mean of its guide (real variables).

Example:
    >>> g = fc.Gaussian(mean=np.array([1.5]), precision=np.array([[4.0]]),
    ...                 inputs={"x": fc.Real})
    >>> from funsor_core.approximations import mean_approximate
    >>> with mean_approximate:
    ...     a = fc.Approximate(ops.logaddexp, g, g, "x")
    >>> float(a(x=1.5).data), float(a(x=1.0).data)  # a point mass at the mean
    (0.0, -inf)
""".strip("\n"))

laplace_approximate = Interpretation("laplace_approximate", fallback=ENTERED, doc="""
Replace each ``Approximate`` by the model's Gaussian (Laplace) approximation at the guide's
mode; exact for models quadratic in the approximated variables.

Example:
    >>> from funsor_core.approximations import laplace_approximate
    >>> g = fc.Gaussian(mean=np.array([1.5]), precision=np.array([[4.0]]), inputs={"x": fc.Real})
    >>> with laplace_approximate:  # the model is quadratic in x: its own Laplace approximation
    ...     type(fc.Approximate(ops.logaddexp, g, g, "x")).__name__
    'Gaussian'
""".strip("\n"))

for _interp in (argmax_approximate, mean_approximate, laplace_approximate):
    approximating(type(_interp))
del _interp


@approximating
class PosteriorSample(Interpretation):
    """Draw exact posterior samples in a backward pass (forward filter, backward sample).

    Each ``Approximate(logaddexp or sample, model, guide, V)`` that the backward pass builds
    becomes ``model + Delta(V = draw from guide)``: the guide is the local posterior of ``V``
    given the points already drawn, so the draws, in the order of the backward pass, form a
    joint sample of the posterior. ``sample_inputs`` (names to ``Bint[n]``) draws that many
    independent samples at once; ``rng_key`` (an int seed, a numpy or torch generator, a jax
    key) makes runs reproducible; a sample input that is not a ``Bint`` domain raises a
    ``TypeError`` here, as ``MonteCarlo`` does. Unlike a Monte Carlo interpretation it adds
    no importance weight: the adjoints carry the points, and ``extract_samples`` reads them.

    Example:
        >>> from funsor_core.algorithms.adjoint import forward_backward
        >>> from interpretations import lazy
        >>> f = fc.Tensor(np.log(np.array([0.2, 0.8])), {"i": fc.Bint[2]})
        >>> with lazy:
        ...     z = f.reduce(ops.logaddexp, "i")
        >>> with PosteriorSample(rng_key=0, particle=fc.Bint[1000]) as s:
        ...     _, adj = forward_backward(ops.logaddexp, ops.add, z, batch_vars=s.sample_vars)
        >>> draws = fc.extract_samples(adj[f])["i"]
        >>> round(float(draws.data.mean()), 1)  # P(i = 1) = 0.8
        0.8
    """

    stateful = True

    def __init__(self, rng_key=None, **sample_inputs) -> None:
        super().__init__("posterior_sample", fallback=ENTERED)
        for name, domain in sample_inputs.items():
            if not isinstance(domain, Domain) or domain.dtype == "real" or domain.shape:
                raise TypeError(_NOT_BINT.format(name=name, domain=domain))
            if domain.size < 1:  # a mean over no draws would divide by zero
                raise ValueError(f"PosteriorSample(**sample_inputs): '{name}' is {domain!r}; "
                                 "a sample input needs at least one draw")
        self.keys = KeyStream(rng_key)
        self.sample_inputs = dict(sample_inputs)

    @property
    def sample_vars(self) -> frozenset:
        """The sample inputs as Variables (the ``batch_vars`` of a backward pass)."""
        return frozenset(Variable(k, d) for k, d in self.sample_inputs.items())


@approximating
class Precondition(Interpretation):
    """Preconditioning in a backward pass (funsor's ``funsor.precondition.Precondition``).

    Each Gaussian ``Approximate`` that the backward pass builds is replaced by a point mass
    at a sample written as an affine function of white noise: a new real input
    ``{aux_name}_{k}`` of shape ``batch + (n,)`` per step. After the pass,
    ``combine_subs()`` maps these inputs to slices of one ``aux_name`` vector, so every
    sample is an affine function of a single standard normal vector (for HMC momenta or a
    reparameterized variational posterior).

    Example:
        >>> p = Precondition(aux_name="aux")
        >>> p.sample_inputs["aux_0"] = fc.Reals[2]
        >>> p.combine_subs()["aux_0"].inputs
        {'aux': Reals[2]}
    """

    stateful = True

    def __init__(self, aux_name: str = "aux") -> None:
        super().__init__("precondition", fallback=ENTERED)
        self.aux_name = aux_name
        self.sample_inputs: dict = {}
        self.sample_vars: set = set()

    def new_noise(self, shape: tuple) -> Variable:
        """A fresh white-noise input of shape ``shape``, recorded in ``sample_inputs``."""
        name = f"{self.aux_name}_{len(self.sample_inputs)}"
        domain = Reals[shape]
        self.sample_inputs[name] = domain
        self.sample_vars.add(Variable(name, domain))
        return Variable(name, domain)

    def combine_subs(self) -> dict:
        """The substitution of each per-step noise input by a slice of one vector
        ``aux_name`` of all their elements (in the order they were made)."""
        total = sum(d.num_elements for d in self.sample_inputs.values())
        aux = Variable(self.aux_name, Reals[total])
        subs, start = {}, 0
        for name, domain in self.sample_inputs.items():
            stop = start + domain.num_elements
            subs[name] = aux[start:stop].reshape(domain.shape)
            start = stop
        return subs


class NotOnTapeError(KeyError, ValueError):
    """The adjoint of a term that the tape did not record: the expression was already
    evaluated (an atom) when it was given, or the term, though part of the expression, was
    recorded under no form the tape can name; the unit that funsor's ``defaultdict`` gives
    would be a silently wrong marginal.

    Example:
        >>> str(NotOnTapeError("why"))
        'why'
    """

    def __str__(self) -> str:
        return str(self.args[0])


def unrecorded(kind: str, key) -> NotOnTapeError:
    """The error for the adjoint of ``key`` when the expression came evaluated (a ``kind``).

    Example:
        >>> print(unrecorded("Tensor", "f"))  # doctest: +ELLIPSIS
        forward_backward got an expression that was already evaluated (Tensor), ...
    """
    return NotOnTapeError(
        f"forward_backward got an expression that was already evaluated ({kind}), so the "
        f"tape recorded none of its factors and has no adjoint for {key!r:.80}: build the "
        "expression under `with lazy:` (as a lazy term, it is evaluated on the tape)")
