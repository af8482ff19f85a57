"""``sharded(mesh, plates={name: mesh_axis}, time={name: mesh_axis})``: the interpretation
under which reductions over plates and Markov products over time named here run split over
the devices of a device mesh (a ``jax.sharding.Mesh``), with the values of one device.

Each named dimension lives on one mesh axis (or a tuple of them). Inside the block, and under
``jax.jit``:

- a reduction (``Reduce``, a ``Contraction``: what ``sum_product``, ``einsum`` and
  ``Funsor.reduce`` build) over a sharded plate runs as the local reduction on each device's
  block, then ONE collective: an all-reduce (``psum``/``pmax``/``pmin``) of the reduced
  size for ``add``/``max``/``min``, an all-gather of one reduced-size block per device for
  ``logaddexp`` (each device's log-sum, combined after a max shift: one collective instead
  of the two dependent all-reduces of ``pmax`` then ``psum``) and ``mul``; several sharded
  plates reduced together are split at once, each over its own mesh axes, and the one
  collective runs over all of them; a product of Gaussians over a sharded plate
  (``Reduce(add, g, plates)``) gathers each device's partial product, compressed to at
  most ``n`` rows (``.gaussian_plates``); a Contraction with a Gaussian among its terms is
  left unsharded;
- a ``MarkovProduct`` of Tensors or of Gaussians (either semiring: ``logaddexp, add`` or
  ``max, add``, Viterbi) over a sharded time axis runs as a three-phase scan: each device
  multiplies its block of steps with the library's chain kernel, ONE all-gather brings the
  ``K x K`` summary of every device (for a Gaussian: its square root, packed) to all of
  them, and a scan over the ``P`` summaries gives the product. The fix-up phase is the
  derivative of that program: the marginals and Viterbi paths of ``markov_marginals`` /
  ``markov_map`` (derivatives of the chain's total) run through it, with no further
  collective when ``T`` splits evenly; so does ``jax.grad`` (of a Tensor chain's log Z, of
  a Gaussian chain in either semiring: one device's gradient);
- a switching ``MarkovProduct`` (a sum of Gaussians and Tensors with discrete and real
  step pairs) over a sharded time, with ``moment_matching`` entered OUTSIDE ``sharded``:
  each device composes its block by the one-device pairwise scan (each middle switch state
  collapsed by moment matching), ONE all-gather brings one moment-matched Gaussian and
  Tensor per end-state pair (``P K^2 (D + D^2 + 1)`` numbers) to every device, which
  composes them by the same scan; ``T = P L + R`` leaves the last ``R < P`` steps to every
  device, appended at the end (no padding: a switching chain has no identity step). Where
  the blocks reproduce the one-device tree (``P`` and ``L`` powers of two, ``R`` zero or a
  power of two) the value is one device's; elsewhere the association, and so the
  moment-matched value, differ within the approximation's own error (``.mixed_chains``).

Sizes not divisible by the number of devices leave the last devices' blocks padded, and each
masks its padding (the reduction's unit for a plate, identity matrices for a chain, a carry
kept in place for a Gaussian chain), which changes no value. The interpretation falls back
to whatever was active when it was entered (``exact`` by default), so what it does not shard
is computed as before.

Alternatives considered: a context setting read by the algorithms (``sum_product`` asking
where a plate lives) would put device logic in every algorithm; sharding the input arrays
alone (``NamedSharding``) leaves the partitioning of reductions and scans to XLA's
propagation, which cannot split a sequential scan over time; a mesh axis per term field
(penzai's named axes) needs every term to carry placement. An interpretation keeps the
language unchanged: the same program, entered under ``sharded(...)``.

Singh's synchronously partitioned MCMC (ch. 4) is a function of its own,
``partitioned_mcmc`` (``.partitioned_mcmc``): its partitions are a batch sharded over a mesh
axis, one all-gather of the moved values per round.

- Monte Carlo particles (``particles={"particle": "x"}``, entered INSIDE ``MonteCarlo(rng_key,
  particle=Bint[N])``): an ``Integrate`` is estimated particle by particle, each with its
  own key split from the Monte Carlo's, each device its own block of particles, with no
  communication until the estimate is reduced (``.particles`` says how; the same key gives
  the same estimate on every mesh). The order matters: entered outside ``MonteCarlo``,
  ``sharded`` never sees the ``Integrate`` (Monte Carlo draws first), and the particles are
  drawn on one device, with the same values as without ``sharded``.

Independent MCMC chains of the loopy-graph sampler split over a mesh axis are a function of
their own too, ``sharded_chains`` (``.mcmc_chains``): each chain its own key, no collective.

Posterior paths of a Tensor chain drawn by the adjoint tape (``forward_backward(ops.sample,
...)``, ``AdjointTape``) under ``sharded``: the tape's chain runs through the three-phase
scan (one all-gather of the ``P`` summaries) and the paths are one device's with the same
key (tested on 8 devices, T = 12).

Not implemented (raises NotImplementedError, saying why): a switching chain over a sharded
time without ``moment_matching`` (the exact mixture: a block's summary has ``K^(L-1)``
Gaussians per end-state pair, growing with the block) or in ``(max, add)``; any other chain
with real inputs that is neither a Gaussian nor a switching chain (issue #33).

Several hosts (a cluster): every process calls ``jax.distributed.initialize(coordinator
address, num_processes, process_id)`` before anything else touches jax (on CPU hosts also
``jax.config.update("jax_cpu_collectives_implementation", "gloo")``), builds the mesh over
``jax.devices()`` (all hosts' devices), and runs the same program with the same inputs;
the results are replicated, each process reads its copy (``x.addressable_data(0)``).
``tests/algorithms/sharding`` runs two processes on localhost this way.

Example:
    >>> s = sharded("a mesh", plates={"data": "x"}, time={"t": ("y", "z")})
    >>> s.plates, s.time, s.chain()[0]
    ({'data': ('x',)}, {'t': ('y', 'z')}, 'sharded')
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from funsor_core.engine.backend import backend_of
from funsor_core.engine.interpreter import ENTERED, Interpretation

__all__ = ["Sharded", "sharded"]

_NO_SPMD = ("sharded(...) splits arrays over a device mesh, which the {backend} backend cannot "
            "do: build the factors from jax arrays (fc.set_backend('jax'))")
_BAD_AXIS = ("sharded(...): {what} '{name}' is mapped to mesh axis {axis!r}, but the mesh has "
             "axes {sizes}; map it to one of them, e.g. {example}={{'{name}': "
             "'{first}'}}")
_UNUSED = ("sharded(...): {what} {names} named in sharded(...) never occurred in a reduction "
           "or Markov product inside the block, so nothing ran split over mesh axes {axes}; the "
           "block reduced {seen} (a misspelt name?). The mesh has axes {mesh}")
_WRONG_ROLE = ("sharded(...): {what} '{name}' is {role} inside the block, so nothing ran split "
               "over mesh axes {axes}: pass it as {right}={{'{name}': {given}}}")
_SHARED_AXIS = ("sharded(...): '{a}' and '{b}' are reduced together but both live on mesh axis "
                "{axis!r}; one array dim per mesh axis: map them to different axes")


def _axes_map(what: str, mapping) -> dict:
    out = {}
    if mapping is not None and not isinstance(mapping, Mapping):  # a set or list of names
        what = {"plate": "plates"}.get(what, what)  # the argument's name
        raise TypeError(f"sharded(...): {what} must be a dict from each name to its mesh axis, "
                        f"e.g. {{'data': 'x'}}; got {type(mapping).__name__} {mapping!r}")
    for name, given in dict(mapping or {}).items():
        # Only a str or a tuple/list of them names mesh axes (an int such as 0 is no axis).
        axes = (given,) if isinstance(given, str) else \
            tuple(given) if isinstance(given, (tuple, list)) else (given,)
        if not axes or not all(isinstance(a, str) for a in axes):
            raise TypeError(f"sharded(...): {what} '{name}' needs a mesh axis name (or a tuple "
                            f"of them), the name given in jax.sharding.Mesh(devices, names), "
                            f"got {given!r}")
        out[name] = axes
    return out


class Sharded(Interpretation):
    """Reductions over sharded plates and chains over sharded time as local blocks plus one
    collective (see the module docstring); falls back to what was active when entered.

    Args:
        mesh: a device mesh (``jax.sharding.Mesh``).
        plates: ``{plate name: mesh axis or tuple of mesh axes}``.
        time: ``{time name: mesh axis or tuple of mesh axes}`` of Markov products.
        particles: ``{sample input name: mesh axis or tuple of mesh axes}`` of a Monte Carlo
            interpretation entered outside this one (``.particles``).

    Example:
        >>> Sharded("a mesh", plates={"i": "x"}).mesh_axes("i")
        ('x',)
    """

    stateful = True

    def __init__(self, mesh, plates: dict | None = None, time: dict | None = None,
                 particles: dict | None = None) -> None:
        super().__init__("sharded", fallback=ENTERED)
        self.mesh = mesh
        self.plates = _axes_map("plate", plates)
        self.time = _axes_map("time", time)
        self.particles = _axes_map("particles", particles)
        self.seen: set | None = None  # the names reduced inside the current block
        self.reduced: set = set()  # of those, the reduced names (not inputs, not chain times)
        self.chain_times: set = set()  # and the times of Markov products
        for (a, x), (b, y) in ((("plates", self.plates), ("time", self.time)),
                               (("plates", self.plates), ("particles", self.particles)),
                               (("time", self.time), ("particles", self.particles))):
            both = sorted(x.keys() & y.keys())
            if both:
                raise ValueError(f"sharded(...): {both} named both as {a} and as {b}; a name "
                                 "is one of plates, time or particles")

    def note(self, names, *terms, chain: bool = False) -> None:
        """Record ``names`` (reduced, or with ``chain`` a Markov product's time) and the
        inputs of ``terms`` as seen inside the block, for the checks on leaving it (a
        misspelt plate or time name, a plate passed as a time or the other way round)."""
        if self.seen is not None:
            self.seen.update(names)
            (self.chain_times if chain else self.reduced).update(names)
            for t in terms:
                self.seen.update(getattr(t, "inputs", ()))

    def __enter__(self) -> Sharded:
        self.seen, self.reduced, self.chain_times = set(), set(), set()
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        seen, self.seen = self.seen, None
        super().__exit__(*exc)
        if exc[0] is not None or not seen:  # an error already, or nothing reduced (or traced)
            return
        # A plate rule splits only plates, the chain rule only times: a name given in the
        # other role runs on one device, with the right value but without the intent.
        for what, right, names, role, other in (
                ("time", "plates", self.time, "reduced as a plate and is the time of no "
                 "Markov product", self.chain_times),
                ("plate", "time", self.plates, "the time of a Markov product and reduced as "
                 "no plate", self.reduced)):
            wrong = sorted(n for n in names if n not in other and n in (
                self.reduced if what == "time" else self.chain_times))
            if wrong:
                n = wrong[0]
                given = names[n][0] if len(names[n]) == 1 else names[n]
                raise ValueError(_WRONG_ROLE.format(what=what, name=n, role=role,
                                                    axes=list(names[n]), right=right,
                                                    given=repr(given)))
        declared = {**self.plates, **self.time}
        # A name declared for programs this one is not (a shared wrapper) is fine while some
        # declared name is used; raise when none is (nothing ran split: the intent is lost)
        # or when an unused name is close to a reduced name nobody declared (a misspelling).
        undeclared = sorted(seen - declared.keys())
        none_used = not (declared.keys() & seen)
        for what, names in (("plate", self.plates), ("time", self.time)):
            unused = sorted(n for n in names if n not in seen and (
                none_used or difflib.get_close_matches(n, undeclared, n=1, cutoff=0.6)))
            if unused:
                shape = getattr(self.mesh, "shape", None)
                mesh = dict(shape) if isinstance(shape, Mapping) else shape
                raise ValueError(_UNUSED.format(
                    what=what + ("s" if len(unused) > 1 else ""), names=unused,
                    axes=sorted({a for n in unused for a in names[n]}), seen=sorted(seen),
                    mesh=mesh))

    def mesh_axes(self, name: str) -> tuple:
        """The mesh axes that split ``name`` (a plate or a time name)."""
        return self.plates.get(name) or self.time.get(name) or self.particles[name]

    def spmd(self, array, names: list[str]):
        """The backend of ``array`` and the number of devices splitting each of ``names``,
        checked: the backend runs over a mesh, the axes exist, no two names share one."""
        backend = backend_of(array)
        if not getattr(backend, "SHARDS", False):
            raise TypeError(_NO_SPMD.format(backend=backend.__name__.rsplit(".", 1)[-1]))
        sizes = backend.mesh_sizes(self.mesh)
        seen: dict = {}
        shards = []
        for name in names:
            count = 1
            for axis in self.mesh_axes(name):
                if axis not in sizes:
                    what, example = (("plate", "plates") if name in self.plates else
                                     ("time", "time") if name in self.time else
                                     ("particles", "particles"))
                    raise ValueError(_BAD_AXIS.format(what=what, name=name, axis=axis,
                                                      sizes=sizes, example=example,
                                                      first=next(iter(sizes))))
                if axis in seen:
                    raise ValueError(_SHARED_AXIS.format(a=seen[axis], b=name, axis=axis))
                seen[axis] = name
                count *= sizes[axis]
            shards.append(count)
        return backend, shards


def sharded(mesh, plates: dict | None = None, time: dict | None = None,
            particles: dict | None = None) -> Sharded:
    """The ``Sharded`` interpretation for ``mesh`` (the module docstring has the design):
    inside ``with sharded(...):``, under ``jax.jit`` or eagerly on jax arrays, reductions over
    the named plates and Markov products over the named times run split over the devices,
    with the values (and gradients) of one device.

    Args:
        mesh: a ``jax.sharding.Mesh``, e.g. ``Mesh(np.array(jax.devices()), ("x",))``.
        plates: ``{plate name: mesh axis or tuple of axes}``, e.g. ``{"data": "x"}``.
        time: ``{time name: mesh axis or tuple of axes}`` of Markov products.
        particles: ``{sample input: mesh axis}`` of a ``MonteCarlo`` entered outside.

    The factors must be jax arrays (another backend raises a ``TypeError``); a size that the
    devices do not divide is padded and masked (no value changes); a name that never occurs
    in a reduction in the block, a plate given as a time (or a Markov product's time given
    as a plate), or a mesh axis the mesh lacks, raises a ``ValueError``.

    Example:
        On a mesh of emulated CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_
        count=4`` before jax starts), a compile of ~1 s, too long for a doctest (run in
        ``tests/algorithms/sharding/test_user_tries_h90.py``, ``examples/sharded.py``)::

            mesh = jax.sharding.Mesh(np.array(jax.devices()), ("x",))
            lik = fc.Tensor(jnp.asarray(table), {"data": fc.Bint[10], "z": fc.Bint[3]})
            with sharded(mesh, plates={"data": "x"}):   # 10 rows on 4 devices: padded
                z = sum_product(ops.logaddexp, ops.add, [lik], {"data", "z"}, {"data"})

        The names map to mesh axes, checked when ``sharded`` is called:

        >>> sharded("a mesh", plates={"data": "x"}, time={"t": ("x", "y")}).time
        {'t': ('x', 'y')}
        >>> sharded("a mesh", plates={"data": 0})
        Traceback (most recent call last):
        ...
        TypeError: sharded(...): plate 'data' needs a mesh axis name (or a tuple of them), ...
    """
    return Sharded(mesh, plates=plates, time=time, particles=particles)
