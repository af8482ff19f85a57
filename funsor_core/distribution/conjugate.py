"""Conjugate pairs as terms: the compound distribution (the marginal likelihood) and the
posterior of a prior and a likelihood whose parameter is the prior's value.

=========================  ===========  ==============================  ======================
prior(value=p)             likelihood   compound (p summed out)         posterior, given x
=========================  ===========  ==============================  ======================
Beta(a, b)                 Bernoulli    Bernoulli(a / (a + b))          Beta(a + x, b + 1 - x)
Beta(a, b)                 Binomial(n)  BetaBinomial(a, b, n)           Beta(a + x, b + n - x)
Dirichlet(a)               Categorical  Categorical(a / sum(a))         Dirichlet(a + onehot x)
Dirichlet(a)               Multinomial  DirichletMultinomial(a, n)      Dirichlet(a + x)
Gamma(a, r)                Poisson      GammaPoisson(a, r)              Gamma(a + x, r + 1)
Gamma(a, r)                Poisson(c p) GammaPoisson(a, r / c)          Gamma(a + x, r + c)
Gamma(a0, r)               Gamma(a, p)  compound gamma, below           Gamma(a0 + a, r + x)
=========================  ===========  ==============================  ======================

so that ``prior(p) + likelihood(p, x) = posterior(p) + compound(x)`` exactly. The compound
gamma (a Gamma whose rate has a Gamma prior; ``x / r`` is beta-prime) has no family here: it
is the expression ``(a - 1) log x + a0 log r - (a + a0) log(x + r) - log B(a, a0)`` of
``x``, a Tensor once ``x`` is observed. A Poisson's rate
may be ``c * p``, ``c`` a constant (an exposure): what a plate of Poisson counts collapses to.
The rules in ``interpretations/exact/conjugate.py`` decide when to apply these;
``collapse_plate`` turns a plate of i.i.d. observations into one likelihood of their
sufficient statistics (plus a Tensor that does not depend on the parameter), so that a prior
meets a whole data set at once.

Example:
    >>> from funsor_core.distribution import Beta, BernoulliProbs
    >>> p = fc.Variable("p", fc.Real)
    >>> prior, lik = Beta(2.0, 3.0, value=p), BernoulliProbs(p, value=1.0)
    >>> type(compound(prior, lik)).__name__, posterior(prior, lik).concentration1.item()
    ('Tensor', 3.0)
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.distribution.continuous import Beta, Dirichlet, Gamma
from funsor_core.distribution.discrete import (
    BernoulliProbs,
    BetaBinomial,
    Binomial,
    Categorical,
    DirichletMultinomial,
    GammaPoisson,
    Multinomial,
    Poisson,
    _is_count,
)
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.contraction import Contraction

__all__ = ["CONJUGATE", "conjugate_param", "conjugate_pairs", "compound", "posterior",
           "collapse_plate"]


def _beta_bernoulli(prior, lik):
    a, b = prior.concentration1, prior.concentration0
    return BernoulliProbs(a / (a + b), lik.value)


def _beta_bernoulli_post(prior, lik):
    x = lik.value
    return Beta(prior.concentration1 + x, prior.concentration0 + (1.0 - x), prior.value)


def _beta_binomial(prior, lik):
    return BetaBinomial(prior.concentration1, prior.concentration0, lik.total_count, lik.value)


def _beta_binomial_post(prior, lik):
    x, n = lik.value, lik.total_count
    return Beta(prior.concentration1 + x, prior.concentration0 + (n - x), prior.value)


def _dirichlet_categorical(prior, lik):
    a = prior.concentration
    return Categorical(a / a.sum(-1, True), lik.value)


def _one_hot(x: Funsor, like: Funsor) -> Funsor:
    # eye(n)[x]: the count vector of one observation x in Bint[n], on like's backend.
    n = like.output.shape[-1]
    proto = like.data if isinstance(like, Tensor) else None
    eye = Tensor(ops.new_eye(proto, n)) if proto is not None else Tensor(_eye(n))
    return eye[x]


def _eye(n: int):
    from funsor_core.engine.backend import backend_module

    return ops.new_eye(backend_module().asarray(0.0, "real"), n)


def _dirichlet_categorical_post(prior, lik):
    a = prior.concentration
    return Dirichlet(a + _one_hot(lik.value, a), prior.value)


def _dirichlet_multinomial(prior, lik):
    return DirichletMultinomial(prior.concentration, lik.total_count, lik.value)


def _dirichlet_multinomial_post(prior, lik):
    return Dirichlet(prior.concentration + lik.value, prior.value)


def scaled_variable(rate: Funsor) -> tuple:
    """``(p, c)`` where ``rate`` is ``c * p``, ``p`` a Variable and ``c`` a constant (a Number
    or Tensor); ``(p, None)`` where ``rate`` is ``p``; ``(None, None)`` otherwise.

    Example:
        >>> lam = fc.Variable("lam", fc.Real)
        >>> scaled_variable(3.0 * lam)
        (Variable('lam', Real), Number(3.0, 'real'))
    """
    if type(rate) is Variable:
        return rate, None
    if (type(rate) is Contraction and rate.red_op is None and rate.bin_op is ops.mul
            and not rate.reduced_vars and len(rate.terms) == 2):
        for p, c in (rate.terms, rate.terms[::-1]):
            if type(p) is Variable and type(c) in (Number, Tensor) and p.name not in c.inputs:
                return p, c
    return None, None


def _gamma_poisson(prior, lik):
    # int Gamma(l; a, r) Poisson(x; c l) dl = GammaPoisson(x; a, r / c).
    c = scaled_variable(lik.rate)[1]
    rate = prior.rate if c is None else prior.rate / c
    return GammaPoisson(prior.concentration, rate, lik.value)


def _gamma_poisson_post(prior, lik):
    c = scaled_variable(lik.rate)[1]
    return Gamma(prior.concentration + lik.value, prior.rate + (1.0 if c is None else c),
                 prior.value)


def _gamma_gamma(prior, lik):
    # int Gamma(l; a0, r) Gamma(x; a, l) dl
    #   = r^a0 x^(a-1) / B(a, a0) / (x + r)^(a + a0)       (the compound gamma density)
    #   = Gamma(x; a, 1) e^x Gamma(a + a0) / Gamma(a0) r^a0 / (x + r)^(a + a0):
    # Gamma(x; a, 1) carries x^(a-1) and the support (-inf for x <= 0, where log x would
    # give NaN), and log(x + r) is taken at max(x, 0) so that it stays finite there.
    a0, r, a, x = prior.concentration, prior.rate, lik.concentration, lik.value
    return (Gamma(a, 1.0, x) + x + a0 * ops.log(r) - (a + a0) * ops.log(ops.max(x, 0.0) + r)
            + ops.lgamma(a + a0) - ops.lgamma(a0))


def _gamma_gamma_post(prior, lik):
    # l^a0-1 e^(-r l) * l^a e^(-x l): Gamma(a0 + a, r + x) in l.
    return Gamma(prior.concentration + lik.concentration, prior.rate + lik.value, prior.value)


# (prior family, likelihood family) -> (the likelihood's parameter that is the prior's value,
# compound, posterior).
CONJUGATE = {
    (Beta, BernoulliProbs): ("probs", _beta_bernoulli, _beta_bernoulli_post),
    (Beta, Binomial): ("probs", _beta_binomial, _beta_binomial_post),
    (Dirichlet, Categorical): ("probs", _dirichlet_categorical, _dirichlet_categorical_post),
    (Dirichlet, Multinomial): ("probs", _dirichlet_multinomial, _dirichlet_multinomial_post),
    (Gamma, Poisson): ("rate", _gamma_poisson, _gamma_poisson_post),
    (Gamma, Gamma): ("rate", _gamma_gamma, _gamma_gamma_post),
}


def _entry(prior, lik):
    for (p_cls, l_cls), entry in CONJUGATE.items():
        if isinstance(prior, p_cls) and isinstance(lik, l_cls):
            return entry
    return None


def conjugate_param(prior, lik) -> str | None:
    """The name of ``lik``'s parameter that is ``prior``'s value, when the two are a
    conjugate pair of the table above in that role (None otherwise): the value is a
    Variable, the parameter is that Variable, and nothing else mentions it; the two have the
    same batch output shape.

    Example:
        >>> from funsor_core.distribution import Gamma, Poisson
        >>> lam = fc.Variable("lam", fc.Real)
        >>> conjugate_param(Gamma(1.0, 1.0, value=lam), Poisson(lam, value=2.0))
        'rate'
    """
    entry = _entry(prior, lik)
    if entry is None:
        return None
    name = entry[0]
    p = prior.value
    if _param_variable(lik, name) is not p or type(p) is not Variable:
        return None
    if any(p.name in t.inputs for t in prior._args[:-1]):
        return None
    if any(p.name in t.inputs for f, t in zip(lik.fields, lik._args) if f != name):
        return None
    if prior.batch_output_shape != lik.batch_output_shape:
        return None
    return name


def _param_variable(lik, name: str):
    # The Variable that is lik's parameter `name` (for a Poisson, or its rate's c * p).
    param = lik._args[lik.fields.index(name)]
    if isinstance(lik, Poisson):
        return scaled_variable(param)[0]
    return param if type(param) is Variable else None


_PRIORS = tuple({p for p, _ in CONJUGATE})
_LIKELIHOODS = tuple({lik for _, lik in CONJUGATE})
_PARAMS = tuple({entry[0] for entry in CONJUGATE.values()})


def conjugate_pairs(terms: tuple):
    """``(i, j)`` with ``terms[i]`` a prior and ``terms[j]`` its conjugate likelihood, the
    prior's value mentioned by no third term. One pass over the terms (a sum of many factors
    is searched in linear time), then a check per candidate pair.

    Example:
        >>> from funsor_core.distribution import Gamma, Poisson
        >>> lam = fc.Variable("lam", fc.Real)
        >>> terms = (Poisson(lam, value=2.0), fc.Number(1.0), Gamma(1.0, 1.0, value=lam))
        >>> list(conjugate_pairs(terms))
        [(2, 0)]
    """
    priors: dict = {}
    for i, t in enumerate(terms):
        if isinstance(t, _PRIORS) and type(t.value).__name__ == "Variable":
            priors.setdefault(t.value.name, []).append(i)
    if not priors:
        return
    for j, lik in enumerate(terms):
        if not isinstance(lik, _LIKELIHOODS):
            continue
        for name in _PARAMS:
            p = _param_variable(lik, name) if name in lik.fields else None
            if p is None or p.name not in priors:
                continue
            for i in priors[p.name]:
                if i != j and conjugate_param(terms[i], lik) is not None and sum(
                        p.name in t.inputs for t in terms) == 2:
                    yield i, j


def compound(prior, lik) -> Funsor:
    """The compound distribution of ``lik.value``: ``prior + lik`` with the prior's value
    summed out (``logaddexp``); see the table above.

    Example:
        >>> from funsor_core.distribution import Gamma, Poisson
        >>> lam = fc.Variable("lam", fc.Real)
        >>> type(compound(Gamma(2.0, 1.0, value=lam), Poisson(lam))).__name__
        'GammaPoisson'
    """
    return _entry(prior, lik)[1](prior, lik)


def posterior(prior, lik) -> Funsor:
    """The posterior of the prior's value given ``lik.value``; see the table above.

    Example:
        >>> from funsor_core.distribution import Gamma, Poisson
        >>> lam = fc.Variable("lam", fc.Real)
        >>> post = posterior(Gamma(2.0, 1.0, value=lam), Poisson(lam, value=3.0))
        >>> post.concentration.item(), post.rate.item()
        (5.0, 2.0)
    """
    return _entry(prior, lik)[2](prior, lik)


# -- plates of i.i.d. observations -----------------------------------------------------------
def collapse_plate(lik, plates: frozenset):
    """``(likelihood of the sufficient statistics, Tensor)`` whose sum equals
    ``lik.reduce(ops.add, plates)`` as a function of the parameter, or None.

    ``lik`` is a Bernoulli, Binomial, Categorical, Multinomial, Poisson or Gamma (whose rate
    is a Variable, its concentration a constant) whose probs (rate)
    do not depend on the plates, whose value (and count) are Tensors over them. The Tensor
    holds the combinatorial factors, and -inf where an observation is outside the support (so
    the identity holds there too). Bernoulli and Categorical plates become Binomial and
    Multinomial counts; N Poisson counts of rate ``l`` become one count of rate ``N * l``,
    and counts of rates ``c_i * l`` (exposures ``c_i``) one of rate ``(sum_i c_i) * l``.

    Example:
        >>> from funsor_core.distribution import BernoulliProbs
        >>> x = fc.Tensor(np.array([1.0, 0.0, 1.0]), {"i": fc.Bint[3]})
        >>> lik, rest = collapse_plate(BernoulliProbs(fc.Variable("p", fc.Real), x), {"i"})
        >>> type(lik).__name__, lik.total_count.item(), lik.value.item(), round(rest.item(), 4)
        ('Binomial', 3.0, 2.0, -1.0986)
    """
    if isinstance(lik, Gamma):
        return _collapse_gamma(lik, plates)
    if not isinstance(lik, (BernoulliProbs, Binomial, Categorical, Multinomial, Poisson)):
        return None
    probs = lik.rate if isinstance(lik, Poisson) else lik.probs
    if plates & probs.inputs.keys() and not _plated_exposure(lik, plates):
        return None
    args = [lik.value] + ([lik.total_count] if "total_count" in type(lik).params else [])
    if not all(isinstance(a, Tensor) for a in args):
        return None
    if not plates <= lik.value.inputs.keys():
        return None
    if isinstance(lik, BernoulliProbs):
        return _collapse_counts(lik, plates, Binomial, None)
    if isinstance(lik, Binomial):
        return _collapse_counts(lik, plates, Binomial, lik.total_count)
    if isinstance(lik, Categorical):
        return _collapse_counts(lik, plates, Multinomial, None)
    if isinstance(lik, Multinomial):
        return _collapse_counts(lik, plates, Multinomial, lik.total_count)
    return _collapse_poisson(lik, plates)


def _collapse_gamma(lik, plates):
    """sum_i log Gamma(x_i; a_i, l) = log Gamma(X; A, l) + sum_i [xlogy(a_i - 1, x_i) -
    lgamma(a_i)] - xlogy(A - 1, X) + lgamma(A), with X = sum_i x_i and A = sum_i a_i: the
    rest is free of the rate ``l`` (a Variable, the Gamma-Gamma conjugate's prior value)."""
    a, x = lik.concentration, lik.value
    if (type(lik.rate) is not Variable or plates & lik.rate.inputs.keys()
            or not isinstance(x, Tensor) or not isinstance(a, (Tensor, Number))
            or not plates <= x.inputs.keys()):
        return None
    inputs = {**x.inputs, **a.inputs}
    xd = align_tensor(inputs, x, expand=True)
    if isinstance(a, Number):
        a = Tensor(ops.new_full(x.data, (), a.data))
    ad = align_tensor(inputs, a, expand=True)
    axes = tuple(i for i, name in enumerate(inputs) if name in plates)
    total_x, total_a = ops.sum(xd, axes), ops.sum(ad, axes)
    rest = (ops.sum(ops.xlogy(ad - 1.0, xd) - ops.lgamma(ad), axes)
            - ops.xlogy(total_a - 1.0, total_x) + ops.lgamma(total_a))
    rest = ops.where(ops.all(xd >= 0, axes), rest, ops.full_like(rest, -math.inf))
    kept = {k: d for k, d in inputs.items() if k not in plates}
    return Gamma(Tensor(total_a, kept), lik.rate, Tensor(total_x, kept)), Tensor(rest, kept)


def _plated_exposure(lik, plates) -> bool:
    # A Poisson rate c_i * l whose exposure c_i (a Tensor) alone varies over the plates.
    if not isinstance(lik, Poisson):
        return False
    p, c = scaled_variable(lik.rate)
    return isinstance(c, Tensor) and p is not None and not plates & p.inputs.keys()


def _collapse_exposures(lik, plates):
    """sum_i log Poisson(x_i; c_i l) = log Poisson(X; C l) + sum_i [x_i log c_i - lgamma(x_i
    + 1)] - X log C + lgamma(X + 1), with X = sum_i x_i and C = sum_i c_i."""
    p, c = scaled_variable(lik.rate)
    inputs = {**lik.value.inputs, **c.inputs}
    x = align_tensor(inputs, lik.value, expand=True)
    cd = align_tensor(inputs, c, expand=True)
    axes = tuple(i for i, name in enumerate(inputs) if name in plates)
    total_x, total_c = ops.sum(x, axes), ops.sum(cd, axes)
    rest = (ops.sum(ops.xlogy(x, cd) - ops.lgamma(x + 1.0), axes) - ops.xlogy(total_x, total_c)
            + ops.lgamma(total_x + 1.0))
    rest = ops.where(ops.all(_is_count(x), axes), rest, ops.full_like(rest, -math.inf))
    kept = {k: d for k, d in inputs.items() if k not in plates}
    return Poisson(Tensor(total_c, kept) * p, Tensor(total_x, kept)), Tensor(rest, kept)


def _collapse_poisson(lik, plates):
    """sum_i log Poisson(x_i; l) = log Poisson(X; N l) + lgamma(X + 1) - sum_i lgamma(x_i + 1)
    - X log N, with X = sum_i x_i over the N observations: the rest is free of ``l``."""
    if plates & lik.rate.inputs.keys():
        return _collapse_exposures(lik, plates)
    x = lik.value
    axes = tuple(i for i, name in enumerate(x.inputs) if name in plates)
    size = math.prod(x.inputs[name].size for name in plates)
    total = ops.sum(x.data, axes)
    rest = (ops.lgamma(total + 1.0) - ops.sum(ops.lgamma(x.data + 1.0), axes)
            - total * math.log(size))
    rest = ops.where(ops.all(_is_count(x.data), axes), rest, ops.full_like(rest, -math.inf))
    kept = {k: d for k, d in x.inputs.items() if k not in plates}
    rate = lik.rate if size == 1 else float(size) * lik.rate
    return Poisson(rate, Tensor(total, kept)), Tensor(rest, kept)


def _collapse_counts(lik, plates, family, total_count):
    """Sum the counts over the plates; the Tensor is ``sum_i log C(n_i; x_i) - log C(N; X)``
    (multinomial coefficients), -inf where some ``x_i`` is outside the support."""
    x = lik.value
    categorical = isinstance(lik, Categorical)
    inputs = dict(x.inputs)
    if total_count is not None:
        inputs.update(total_count.inputs)
    data = align_tensor(inputs, x, expand=True)
    if categorical:
        k = lik.probs.output.shape[-1]
        data = ops.astype(ops.eq(ops.new_arange(data, 0, k, 1), data[..., None]), "real")
    vector = categorical or isinstance(lik, Multinomial)
    if total_count is None:  # one trial per observation
        n = ops.full_like(data[..., 0] if vector else data, 1.0)
    else:
        n = align_tensor(inputs, total_count, expand=True)
    ok = _support(data, n, vector)
    axes = tuple(i for i, name in enumerate(inputs) if name in plates)
    log_coef = _log_coef(data, n, vector)
    total_x = ops.sum(data, axes)
    total_n = ops.sum(n, axes)
    all_ok = ops.all(ok, axes)
    rest = ops.sum(log_coef, axes) - _log_coef(total_x, total_n, vector)
    rest = ops.where(all_ok, rest, ops.full_like(rest, -math.inf))
    kept = {k: d for k, d in inputs.items() if k not in plates}
    value = Tensor(total_x, kept)
    count = Tensor(total_n, kept)
    return family(count, lik.probs, value), Tensor(rest, kept)


def _support(x, n, vector: bool):
    count = _is_count(x)
    if vector:
        return ops.and_(ops.all(count, -1), ops.sum(x, -1) == n)
    return ops.and_(count, x <= n)


def _log_coef(x, n, vector: bool):
    # log n! / prod_k x_k! (a multinomial coefficient; binomial when x is a scalar count).
    if vector:
        return ops.lgamma(n + 1.0) - ops.sum(ops.lgamma(x + 1.0), -1)
    return ops.lgamma(n + 1.0) - ops.lgamma(x + 1.0) - ops.lgamma(n - x + 1.0)
