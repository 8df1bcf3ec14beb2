"""The protocol every domain implements, the measure type that carries its domain, and the registry.

A *domain* is where tokens live — the circle S¹, the sphere S² (S^{d-1} for
particles) or R^d — and owns everything that differs between them: the geometry
of points (tangent projection, retraction, geodesic distance, coordinates), its
grids and their transforms, the right-hand sides of the continuity equation on
those grids, the interaction energy, refinement and the resolution check,
sampling and plotting. Everything above this layer (``solve``, the resolution
monitor, ``particles.simulate``, ``validation.wasserstein``, the study runner and
its figures) asks the domain of the object it holds and never tests a class.

Two small interfaces: :class:`Domain` (one instance per domain, stateless) and
:class:`Grid` (a discretisation of it). Measures carry their domain:
``Density.domain``, ``Measure.domain``, ``particles.Trajectory.domain``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from ..core import checks

__all__ = ["Domain", "Grid", "Measure", "PointSums", "Crossover", "POINT_SUMS_TOLERANCE", "point_sums_pay_off",
           "effective_count", "Diagonal", "register", "unregister", "get", "infer", "unit_sphere", "for_manifold",
           "of_model", "sphere_of_dim"]


#: digits as superscripts, for the domains' symbols (S², ℝ³)
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


#: Why a domain's density solvers refuse β < 0 unless it says otherwise (:attr:`Domain.repulsion_refusal`)
REPULSION_REFUSAL = ("repulsive attention (β < 0) is solved as a density on the circle only: the spectral sums, "
                     "truncation degrees and error bounds of the other domains' grids and of the Lagrangian measure "
                     "are derived for kernels e^{β⟨x,y⟩} with β >= 0 (multipliers positive and decreasing in the "
                     "degree), which β < 0 breaks (their signs alternate); particles on S^{d-1} take any real β "
                     "(particles.simulate: the pairwise, quadrature and fused sums)")


class Diagonal(NamedTuple):
    """A linear operator diagonal in coordinates z = encode(values): A(values) = decode(eigenvalues · encode(values)),
    with decode(encode(v)) = v on the grid's functions (:meth:`Grid.laplacian`)."""

    encode: Callable
    decode: Callable
    eigenvalues: np.ndarray


class PointSums(NamedTuple):
    """The spectral sums of a domain for weighted point sets and zonal models (the ``spectral`` strategy of particles
    and of the Lagrangian measure): O(n L) on the circle, O(n L²) on S², L = ``degree(β)`` set by β alone.

    ``field(points, weights, queries, beta, normalized, c) -> (X, bound)`` (``bound`` a certified bound on the
    truncation error per query); ``field_and_divergence(...) -> (X, div X)``; ``excess_energy(points, weights, β)``
    e^{-β}(E_β − m²/2β); ``pays_off(n, beta, weights=None)``: whether ``strategy="auto"`` takes them for n particles
    of these weights (the measured :class:`Crossover` and the error bound :data:`POINT_SUMS_TOLERANCE`:
    :func:`point_sums_pay_off`);
    ``directions``: whether ``field`` takes any non-zero vectors as points and queries and sums at their directions
    y/|y| (the sphere's 0-homogeneous extension, so a caller need not retract a copy of 10⁶ rows first).
    """

    degree: Callable
    field: Callable
    field_and_divergence: Callable
    excess_energy: Callable
    pays_off: Callable
    directions: bool = False


#: The error bound at which a domain's point sums replace the pairwise sums under ``strategy="auto"``: their
#: a-priori bound on the SA field error at the particles themselves (any configuration of n particles of equal
#: weights, or of weights whose effective count Σ|w|/min|w| is n), relative to |c|, the SA speed's bound. The
#: per-query bound of a run is ``field_error_bound``.
POINT_SUMS_TOLERANCE = 1e-9


class Crossover(NamedTuple):
    """The particle count from which a domain's point sums beat its pairwise sums for n particles (their field at the
    particles themselves, one thread): ``max(floor, ceil(per_degree · (L + 1)))`` at the point sums' degree L = L(β).

    A *measured* ratio of two costs, re-measured by ``python benchmarks/bench_cost_curves.py --crossover`` (it prints
    the values to store here); a faster point sum lowers it, a faster pairwise kernel raises it."""

    floor: int
    per_degree: float

    def at(self, degree: int) -> int:
        return max(int(self.floor), int(np.ceil(self.per_degree * (degree + 1))))


def effective_count(n: int, weights=None) -> float:
    """Σ|w|/min|w| over the particle axis (the last) of ``weights`` (the largest over a batch's sequences): the count
    of equal weights whose smallest share Σ|w|/n the smallest weight has (n for equal weights, ``inf`` with a zero
    weight); n where ``weights`` is None (equal weights)."""
    if weights is None:
        return float(n)
    w = np.abs(np.asarray(weights, dtype=float))
    total, least = w.sum(axis=-1), w.min(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(least > 0, total / np.where(least > 0, least, 1.0), np.inf)
    return float(np.max(ratio))


def point_sums_pay_off(crossover: Crossover, degree: Callable, self_bound: Callable) -> Callable:
    """``pays_off(n, beta, weights=None)`` of :class:`PointSums`: n at or above the measured ``crossover`` at the
    degree L(β), and the a-priori bound ``self_bound(n_eff, beta)`` on the field error at the particles within
    :data:`POINT_SUMS_TOLERANCE` (else the pairwise sums, exact to round-off). The bound rests on the smallest share
    of the query's own term in K_β*μ, min|w|/Σ|w|, so it takes the :func:`effective_count` n_eff = Σ|w|/min|w| of
    the ``weights`` (n for equal weights; ``inf`` with a zero weight, whose own term is nothing: the domain's bound
    then holds only where it does not rest on that term, e.g. the circle at β < 0)."""

    def pays_off(n: int, beta: float, weights=None) -> bool:
        # the bound first: where there is none (inf; S² at β < 0) the degree need not exist
        try:
            return self_bound(effective_count(n, weights), beta) <= POINT_SUMS_TOLERANCE and \
                n >= crossover.at(degree(beta))
        except checks.DegreeBeyondReach:  # a kernel too sharp for harmonics: the pair sums, exact at any β
            return False

    return pays_off


class Grid(abc.ABC):
    """A discretisation of a domain: nodes, quadrature weights and what the solver needs of them.

    Attributes every grid has: ``domain`` (its :class:`Domain`), ``dim`` (the
    ambient dimension d of its points), ``shape``, ``points`` (``shape + (d,)``),
    ``weights`` (``shape``; the grid measure of a density ρ is Σ ρ_j w_j δ_{x_j}),
    ``n`` (the resolution parameter refinement doubles, called
    ``resolution_name``: n on the circle, lmax on S²) and ``spacing`` (the
    length the CFL step compares speeds with).
    """

    domain: "Domain"
    dim: int

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, ...]: ...

    @abc.abstractmethod
    def integrate(self, values): ...

    def values_of(self, f) -> np.ndarray:
        """``f`` (a function of points, shape (..., d) → (...)) at the nodes: ``f(points)``; the zonal grid evaluates
        it on its rings and refuses a function that is not zonal."""
        return np.asarray(f(self.points), dtype=float)

    @abc.abstractmethod
    def refined(self, factor: int = 2) -> "Grid":
        """The grid of ``factor`` times the resolution (``ValueError`` where a grid is not refined)."""

    @abc.abstractmethod
    def resample(self, values, n: int) -> np.ndarray:
        """Values on the grid of resolution ``n`` of the same kind."""

    @abc.abstractmethod
    def interpolate(self, values, points) -> np.ndarray:
        """The density represented by ``values`` at points of the domain."""

    def laplacian(self) -> "Diagonal":
        """The grid's Laplacian (Laplace–Beltrami on S¹ and S²; the 3-point Laplacian with ρ = 0 beyond the box in R^d)
        as a :class:`Diagonal` operator: what the diffusion DΔρ of a noisy model is integrated in (docs/MATH.md §7)."""
        raise NotImplementedError(f"no Laplacian on {self!r}")

    def linear_transport_refusal(self) -> str | None:
        """Why :meth:`linear_transport` is not available on this grid, or None where it is (what a common noise's
        density solver asks first, MATH.md §13)."""
        return (f"the push-forward of a density on {self!r} by a linear layer's map u ↦ e^A u/|e^A u| (common noise) "
                "is not implemented on this grid")

    def linear_transport(self, values, B, spectrum=None) -> np.ndarray:
        """The density B_#ρ pushed forward by u ↦ Bu/|Bu| (B a d×d matrix with det B > 0), sampled on this grid: the
        exact flow map of a common noise over a step (:mod:`meanfield.models.common_noise`). ``spectrum``:
        :meth:`spectrum` of ``values``, if known (the resolution check's, which then spares the map its analysis)."""
        raise NotImplementedError(self.linear_transport_refusal())

    def spectrum(self, values):
        """What the resolution check and the energy both read of ``values``: the expansion's coefficients on
        the spectral grids, computed once per state and passed to :meth:`resolution` and
        :meth:`Domain.excess_energy` as ``spectrum``; None (the default) where they read the values."""
        return None

    def marginals(self, values):
        """The one-dimensional laws of the factors of a density with these ``values`` on a product grid, a tuple of
        :class:`~meanfield.domains.marginals.Marginal` (each its law as the grid represents it and how particles'
        points in R^d read its coordinate), which ``validation.marginal_distances`` compares with particles; None
        where the grid has none (the default: a grid of one domain is compared as a whole)."""
        return None

    def sign_check(self, values) -> tuple[float, float, str]:
        """(lowest, reference, words) for the monitor's sign check, lowest >= −neg_tol × reference: by default the
        smallest nodal value against the mean density ∫ρ/∫1, in the words "min {lowest}, mean {reference}"."""
        vmin, mean = float(np.min(values)), float(self.integrate(values)) / float(np.sum(self.weights))
        return vmin, mean, f"min {vmin:.3g}, mean {mean:.3g}"

    @abc.abstractmethod
    def resolution(self, values, tail_tol: float, *, spectrum=None) -> str | None:
        """None if ``values`` are resolved on this grid, else the reason (MATH.md §2.2).

        ``spectrum``: :meth:`spectrum` of ``values`` where the caller has it (not computed again)."""

    @abc.abstractmethod
    def coordinates(self) -> dict[str, tuple[np.ndarray, dict]]:
        """The grid's axes by name, ``{name: (values, attributes)}``, in the order of ``shape``."""

    @classmethod
    @abc.abstractmethod
    def from_coordinates(cls, coordinates: dict[str, np.ndarray]) -> "Grid":
        """The grid whose :meth:`coordinates` these are (e.g. rebuilt from a results file)."""

    @abc.abstractmethod
    def coarsened(self, values) -> "Measure":
        """The grid measure of ``values`` at half the resolution (for estimates of the discretisation error)."""


class Domain(abc.ABC):
    """Geometry, grids and dynamics of one domain (module docstring).

    Attributes
    ----------
    name : str
        "circle", "sphere" or "euclidean".
    dim : int or None
        The d of the ambient R^d of its points (the circle 2, S^{d-1} d, R^d d, [0, 1] × S^{d-2} its rows' d, the
        zonal S^{d-1} d); None on an object that stands for its whole family in every d (``SPHERE``, the unit
        spheres of particles in any d >= 3; ``EUCLIDEAN``; ``SEQUENCE``; ``ZONAL``), whose member in R^d
        :meth:`of_dim` returns.
    grid_type : type
        Its :class:`Grid` class.
    manifold : str
        ``model.manifold`` of the models that move it: "sphere" (S^{d-1}, the circle included) or "euclidean".
    volume : float or None
        Its measure (2π, 4π for S²; None in R^d): the uniform density is 1/volume.
    periodic : bool
        Whether its chart coordinate wraps (the circle's angle).
    unit_vectors : bool
        Whether its points are unit vectors (the circle, S^{d-1}): ⟨x, y⟩ is then a cosine.
    coordinate_label : str
        The name of its chart coordinate in figures ("θ", "x").
    initial_laws : tuple of str
        The initial laws of :mod:`meanfield.laws` (and of study files) defined on it.
    panels : PanelSupport or None
        The adaptive Lagrangian panels built on it (:mod:`.panels`), with their defaults.
    grid_parameters : dict
        The parameters of its grids (study files' [grid] keys) → whether each is required.
    default_method : str
        The time integrator ``solve`` uses by default.
    default_max_n : int or None
        Largest resolution refinement reaches by default (None: not refined).
    conserves_mass : bool
        False where mass may leave (a box in R^d): the solver then accounts for the outflow.
    strain_capped : bool
        Whether the default step is also capped by 1/rate_scale(model), a bound on the
        strain of the field for any state (the spectral grids); finite volumes use their own CFL number.
    positions : str or None
        The name of the domain of its tokens with positions, [0, 1] × itself (causal attention), or None.
    has_positions : bool
        Whether its points carry a position (rows (s, x)): where causal attention moves tokens.
    quadrature_of_any_field : bool
        Whether its ``quadrature`` right-hand side sums any tangent field ``field(points, weights, queries)`` at its
        nodes (the circle, S²), so that a field other than post-LN attention's — nGPT's αP_θA/|A| — runs there.
    on_sphere : bool
        Whether its points are unit vectors or carry them (the circle, S^{d-1}, the rows (s, x) of tokens with
        positions, the zonal sphere's rings): a discrete layer puts them back onto the sphere, and the compiled sums
        of attention on spheres apply; False in R^d.
    colorbar_orientation : str
        Where the colour bar of its density figures goes: "vertical" (beside), "horizontal" (under a map of S²).
    repulsion_refusal : str or None
        Why its density solvers do not take repulsive attention (β < 0, MATH.md §13), or None where they do (the
        circle's grid). Particles take β < 0 on every sphere: the field's formula holds for any real β.
    """

    name: str
    description: str = ""  # what its points are, in words (error messages)
    dim: int | None = None  # the d of its ambient R^d; None: the whole family, every d (:meth:`of_dim`)
    grid_type: type
    projection: str | None = None  # the matplotlib projection of its density plots
    manifold: str = "sphere"  # the models that move it: "sphere" (S^{d-1}) or "euclidean" (R^d)
    volume: float | None = None
    periodic: bool = False
    coordinate_label: str = "x"
    initial_laws: tuple = ()
    unit_vectors: bool = False  # its points are unit vectors (the circle, S^{d-1})
    panels = None
    grid_parameters: dict = {}
    default_method: str = "rk4"
    default_max_n: int | None = None
    conserves_mass: bool = True
    strain_capped: bool = True
    positions: str | None = None
    has_positions: bool = False
    quadrature_of_any_field: bool = False
    nodes_follow_grid: bool = False  # the default chain hands a grid over to fixed Lagrangian nodes without panels
    on_sphere: bool = False  # its points are (or carry) unit vectors: layers normalise them, the sphere's sums apply
    colorbar_orientation: str = "vertical"  # of its density figures' colour bar
    repulsion_refusal: str | None = REPULSION_REFUSAL
    _family: "Domain | None" = None  # the family object a member of dimension ``dim`` was made from (:meth:`of_dim`)

    def __repr__(self) -> str:
        return f"<domain {self.name}>" if self._family is None else f"<domain {self.name} in R^{self.dim}>"

    def __reduce__(self):  # a member is its family's of dimension d, a registered domain the registry's (identity)
        if self._family is not None:
            return (_member, (self._family, self.dim))
        if _DOMAINS.get(self.name) is self:
            return (get, (self.name,))
        return (_rebuilt, (type(self), dict(vars(self))))

    # ------------------------------------------------------------------ the family and its dimension
    def of_dim(self, d: int) -> "Domain":
        """The member of this domain's family whose points live in R^d: ``dim`` == d, one instance per d (a
        domain that already has dimension d returns itself). The unit spheres are one family: the circle for
        d = 2, S^{d-1} for d >= 3 (:func:`sphere_of_dim`), from the circle or the sphere alike. ``ValueError``
        where the family has no member in R^d (:meth:`check_dimension`'s words)."""
        family = self._family or self
        if family.dim is not None:  # a domain of one dimension only
            if _dimension(d) != family.dim:
                raise ValueError(f"the {family.description} lives in R^{family.dim}, not in R^{d}.")
            return family
        return _member(family, family.check_dimension(_dimension(d), False))

    def has_dim(self, d: int) -> bool:
        """Whether this domain's family has a member in R^d (:meth:`of_dim` would return it)."""
        try:
            self.of_dim(d)
        except (ValueError, TypeError):
            return False
        return True

    def holds(self, grid) -> bool:
        """Whether ``grid`` is one of this domain's grids (its :attr:`grid_type`, in its dimension where it has
        one): what a solver of one domain's grids asks of the grid it is given."""
        return isinstance(grid, self.grid_type) and (self.dim is None or getattr(grid, "dim", None) == self.dim)

    def moved_by(self, model) -> bool:
        """Whether ``model`` (or a model kind of :mod:`meanfield.models.registry`: anything with ``manifold``) moves
        points of this domain's manifold (``model.manifold``): the domain layer compares the manifold's name, the layers
        above ask this."""
        return model.manifold == self.manifold

    @property
    def plane(self) -> bool:
        """Whether its densities are images of a plane (R²: equal axes, one zoom for every panel); False by
        default."""
        return False

    def map_values(self, density) -> np.ndarray:
        """The values a figure's map of ``density`` draws: the density's own values by default; S² its synthesis on
        the longitude–latitude grid of its map."""
        return np.asarray(density.values)

    # ------------------------------------------------------------------ geometry of points (..., d)
    @abc.abstractmethod
    def check_points(self, x, name: str) -> np.ndarray:
        """``x`` as a float array of finite points of the domain (``ValueError`` naming ``name`` otherwise)."""

    @abc.abstractmethod
    def contains(self, x, atol: float = 1e-8) -> bool:
        """Whether every row of ``x`` is a point of the domain (to ``atol``)."""

    @abc.abstractmethod
    def project(self, x, v) -> np.ndarray:
        """The tangent part of ``v`` at ``x`` (P_x^⊥ v on spheres, v in R^d)."""

    @abc.abstractmethod
    def retract(self, y) -> np.ndarray:
        """Back onto the domain after a step in the ambient space (y/|y| on spheres, y in R^d)."""

    @abc.abstractmethod
    def distance(self, xa, xb) -> np.ndarray:
        """Geodesic distances d(xa_i, xb_j), shape (n, m)."""

    @abc.abstractmethod
    def coordinates(self, x) -> np.ndarray:
        """Intrinsic coordinates: θ ∈ [0, 2π) on the circle, (colatitude, longitude) on S², x in R^d."""

    @abc.abstractmethod
    def brownian_step(self, x, tau: float, rng) -> np.ndarray:
        """Every row of ``x`` moved by Brownian motion with generator Δ (Laplace–Beltrami on spheres) run for time τ:
        exactly in R^d, to weak order 2 on spheres; the noise of particles dX = X dt + √(2D) dB takes τ = D·h."""

    @abc.abstractmethod
    def chord_distance(self, chord) -> np.ndarray:
        """The geodesic distance of two points at Euclidean distance ``chord`` (2 arcsin(chord/2) on unit spheres)."""

    @abc.abstractmethod
    def intrinsic_dimension(self, d: int) -> int:
        """The dimension of the domain whose points live in R^d (d − 1 on spheres, d in R^d): it sets the rate
        E W_1(μ^N, μ) of empirical measures (MATH.md §4)."""

    @abc.abstractmethod
    def symbol(self, d: int) -> str:
        """The domain of points in R^d in symbols, for titles: S¹, S^{d−1} (S², S⁷), ℝ^d, [0, 1] × S^{d−2}."""

    def divergence(self, x, v, trace, normal) -> np.ndarray:
        r"""div X(x) of the tangent field X = P_x v (:meth:`project`) of an ambient field v of R^d, from v(x), the
        trace ``trace`` = tr Dv(x) of its Jacobian and its normal part ``normal`` = ⟨x, Dv(x) x⟩ (a value, or a
        function of no argument returning it: called only where the domain uses it); shape x.shape[:-1].

        The unit spheres: tr Dv − ⟨x, Dv x⟩ − (d − 1)⟨x, v⟩ (the surface divergence, docs/MATH.md §6); R^d: tr Dv.
        ``ValueError`` on a domain without it (the default)."""
        raise ValueError(f"the {self.name} has no divergence of ambient fields (the unit spheres and R^d have).")

    @property
    def bounded(self) -> bool:
        """Whether the domain is compact (has a ``volume``): a measure's support then never grows."""
        return self.volume is not None

    # ------------------------------------------------------------------ particles (``particles.simulate``)
    def check_particles(self, x, name: str) -> np.ndarray:
        """``x`` as particles of the domain, put onto it exactly (:meth:`retract`): an array of shape (n, D) or
        (batch, n, D) of its points (:meth:`check_points`), ``ValueError`` naming ``name`` otherwise. The unit
        spheres, R^d and the tokens with positions check in their own words."""
        shape = np.shape(x)  # the shape before the points: a wrong shape would otherwise read as points off the domain
        if len(shape) not in (2, 3) or shape[-2] < 1:
            raise ValueError(f"`{name}` must have shape (n, d) or (batch, n, d) and hold particles, got {shape}.")
        return self.retract(self.check_points(x, name))

    def particle_step(self, rate_scale: Callable[[], float]) -> float:
        """The default RK4 step of particles on the domain moved by a model whose rate scale ``rate_scale()``
        returns (:func:`meanfield.models.rate_scale`, called only where the step uses it): 0.05 / rate scale, which
        bounds sup|X| + sup|∇X| for any probability measure on the unit sphere. R^d takes a fixed step."""
        return 0.05 / max(rate_scale(), 1e-300)

    def probe_grid(self, grid):
        """The grid on which maxima over x of the field's bounds are taken (``validation.stability``), given a
        frame's own grid (or None): fine enough that its covering radius h keeps e^{2a h} and h × ``second`` small;
        by default the frame's own grid (None where it has none)."""
        return grid

    def point_sums(self, d: int) -> PointSums | None:
        """The spectral sums of point sets in R^d on this domain (:class:`PointSums`), or None (the default)."""
        return None

    def from_ambient(self, x):
        """This domain's points for points ``x`` of the space it is a quotient of (the zonal domain: the polar
        angles of unit vectors of R^d), or None (the default: it is no quotient of what ``x`` is)."""
        return None

    def particle_domain(self, d: int) -> "Domain":
        """Where the particles of a study on this domain live in R^d: the domain itself by default; the circle or
        S^{d-1} for the zonal sphere (whose points are rings)."""
        return self

    def shown(self, coordinates, values, d: int):
        """(values, symbol, reference) a space-time figure of a 1-D density draws: by default the density itself,
        "ρ(t, <coordinate>)", and the uniform density 1/volume as its colour scale's reference (None in R^d); the
        zonal sphere draws the law of the polar angle instead (its ρ is of order 1/|S^{d−1}|)."""
        return values, f"ρ(t, {self.coordinate_label})", (1.0 / self.volume if self.volume else None)

    def shown_log(self, coordinates, log_values, d: int):
        """(log values, symbol) that a figure of the Lagrangian points draws (natural logs): log ρ and "ρ" by default;
        the zonal sphere's log of the polar angle's law."""
        return log_values, "ρ"

    def quotient_of(self, other) -> bool:
        """Whether this domain is a quotient of ``other`` whose points :meth:`from_ambient` maps onto it (the zonal
        sphere of the circle or S^{d-1}); False by default."""
        return False

    def coordinate_law(self, density, cells: int | None):
        """(points, weights, resolution): a density of this domain as the exact masses of M = ``cells`` equal cells
        of its one chart coordinate at their midpoints (None: the domain's default M), within ``resolution`` of the
        density in every W_p; None where the domain has no such form (the default; the circle quantises its own
        density in ``validation``)."""
        return None

    def quadrature_refusal(self) -> str | None:
        """Why the model's own sums over the points (the ``quadrature`` strategy of particles and of the
        Lagrangian nodes) do not apply to this domain's points, or None (the default: they do)."""
        return None

    def zonal_basis(self, M: int):
        """The zonal basis of the domain's zonal functions f(⟨x, e⟩) with M Gauss nodes
        (:class:`~meanfield.domains.gegenbauer.ZonalBasis`): the stationary states' discretisation; None
        where the domain has none."""
        return None

    def symmetry_blocks(self, grid, orders=()):
        """``({name: (perturbations, read)}, rotation)``: the blocks in which a linearisation about a state symmetric
        about the domain's axis splits (in the coordinates of ``grid.laplacian()``: each block's unit perturbations and
        the function reading the block's entries of a column), and the block holding the rotations (None where no
        block does); for :func:`meanfield.analysis.stationary.stability`."""
        raise ValueError(f"the {self.name} has no zonal states to linearise about.")

    def mean(self, points, weights) -> np.ndarray:
        """The first moment ∫ x dμ ∈ R^d of the measure Σ_i w_i δ_{x_i} of points of the domain, in the ambient R^d
        of the domain's points: Σ_i w_i x_i by default (the unit spheres, R^d, the rows (s, x) of tokens with
        positions); a quotient whose points are coordinates (the zonal sphere's polar angles) embeds them."""
        return np.asarray(weights, dtype=float) @ np.asarray(points, dtype=float)

    def mean_polar_angle(self, density) -> float:
        """∫ θ dμ / ∫ dμ of a density whose points are polar angles (the zonal sphere's rings); ``ValueError``
        elsewhere (the default)."""
        raise ValueError(f"the points of the {self.name} are not polar angles: mean_polar_angle is the zonal "
                         "sphere's (its rings); the first moment ∫ x dμ is Density.mean().")

    def polar_cosine(self, points, axis=None) -> np.ndarray:
        """⟨x, e⟩ of points of the domain about ``axis`` (default the domain's: e_1 on the circle, the north pole
        e_d on S^{d-1}); where the domain has zonal functions."""
        raise ValueError(f"the {self.name} has no zonal functions about an axis.")

    def default_cfl(self, adaptive: bool) -> float:
        """The CFL factor ``solve`` uses by default: 0.1 for fixed steps (an accuracy choice), 0.8 for the
        adaptive methods (a stability cap)."""
        return 0.8 if adaptive else 0.1

    # ------------------------------------------------------------------ densities and the continuity equation
    def check_model(self, model, where) -> None:
        """``ValueError`` unless ``model`` moves measures on this domain in the dimension of ``where`` (a grid or a
        measure with ``dim``)."""
        if not self.moved_by(model):
            moves = " or ".join(d.description for d in _DOMAINS.values() if d.moved_by(model))
            raise ValueError(f"{model!r} moves points of the {moves or model.manifold}, but {where!r} is on the "
                             f"{self.description}.")
        checks.matrices_act_on(model.dim, where.dim, f"{where!r} lives in")

    @abc.abstractmethod
    def grid_strategies(self, model, grid) -> dict[str, str | None]:
        """The strategies (:mod:`meanfield.kernels.strategies`) of the continuity right-hand side of ``model`` on ``grid``,
        best first: each name maps to None where it applies, else to why not. ``strategies.resolve`` picks one."""

    @abc.abstractmethod
    def continuity(self, model, grid, strategy: str, field=None, drift=None):
        """The right-hand side ∂_t ρ = −div(ρ (X[ρ] + drift)) on ``grid`` by ``strategy`` (resolved: one that
        :meth:`grid_strategies` says applies).

        ``field(points, weights, queries)``: the sum X[μ] the quadrature strategy
        evaluates for the grid measure; default ``model.field`` (the model's
        reference sum). :func:`meanfield.solve` passes the compiled
        :func:`meanfield.kernels.field` where it applies. ``drift(points) -> vectors``: a fixed velocity field
        added to X (a Transformer's feed-forward blocks), evaluated once where the flux is formed; ``model`` None:
        the drift alone (a non-interacting transport).

        Returns an object with ``rate(values)``, ``rate_and_speeds(values) ->
        (rate, max |X|, max strain)``, ``speeds(values)`` and ``strategy``; where
        ``coefficient_stages`` is true, also ``coefficients(values)``,
        ``values(coefficients)`` and ``coefficient_rate_and_speeds(coefficients)``,
        in which the fixed steps run their stages (:class:`meanfield.integrate.Stages`)."""

    def energy_beta(self, model) -> float | None:
        """β_eff of the interaction energy E_β monitored along ``model`` on this domain, or None."""
        return None

    def pair_fraction(self, grid, values, delta: float) -> float | None:
        """∬ 1{⟨x, y⟩ >= 1 − δ} ρ(x) ρ(y) of a grid density, in closed form in the grid's spectral basis; None where
        the domain has no such form (the clustering statistic of unit vectors)."""
        return None

    def excess_energy(self, grid, values, beta: float, spectrum=None) -> float:
        """e^{-β}(E_β − m²/2β), finite for every β (well conditioned as β → 0); ``spectrum``:
        ``grid.spectrum(values)`` where the caller has it."""
        raise NotImplementedError(f"no interaction energy on the {self.name}")

    def energy(self, grid, values, beta: float) -> float:
        """E_β of the density (½|∫x dμ|² at β = 0); ``OverflowError`` past β ≈ 709."""
        raise NotImplementedError(f"no interaction energy on the {self.name}")

    def check_initial(self, density) -> None:
        """``ValueError`` if ``density`` cannot start a solve on this domain (nothing by default)."""

    # ------------------------------------------------------------------ what study files ask of a domain
    @abc.abstractmethod
    def make_grid(self, parameters: dict) -> Grid:
        """Its grid from the study file's [grid] parameters (:attr:`grid_parameters`; absent ones None)."""

    @abc.abstractmethod
    def check_dimension(self, d: int | None, densities: bool) -> int:
        """The ambient dimension d of its points (``d`` as given, None: the default), ``ValueError`` where it
        cannot be (``densities``: a grid is solved, which fixes d where particles could live in any)."""

    # ------------------------------------------------------------------ initial laws (:mod:`meanfield.laws`)
    def uniform_noise(self, amplitude: float, modes: int, rng: np.random.Generator):
        """The perturbed uniform law of :func:`meanfield.laws.uniform_noise` (unnormalised), a function of points."""
        raise ValueError(f"the uniform-noise law is defined on the circle and the sphere, not on the {self.name}.")

    def poisson(self, a):
        """The Poisson-kernel (Möbius) law with parameter ``a`` (|a| < 1), a function of points."""
        raise ValueError(f"the Poisson-kernel law is defined on the circle and the sphere, not on the {self.name}.")

    def sample_poisson(self, a, shape: tuple, rng: np.random.Generator) -> np.ndarray:
        """Exact iid draws of shape ``shape + (d,)`` from the Poisson-kernel law of ``a`` (uniform draws pushed by the
        Möbius map that carries the uniform law to it; MATH.md §3)."""
        raise ValueError(f"the Poisson-kernel law is defined on the circle and the sphere, not on the {self.name}.")

    @abc.abstractmethod
    def sample(self, density, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """Points drawn iid from ``density``, shape ``shape + (d,)``."""

    @abc.abstractmethod
    def plot(self, density, ax=None, *, colorbar: bool = True, vmax: float | None = None, cmap: str = "magma",
             **kwargs):
        """A figure of one density (on axes of ``projection``). Returns the Axes."""

    @abc.abstractmethod
    def plot_points(self, x, ax, **kwargs):
        """Points of the domain drawn over its :meth:`plot` (particles over a density). Returns the Axes."""

    @abc.abstractmethod
    def plot_solution(self, solution, title: str | None = None):
        """A figure of a solution over time (with its energy where there is one). Returns the Figure."""

    #: The Lagrangian measure's chart (a module of the domain package): ``check_state(state)``, ``mesh(grid)``,
    #: ``to_state(points)``,
    #: ``to_points(state)``, ``state_rate(state, points, velocity)``, ``retract(state)`` and
    #: ``interpolate_log(state, mesh, log_density, queries)``.
    chart = None


@dataclass(frozen=True)
class Measure:
    """Σ_j w_j δ_{x_j} on a domain: points (n, d), weights (n,), and the domain they live on.

    Unpacks as ``points, weights = measure``.
    """

    points: np.ndarray
    weights: np.ndarray
    domain: Domain

    def __iter__(self):
        return iter((self.points, self.weights))

    def mass(self) -> float:
        return float(np.sum(self.weights))


_DOMAINS: dict[str, Domain] = {}


def register(domain: Domain) -> Domain:
    """Add a domain to the registry (each domain package registers its one instance)."""
    _DOMAINS[domain.name] = domain
    return domain


def unregister(name: str) -> Domain:
    """Remove the domain called ``name`` from the registry and return it (a domain registered for a while: a test's,
    a plug-in's); ``ValueError`` naming the registered ones where there is none."""
    try:
        return _DOMAINS.pop(name)
    except (KeyError, TypeError):
        raise ValueError(f"no domain {name!r} is registered (registered: {sorted(_DOMAINS)}).") from None


def get(name) -> Domain:
    """The domain called ``name`` ("circle", "sphere", "euclidean"), or ``name`` itself if it is a Domain."""
    if isinstance(name, Domain):
        return name
    try:
        return _DOMAINS[name]
    except (KeyError, TypeError):
        raise ValueError(f"`domain` must be one of {sorted(_DOMAINS)}, got {name!r}.") from None


def _dimension(d) -> int:
    """``d`` as an integer dimension (``ValueError`` naming it otherwise)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise ValueError(f"`d` must be an integer dimension, got {d!r}.")
    return int(d)


_MEMBERS: dict = {}


def _member(family: Domain, d: int) -> Domain:
    """The member of dimension ``d`` of a family object (``dim`` None): one instance per (family, d), the
    family's own behaviour with its ``dim`` set (:meth:`Domain.of_dim`)."""
    key = (id(family), d)
    if key not in _MEMBERS:
        member = _rebuilt(type(family), dict(vars(family)))
        member.dim, member._family = d, family
        _MEMBERS[key] = member
    return _MEMBERS[key]


def _rebuilt(cls, state):
    """An unregistered domain object from its attributes (pickling)."""
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def sphere_of_dim(d: int) -> Domain:
    """The unit sphere S^{d-1} ⊂ R^d with its dimension (``dim`` == d): the circle for d = 2, the member of
    dimension d of the sphere for d >= 3 (S² for d = 3, where its densities are solved); spheres are one family,
    what ``of_dim`` of the circle and of the sphere returns. ``ValueError`` for d < 2."""
    d = _dimension(d)
    if d < 2:
        raise ValueError(f"the unit sphere S^(d-1) needs d >= 2 (d = 2 is the circle), got d = {d}.")
    return _DOMAINS["circle"] if d == 2 else _member(_DOMAINS["sphere"], d)


def unit_sphere(d: int) -> Domain:
    """The unit sphere S^{d-1} ⊂ R^d as a domain: the circle for d = 2, the sphere S^{d-1} otherwise — the family
    object ``SPHERE`` (``dim`` None), which particles of any d >= 3 carry; :func:`sphere_of_dim` gives its member
    whose ``dim`` is d."""
    return _DOMAINS["circle"] if d == 2 else _DOMAINS["sphere"]


def for_manifold(manifold: str, d: int) -> Domain:
    """The domain of the points that models of ``manifold`` (their ``model.manifold``) move in R^d: the circle
    (d = 2) or S^{d-1} for "sphere", R^d for "euclidean", [0, 1] × S^{d-2} for "sequence" (causal attention's tokens
    with positions); ``d`` None: the sphere's family object ``SPHERE``."""
    if manifold == _DOMAINS["sphere"].manifold:
        return unit_sphere(d)
    for domain in _DOMAINS.values():
        if domain.manifold == manifold:
            return domain
    raise ValueError(f"no domain holds the points of models of manifold {manifold!r} (known: "
                     f"{sorted({domain.manifold for domain in _DOMAINS.values()})}).")


def of_model(model, d: int | None = None) -> Domain:
    """The domain of the points ``model`` moves (:func:`for_manifold` of its ``manifold``) in R^d; ``d`` None: the
    model's own ``dim`` where its matrices fix one, else the family (``SPHERE``: the unit spheres in every d >= 3).
    What the layers above ask capabilities of (``of_model(model).on_sphere``) instead of comparing manifolds."""
    return for_manifold(model.manifold, getattr(model, "dim", None) if d is None else d)


def infer(points) -> Domain:
    """The domain of a bare array of points that carries none: the convention of the public functions.

    Rows of norm 1 (to 1e-8) in R² are on the circle, in R^d (d >= 3) on the
    sphere S^{d-1}; anything else is in R^d. Objects that carry a domain
    (densities, :class:`Measure`, trajectories) are never inferred.
    """
    x = np.asarray(points, dtype=float)
    for name in ("circle", "sphere"):
        if _DOMAINS[name].contains(x):
            return _DOMAINS[name]
    return _DOMAINS["euclidean"]
