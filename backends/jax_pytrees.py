"""Every funsor term class a jax pytree.

Arrays and subterms are children; names, domains, ops and the rest of the structure are
static aux data, so ``jax.jit`` traces once per term structure. Loaded by ``backends.jax``
and, without the rest of the jax backend, as soon as jax is imported in a process that has
imported funsor_core (``backends.jax_import``): a numpy Tensor passed to a jitted
function is then a pytree although no jax array has been seen yet.

Example:
    >>> import jax, numpy as np
    >>> import funsor_core as fc
    >>> jax.tree_util.tree_leaves(fc.Tensor(np.zeros(2), {"i": fc.Bint[2]}))[0].shape
    (2,)
    >>> jax.jit(lambda x: {"i": fc.Bint[2], "x": x})(1.0)["i"]
    Bint[2]
"""

from __future__ import annotations

import jax

from funsor_core.domains import Domain
from funsor_core.engine.backend import on_term_class


def _register_pytree(cls) -> None:
    jax.tree_util.register_pytree_node(cls, cls.tree_flatten, cls.tree_unflatten)


on_term_class(_register_pytree)
# A domain is structure, a pytree without leaves: a result that names domains (a dict of
# inputs, ``fc.moments(g).reals``) returns from a jitted function as it was.
jax.tree_util.register_pytree_node(Domain, lambda d: ((), d), lambda d, _: d)
