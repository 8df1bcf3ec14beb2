r"""Zonal densities on S^{d-1}, any d >= 2: the sphere of a Transformer's tokens, up to rotations about an axis.

For Q = qI, K = kI, V = cI (and noise D) a density ρ(x) = f(⟨x, e⟩) stays of that form (MATH.md §9): the
continuity equation closes on functions of the polar angle θ = arccos⟨x, e⟩, whatever d. A point of this domain
is a *ring* {x ∈ S^{d-1} : ⟨x, e⟩ = cos θ} — the quotient of S^{d-1} by the rotations fixing e — given by its polar
angle θ ∈ [0, π] (arrays of shape (..., 1)); a measure on it is the law of the polar angle of a zonal measure of
S^{d-1} (:meth:`ZonalSphere.measure`). W_p between two zonal measures of S^{d-1} equals W_p between their polar
angles' laws on [0, π] (docs/MATH.md §9, proved there); the distance to particles on S^{d-1} compares their polar
angles (``validation``: a lower bound of W_p on S^{d-1}, equal where the particles are zonal).

One :class:`ZonalSphere` per dimension (:func:`zonal_domain`); :data:`ZONAL` is the family registered as
"zonal" (study files: ``domain = "zonal"`` with ``dimension = d``), whose members its grids and measures carry.

- :mod:`.basis`: the σ̄-orthonormal Jacobi (Gegenbauer) polynomials, Gauss rules, Funk–Hecke multipliers;
- :mod:`.grid`: :class:`ZonalGrid` (lmax + 1 rings at the Gauss nodes);
- :mod:`.continuity`: the right-hand sides (spectral, and the ring-kernel quadrature they are tested against);
- :mod:`.point_sums`: the rings' spectral sums (the Lagrangian measure's field); :mod:`.lagrangian`: its chart;
- :mod:`.energy`, :mod:`.sampling` (particles on S^{d-1}), :mod:`.laws`, :mod:`.plotting`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...core import checks
from ..base import SUPERSCRIPT, Domain, PointSums, register, unit_sphere
from ..zonal import ZONAL_RULE, energy_beta
from . import (
    energy as _energy, lagrangian, laws as _laws, plotting as _plotting, point_sums as _sums, sampling as _sampling,
)
from ..gegenbauer import ZonalBasis, degree, gauss, multipliers, scaled_multipliers, orthonormal, sphere_area
from .continuity import ZonalQuadrature, ZonalSpectral
from .grid import MAX_DIMENSION, ZonalGrid, axis, check_dimension, polar_angles

__all__ = ["ZONAL", "ZonalSphere", "zonal_domain", "ZonalGrid", "ZonalBasis", "ZonalSpectral", "ZonalQuadrature",
           "MAX_DIMENSION", "axis", "polar_angles", "multipliers", "scaled_multipliers", "degree", "gauss",
           "orthonormal", "sphere_area"]

#: Cells of [0, π] a zonal density's polar angle is quantised into for the distances (``validation``).
POLAR_CELLS = 1 << 16
#: Why the model's own sums over points do not apply to the zonal domain's points.
RING_QUADRATURE = ("a point of the zonal domain is a ring of S^(d-1), not a point: the model's sums over points do "
                   "not apply (the rings' spectral sums do)")


def _refusal(model) -> str | None:
    """None where ``model`` keeps zonal densities zonal, else why not."""
    if model.manifold != "sphere":
        return f"it moves points of the {model.manifold}, not of the sphere; got {model!r}"
    if getattr(model, "feedforward", None):
        return f"a feed-forward block's field W σ(Ax + b) is not zonal about an axis in general; got {model!r}"
    att = getattr(model, "attention", model)
    if att is None or getattr(att, "zonal", None) is None:
        return f"a zonal density stays zonal for one head with {ZONAL_RULE} (and constant weights); got {model!r}"
    return None


class ZonalSphere(Domain):
    """Zonal densities on S^{d-1} (module docstring). ``ZonalSphere(None)`` is the family (:data:`ZONAL`)."""

    name = "zonal"
    grid_type = ZonalGrid
    manifold = "sphere"
    coordinate_label = "polar angle θ"
    initial_laws = ("uniform", "uniform-noise", "von-mises-fisher", "poisson")
    grid_parameters = {"lmax": True}
    default_max_n = 1024
    nodes_follow_grid = True  # the default chain goes on with rings (the Lagrangian measure) where the grid stops
    on_sphere = True  # its rings are of unit vectors
    chart = lagrangian

    def __init__(self, d: int | None = None):
        self.d = None if d is None else check_dimension(d)

    def __repr__(self) -> str:
        return "<domain zonal (S^(d-1), any d)>" if self.d is None else f"<domain zonal S^{self.d - 1}>"

    def __reduce__(self):  # one instance per dimension, also across processes (identity is compared)
        return (zonal_domain, (self.d,))

    @property
    def dim(self) -> int | None:
        """d of S^{d-1} ⊂ R^d (None for the family :data:`ZONAL`); the domain's points are polar angles."""
        return self.d

    @staticmethod
    def of_dim(d):
        """The zonal domain of S^{d-1} (:func:`zonal_domain`)."""
        return zonal_domain(check_dimension(d))

    def _need_d(self) -> int:
        if self.d is None:
            raise ValueError("the zonal domain needs its dimension: meanfield.domains.zonal_domain(d), "
                             "or a ZonalGrid(d, lmax).")
        return self.d

    @property
    def description(self) -> str:
        d = "S^(d-1)" if self.d is None else f"S^{self.d - 1}"
        return f"zonal densities on {d} (rings ⟨x, e⟩ = cos θ)"

    @property
    def volume(self) -> float | None:
        """|S^{d−1}| (None for the family, whose members each have theirs)."""
        return None if self.d is None else sphere_area(self.d - 1)

    @property
    def bounded(self) -> bool:
        return True

    # ------------------------------------------------------------------ geometry of points: polar angles (..., 1)
    def _points_d(self, x) -> int:
        """d: the domain's own, or (the family) that of unit vectors of R^d given."""
        if self.d is not None:
            return self.d
        shape = np.shape(x)
        return shape[-1] if len(shape) and shape[-1] >= 2 else 0

    def check_points(self, x, name):
        return polar_angles(x, self._points_d(x), name)[..., None]

    def contains(self, x, atol=1e-8):
        x = np.asarray(x, dtype=float)
        return bool(x.ndim >= 1 and x.shape[-1] == 1 and np.all(np.isfinite(x))
                    and np.all((x >= -atol) & (x <= np.pi + atol)))

    def from_ambient(self, x):
        """The rings of unit vectors of R^d (..., d): their polar angles (..., 1) (None where ``x`` is not that)."""
        x = np.asarray(x, dtype=float)
        if self.d is None or x.ndim < 1 or x.shape[-1] != self.d:
            return None
        return polar_angles(x, self.d, "points")[..., None]

    def shown(self, coordinates, values, d: int):
        """The law of the polar angle, q = |S^{d−2}| sin^{d−2}θ ρ, at the polar angles ``coordinates`` (a probability
        density on [0, π]; ρ itself is of order 1/|S^{d−1}|), with the uniform law's maximum as reference."""
        from .plotting import polar_weight

        weight = polar_weight(self.d or d, np.asarray(coordinates, dtype=float))
        return np.asarray(values) * weight, "q(t, θ)", float(np.max(polar_weight(self.d or d,
                                                                                 np.linspace(0, np.pi, 1025))
                                                                    / sphere_area((self.d or d) - 1)))

    def shown_log(self, coordinates, log_values, d: int):
        """log q = log ρ + log(|S^{d−2}| sin^{d−2}θ) at the rings' polar angles: the law of the polar angle."""
        from .plotting import log_polar_weight

        return np.asarray(log_values) + log_polar_weight(self.d or d, coordinates), "q"

    @staticmethod
    def particle_domain(d):
        """Particles of a zonal study live on S^{d-1} itself: the circle (d = 2) or the sphere."""
        return unit_sphere(d)

    def quotient_of(self, other) -> bool:
        """The zonal domain is the quotient of the sphere of its dimension (points: unit vectors, no positions)."""
        return bool(other.unit_vectors and other.manifold == "sphere" and not other.has_positions
                    and other is not self)

    def coordinate_law(self, density, cells: int | None):
        """The law of the polar angle of a zonal density on ``cells`` (default :data:`POLAR_CELLS`) equal cells of
        [0, π] (8-point Gauss–Legendre per cell of q(θ) = |S^{d−2}| sin^{d−2}θ ρ(cos θ), :func:`.sampling.polar_law`),
        at the cells' midpoints: within π/(2 cells) of the density in W_p (2.4e-5 by default)."""
        from .sampling import cell_masses

        cells = POLAR_CELLS if cells is None else int(cells)
        mass, edges = cell_masses(density, cells)
        negative = -float(np.sum(np.minimum(mass, 0.0)))
        if negative > 1e-8 * float(np.sum(np.abs(mass))):  # the resolution monitor's tolerance on the rings' mass
            raise ValueError(f"the density's expansion carries a negative mass {negative:.3g} (of the total "
                             f"{float(np.sum(mass)):.6g}): it is not a probability law.")
        mass = np.maximum(mass, 0.0)
        return (0.5 * (edges[:-1] + edges[1:]))[:, None], mass / mass.sum(), float(np.pi / (2 * cells))

    @staticmethod
    def project(x, v):
        return np.asarray(v, dtype=float)

    @staticmethod
    def retract(y):
        return np.clip(y, 0.0, np.pi)

    @staticmethod
    def distance(xa, xb):
        """|θ_a − θ_b|: the distance between two rings (the least geodesic distance between their points)."""
        xa, xb = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
        return np.abs(xa[..., :, None, 0] - xb[..., None, :, 0])

    @staticmethod
    def chord_distance(chord):
        return np.asarray(chord, dtype=float)

    def coordinates(self, x):
        """The polar angle θ (shape (...)) of rings (..., 1) or of unit vectors of R^d."""
        return polar_angles(x, self._points_d(x))

    def brownian_step(self, x, tau, rng):
        raise ValueError("rings do not take Brownian steps (the noise of a ring is a diffusion in θ with drift "
                         "(d − 2) cot θ); draw particles on S^(d-1) from the density (particles.sample) instead.")

    @staticmethod
    def intrinsic_dimension(d):
        return 1

    def symbol(self, d=None):
        """S^{d−1} (zonal), with the domain's own d where it has one (else the ``d`` given, e.g. a study's)."""
        d = self.d if self.d is not None else d
        return ("S^(d−1)" if d is None else "S" + str(d - 1).translate(SUPERSCRIPT)) + " (zonal)"

    def point_sums(self, d):
        """The rings' spectral sums (points of dimension 1: polar angles)."""
        if self.d is None or d != 1:
            return None
        k = self.d
        return PointSums(lambda beta: _sums.ring_degree(k, beta),
                         lambda p, w, q, beta, normalized=True, c=1.0: _sums.ring_field(p, w, q, beta, normalized, c,
                                                                                        d=k),
                         lambda p, w, q, beta, normalized=True, c=1.0: _sums.ring_field_and_divergence(
                             p, w, q, beta, normalized, c, d=k),
                         lambda p, w, beta: _sums.ring_excess_energy(p, w, beta, d=k),
                         lambda n, beta: True)

    @staticmethod
    def quadrature_refusal():
        return RING_QUADRATURE

    def zonal_basis(self, M: int) -> ZonalBasis:
        return ZonalBasis(self._need_d(), M)

    @staticmethod
    def symmetry_blocks(grid, orders=()):
        """The one block of a zonal linearisation (:func:`meanfield.analysis.stationary.stability`): the degrees 1..lmax of
        c̄ (perturbations of a zonal state that stay zonal; no rotation among them)."""
        es = [np.eye(grid.lmax + 1)[l] for l in range(1, grid.lmax + 1)]
        return {"zonal": (es, lambda col: col[1:])}, None

    def mean(self, points, weights):
        """∫ x dμ = (∫ cos θ dμ) e ∈ R^d of a zonal measure (rings at polar angles θ_i with masses w_i): the
        components orthogonal to the axis e average to zero on every ring. Unit vectors of R^d (a measure that
        need not be zonal) are summed as they are."""
        d = self._need_d()
        x = np.asarray(points, dtype=float)
        if x.ndim >= 1 and x.shape[-1] == d and d >= 2:  # points of S^{d-1} themselves
            return np.asarray(weights, dtype=float) @ x
        return float(np.asarray(weights, dtype=float) @ self.polar_cosine(points)) * axis(d)

    def mean_polar_angle(self, density):
        """∫ θ dμ / ∫ dμ of a zonal density. For d >= 8 the rings' own rule Σ w_j ρ_j θ_j / Σ w_j ρ_j: the values at
        the rings are exact and the weight (1 − u²)^((d−3)/2) smooths θ = arccos u at the poles (the rule's error
        falls like lmax^(−(d−1))); for d < 8, where it does not, Gauss–Legendre in θ of the polar law q
        (:func:`.sampling.polar_moment`), whose interpolant's round-off ε·max ρ the factor sin^{d−2}θ would raise far
        above q in high dimension."""
        if self._need_d() >= 8:
            theta, w = density.as_measure()
            return float(w @ np.asarray(theta, dtype=float)[:, 0] / w.sum())
        from .sampling import polar_moment

        return polar_moment(density, lambda theta: theta) / polar_moment(density, np.ones_like)

    def polar_cosine(self, points, axis=None):
        """⟨x, e⟩ = cos θ of points of the domain (polar angles) or unit vectors of R^d."""
        if axis is not None:
            raise ValueError("a zonal density's axis is the domain's own (e_1 on the circle, e_d otherwise).")
        return np.cos(polar_angles(points, self._need_d()))

    # ------------------------------------------------------------------ densities and the continuity equation
    def check_model(self, model, where) -> None:
        why = _refusal(model)
        if why is not None:
            raise ValueError(f"the zonal domain {self.symbol()} carries densities f(⟨x, e⟩): {why}.")
        checks.matrices_act_on(getattr(model, "dim", None), self.d, f"{where!r} is on S^{self.d - 1} ⊂")

    def check_initial(self, density) -> None:
        return None

    @staticmethod
    def grid_strategies(model, grid):
        why = _refusal(model)
        return {"spectral": why, "quadrature": why}

    @staticmethod
    def continuity(model, grid, strategy, field=None, drift=None):
        if model is None:
            raise ValueError("the zonal domain takes attention alone (a feed-forward block is not zonal).")
        z = model.zonal
        cls = ZonalSpectral if strategy == "spectral" else ZonalQuadrature
        return cls(grid, z.beta, z.c, model.normalized, drift)

    energy_beta = staticmethod(energy_beta)
    excess_energy = staticmethod(_energy.excess_energy)
    energy = staticmethod(_energy.energy)
    pair_fraction = staticmethod(_energy.pair_fraction)

    def probe_grid(self, grid):
        return ZonalGrid(self._need_d() if grid is None else grid.d, max(64, grid.lmax if grid is not None else 0))

    # ------------------------------------------------------------------ study files
    def make_grid(self, parameters):
        d = parameters.get("dimension") or self.d
        if d is None:
            raise ValueError("a zonal grid needs the dimension d of its sphere (study files: `dimension`).")
        return ZonalGrid(int(d), parameters["lmax"])

    def check_dimension(self, d, densities):
        if d is None:
            if self.d is None:
                raise ValueError("the zonal domain needs `dimension`: the d of S^(d-1) ⊂ R^d (any d >= 2)")
            return self.d
        return check_dimension(d) if densities else max(2, int(d))

    # ------------------------------------------------------------------ initial laws, sampling, figures
    def uniform_noise(self, amplitude, modes, rng):
        return _laws.uniform_noise(self._need_d(), amplitude, modes, rng)

    def poisson(self, a):
        return _laws.poisson(self._need_d(), a)

    def sample_poisson(self, a, shape, rng):
        return _laws.sample_poisson(np.size(a) if self.d is None else self.d, a, shape, rng)

    sample = staticmethod(_sampling.sample)
    plot = staticmethod(_plotting.plot)
    plot_points = staticmethod(_plotting.plot_points)
    plot_solution = staticmethod(_plotting.plot_solution)


@lru_cache(maxsize=None)
def zonal_domain(d: int | None) -> ZonalSphere:
    """The zonal domain of S^{d-1} (one instance per d; None: the family :data:`ZONAL`)."""
    return ZonalSphere(d)


ZONAL = register(zonal_domain(None))
