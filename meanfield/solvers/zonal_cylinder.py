r"""Pre- and peri-LN densities on the zonal S^{d-1} × (0, ∞): polar cosine × radius, any d >= 2 (docs/MATH.md §10).

The mathematics
---------------
Pre/peri-LN tokens are x = rθ, r > 0, θ ∈ S^{d-1}, and attention reads the directions: for one SA head with
Q = qI, K = kI, V = cI (β the effective βqk) and ρ̄ the law of the directions,

    A(θ) = c N(θ)/φ(θ),   φ(θ) = ∫ e^{β⟨θ, y⟩} ρ̄(dy),   N(θ) = ∫ y e^{β⟨θ, y⟩} ρ̄(dy).

Extend φ to x ∈ R^d, Φ(x) = ∫ e^{β⟨x, y⟩} ρ̄(dy): then N(θ) = ∇Φ(θ)/β. Its part along θ is
⟨θ, ∇Φ(θ)⟩/β = ∫ ⟨θ, y⟩ e^{β⟨θ, y⟩} ρ̄(dy) = ∂_β φ(θ) (the derivative of φ in β at fixed θ); its tangential part is
the sphere's gradient ∇_S φ/β. Where ρ̄ is zonal about the axis e (invariant under the rotations fixing e; e = e_d,
e_1 for d = 2 as :mod:`meanfield.domains.zonal_sphere`), φ is a function φ(u) of the polar cosine u = ⟨θ, e⟩ alone,
∇_S φ = φ′(u)(e − uθ), and so

    A(θ) = α(u) (e − uθ) + a(u) θ = α(u) e + γ(u) θ,    α = c φ′(u)/(β φ(u)),   a = c ∂_βφ(u)/φ(u),   γ = a − uα.

The zonal sums are those of the zonal sphere: for ρ̄ = f̄(v) dσ̄(v) (σ̄ the normalised surface measure),
φ(u) = ∫ k(u, v) f̄(v) dσ̄(v) with the ring kernel k(u, v) = e^{βuv} ₀F₁(; (d − 1)/2; β²(1 − u²)(1 − v²)/4) (the
average of e^{β⟨θ, y⟩} over the ring of y; :class:`~meanfield.domains.zonal_sphere.ZonalQuadrature`), so
φ′ = ∫ ∂_u k f̄ dσ̄ and ∂_βφ = ∫ ∂_β k f̄ dσ̄ with

    ∂_β k = e^{βuv} [uv ₀F₁(b; z) + (β/2)(1 − u²)(1 − v²) ₀F₁(b + 1; z)/b],    b = (d − 1)/2,  z = β²(1−u²)(1−v²)/4.

The motion. Pre-LN ẋ = A: ṙ = ⟨θ, A⟩ = a(u), θ̇ = P_θ A/r = α(u)(e − uθ)/r, so the polar cosine moves by
u̇ = ⟨e, θ̇⟩ = α(u)(1 − u²)/r and, in s = log r, ṡ = a(u) e^{−s}. Peri-LN ẋ = A/|A| divides both by
|A| = √(α²(1 − u²) + a²) (|e − uθ|² = 1 − u²). The zonal law stays zonal (the field commutes with the rotations
fixing e), and the density ρ(u, s, t) of (u, s) with respect to dσ̄(u) ds — dσ̄(u) = (1 − u²)^{(d−3)/2} du / B_d,
B_d = ∫_{−1}^{1} (1 − u²)^{(d−3)/2} du — solves

    ∂_t ρ + (1 − u²)^{−(d−3)/2} ∂_u((1 − u²)^{(d−3)/2} ρ e^{−s} α(u)(1 − u²)) + ∂_s(ρ e^{−s} a(u)) = 0

(peri-LN: α, a over |A|), the field depending on ρ only through the marginal f̄(u) = ∫ ρ(u, s) ds. (Its weak
form: for a test function p(u)q(s), d/dt ∫∫ pq ρ dσ̄ ds = ∫∫ (p′ q u̇ + p q′ ṡ) ρ dσ̄ ds.) Check at d = 2: u = cos θ,
dσ̄ = dθ/2π on the circle, so ρ = 2π ρ_cyl(θ, s) for the density ρ_cyl of :mod:`meanfield.solvers.cylinder` w.r.t. dθ ds;
e − uθ = −sin θ θ^⊥ gives v = ⟨θ^⊥, A⟩ = −α sin θ and u̇ = −sin θ θ̇ = −sin θ v/r = α sin²θ/r; with the weight
(1 − u²)^{−1/2} = 1/sin θ and ∂_u = −(1/sin θ)∂_θ the u-divergence is
sin θ ∂_u(ρ u̇/sin θ) = sin θ ∂_u(−ρ θ̇) = ∂_θ(ρ θ̇), the cylinder's θ-flux, and the s-fluxes are the same
(a = ⟨θ, A⟩ in both). For the uniform law of directions α = 0 and a = c I_{d/2}(β)/I_{d/2−1}(β) (A is radial by
symmetry, not zero): every radius moves by ṙ = a, r(t) = r(0) + at, an exact solution the tests use.
tests/meanfield/test_zonal_cylinder.py checks this numerically: at d = 2 the two solvers agree to the angular
discretisation error, which converges under refinement.

Discretisation
--------------
lmax + 1 rings at the Gauss nodes u_j of σ̄ (a :class:`~meanfield.domains.zonal_sphere.ZonalGrid`) × n_s cells of s
on [log r_min, log r_max]; values ρ_{m j} (cell m of s, ring j), shape (n_s, lmax + 1). In u the weak (flux) form
of the zonal sphere, per cell of s: on the σ̄-orthonormal coefficients c̄_{l,m},

    ∂_t c̄_{l,m} ⊃ e^{−s_m} ∫ p̄_l′(u) (1 − u²) ρ_m(u) α(u) dσ̄(u),

by the Gauss rule of ⌈3(lmax + 1)/2⌉ nodes (dealiased), its l = 0 rate exactly zero; in s finite volumes at each
ring, as the cylinder: the centred face value F_{m+½}(u_j) = e^{−s_{m+½}} a(u_j)(ρ_m + ρ_{m+1})/2, zero flux through
the outer faces. Both parts conserve the mass Σ_j w̄_j Σ_m ρ_{mj} Δs to round-off. The field α, a is formed at the
dealiased nodes and at the rings from the rings' marginal by the ring-kernel quadrature (O(lmax²) kernel values,
tabulated once). Time: classical RK4 with the step dt = cfl × r_min × min(Δθ_min / max|α sin θ|, Δs / max|a|)
measured before every step (or a fixed ``dt``), Δθ_min the smallest gap of the rings' polar angles (and of the poles).

Several heads sum their averages; a USA head (no division by φ) has A = c e^β (scaled sums). Noise is not built.

Through :func:`meanfield.solve`
-------------------------------
A :class:`~meanfield.Density` on a :class:`ZonalCylinderGrid` is an initial state of :func:`meanfield.solve`: its
domain is the member ``ZONAL_CYLINDER.of_dim(d)`` of the product family
:data:`~meanfield.domains.products.ZONAL_CYLINDER`, advanced by the "zonal-cylinder" representation
(:class:`ZonalCylinderRepresentation`, registered here) on the one :class:`~meanfield.integrate.Integrator` ("rk4"
by default, or "ssprk3"), watched by the one :class:`~meanfield.integrate.monitor.ResolutionMonitor`, into the one
:class:`~meanfield.Solution` (frames: densities on the grid, ``Solution.frame(k)``). Nothing plausible but wrong is
returned: the run stops with status RESOLUTION_LOST where mass reaches the two outer cells of s at either end (the
zero-flux walls would hold it; ``Solution.diagnostics["edge"]`` = (side, mass)), where the polar spectrum's tail
(summed over s) passes ``tail_tol`` or the negative part passes ``neg_tol`` (default 1e-6 of the mass, as on the
cylinder); an initial law with mass at the walls is refused (:class:`RadiusRangeError`), peri-LN's |A| = 0 raises
``FloatingPointError``. :func:`solve_zonal_radial` is the documented entry point, a view of that Solution
(:class:`ZonalRadialSolution`), which raises those stops (:class:`RadiusRangeError`, a ``ValueError``;
:class:`~meanfield.integrate.monitor.ResolutionError`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import hyp0f1

from ..core import checks
from ..density import Density
from ..domains.gegenbauer import gauss, orthonormal
from ..domains.marginals import CellLaw, Marginal, directions, log_radii
from ..domains.products import ZONAL_CYLINDER, ProductGrid
from ..domains.zonal_sphere.continuity import dealiased_nodes
from ..domains.zonal_sphere.grid import ZonalGrid
from ..integrate import Status
from ..models.normalization import radial_zonal_heads
from ..integrate.monitor import ResolutionMonitor
from ..representations import register, solve_product
from ..representations.radial import (
    GUARD_CELLS, METHODS, NEG_TOL, GuardedProblem, RadialRepresentation, RadiusRangeError, initial_values,
    raise_for_walls, view_settings,
)

__all__ = ["ZonalCylinderGrid", "ZonalRadialProblem", "ZonalRadialSolution", "ZonalCylinderRepresentation",
           "RadiusRangeError", "solve_zonal_radial", "zonal_field", "GUARD_CELLS", "METHODS", "NEG_TOL"]


class ZonalCylinderGrid(ProductGrid):
    """lmax + 1 rings of S^{d-1} (Gauss nodes of σ̄) × n_s cells of s = log r on [log r_min, log r_max]: a grid of the
    product domain ``ZONAL_CYLINDER.of_dim(d)`` (a :class:`~meanfield.Density` on it, values of shape
    (n_s, lmax + 1) w.r.t. dσ̄(u) ds, is an initial state of :func:`meanfield.solve`).

    Parameters
    ----------
    d : int
        S^{d-1} ⊂ R^d, 2 <= d <= :data:`~meanfield.domains.zonal_sphere.MAX_DIMENSION`.
    lmax : int
        Largest degree of the polar expansion (>= 2): lmax + 1 rings.
    n_s : int
        Cells of equal width Δs = log(r_max/r_min)/n_s in s = log r (>= 2·GUARD_CELLS + 2).
    radii : (float, float)
        (r_min, r_max), 0 < r_min < r_max < ∞: the radii the law may occupy (the outer cells must stay empty).

    Attributes
    ----------
    d, dim, lmax, n_s : int
        ``dim`` = d, the ambient dimension of the directions.
    zonal : ZonalGrid
    u, w : ndarray (lmax + 1,)
        The rings' polar cosines (decreasing) and σ̄-weights (summing to 1).
    theta : ndarray (lmax + 1,)
        The rings' polar angles (increasing).
    gap : float
        The smallest gap between the rings' polar angles and the poles (the CFL step's Δθ_min).
    s_edges, s : ndarray
        Cell edges (n_s + 1) and centres (n_s) of s.
    r, r_edges : ndarray
        e^s at the centres and edges.
    ds : float
    """

    finer = "give a finer grid (lmax, n_s)"
    refine_words = "n_s or lmax"

    def __init__(self, d: int, lmax: int, n_s: int, radii):
        self.zonal = ZonalGrid(d, lmax)
        self.d, self.lmax = self.zonal.d, self.zonal.lmax
        self.n_s = checks.count(n_s, "n_s", 2 * GUARD_CELLS + 2)
        try:
            r_min, r_max = (checks.real(r, "radii") for r in radii)
        except TypeError:
            raise TypeError(f"`radii` must be a pair (r_min, r_max) of numbers, got {radii!r}.") from None
        if not (np.isfinite(r_min) and np.isfinite(r_max)) or r_min <= 0 or r_max <= r_min:
            raise ValueError(f"`radii` must be (r_min, r_max) with 0 < r_min < r_max < ∞ (tokens x = rθ have r > 0; "
                             f"the density lives on s = log r), got {radii!r}.")
        self.radii = (r_min, r_max)
        self.u, self.w = self.zonal.basis.u, self.zonal.basis.mean_weights
        self.theta = self.zonal.theta
        self.gap = float(np.min(np.diff(np.concatenate([[0.0], self.theta, [np.pi]]))))
        self.s_edges = np.linspace(np.log(r_min), np.log(r_max), self.n_s + 1)
        self.s = 0.5 * (self.s_edges[1:] + self.s_edges[:-1])
        self.ds = float(self.s_edges[1] - self.s_edges[0])
        self.r, self.r_edges = np.exp(self.s), np.exp(self.s_edges)
        self.n, self.spacing = self.lmax, min(self.gap, self.ds)

    @property
    def dim(self) -> int:
        return self.d

    @property
    def domain(self):
        """``ZONAL_CYLINDER.of_dim(d)``: the member in R^d of the product family."""
        return ZONAL_CYLINDER.of_dim(self.d)

    @property
    def shape(self):
        """(n_s, lmax + 1): the values are rows of rings, one row per cell of s."""
        return (self.n_s, self.lmax + 1)

    def __eq__(self, other) -> bool:
        return isinstance(other, ZonalCylinderGrid) and (self.d, self.lmax, self.n_s, self.radii) == (
            other.d, other.lmax, other.n_s, other.radii)

    def __hash__(self) -> int:
        return hash(("zonal-cylinder", self.d, self.lmax, self.n_s, self.radii))

    def mass(self, values) -> float:
        """Σ_m Σ_j w̄_j ρ_{mj} Δs (exact for the polynomial interpolant in u and the cell averages in s)."""
        return float(np.sum(np.asarray(values) @ self.w) * self.ds)

    def marginals(self, values):
        r"""The laws of the polar angle and of s = log r of the density with cell values ``values`` (n_s, lmax + 1)
        (:class:`~meanfield.domains.marginals.Marginal`):

        - "polar angle": f̄(u_j) = Σ_m ρ_{mj} Δs (the σ̄-density at the rings) as a density on :attr:`zonal`, values
          f̄/|S^{d−1}| w.r.t. surface measure, whose measure is its polynomial interpolant in u = cos θ (the
          u-discretisation's); particles read as their directions x/|x| ∈ S^{d−1}, compared by their polar angles
          about the same axis;
        - "log r": the :class:`~meanfield.domains.marginals.CellLaw` of the masses Σ_j w̄_j ρ_{mj} Δs spread uniformly
          on the cells of s; particles read as log|x|.
        """
        values = np.asarray(values, dtype=float)
        polar = Density(self.zonal, values.sum(axis=0) * (self.ds / self.zonal.basis.area))
        log_r = CellLaw(self.s_edges, (values @ self.w) * self.ds, "log r")
        return (Marginal("polar angle", polar, directions), Marginal("log r", log_r, log_radii))

    def integrate(self, values):
        """∫∫ ρ dσ̄ ds over the last two axes (:meth:`mass` of each)."""
        return np.sum(np.asarray(values) @ self.w, axis=-1) * self.ds

    def s_masses(self, values) -> np.ndarray:
        """The mass of each cell of s, Σ_j w̄_j ρ_{mj} Δs, shape (n_s,) (what the radial guard reads at the walls)."""
        return (np.asarray(values) @ self.w) * self.ds

    def interpolate(self, values, points):
        raise NotImplementedError(f"{self!r} holds cell averages in s: read them (values) or the marginals.")

    def polar_tail(self, values) -> float:
        """max over the top 1/16 of the degrees (at least 2) of Σ_m |c̄_{m,l}| Δs, relative to the L² norm over l of
        the same sums (as :meth:`~meanfield.domains.zonal_sphere.ZonalGrid.spectral_tail`, the sums over s bounding
        every marginal's coefficients)."""
        C = np.abs(self.zonal.coefficients(values)).sum(axis=0) * self.ds
        width = max(2, self.lmax // 16)
        norm = float(np.linalg.norm(C))
        return float(np.max(C[-width:]) / norm) if norm > 0 else 0.0

    def resolution(self, values, tail_tol: float, *, spectrum=None):
        """The polar spectral tail (:meth:`polar_tail`) against ``tail_tol``: None where resolved, else the reason."""
        tail = self.polar_tail(values)
        if not tail <= tail_tol:
            return f"the polar spectral tail {tail:.3g} exceeds tail_tol = {tail_tol:g} on {self!r}; raise lmax"
        return None

    def coordinates(self):
        return {"s": (self.s, {"edges": self.s_edges}),
                "theta": (self.theta.copy(), {"long_name": "polar angle θ = arccos⟨x, e⟩", "dimension": self.d})}

    @classmethod
    def from_coordinates(cls, coordinates):
        """The grid of these cells of s and rings; ``coordinates["dimension"]`` gives d (the rings depend on it)."""
        if "dimension" not in coordinates:
            raise ValueError("a zonal cylinder grid is rebuilt from its cells, its rings and its dimension: pass "
                             "coordinates['dimension'].")
        s, theta = np.asarray(coordinates["s"]), np.asarray(coordinates["theta"])
        ds = float(s[1] - s[0])
        return cls(int(np.asarray(coordinates["dimension"])), theta.size - 1, s.size,
                   (float(np.exp(s[0] - ds / 2)), float(np.exp(s[-1] + ds / 2))))

    def cell_averages(self, f, order: int = 4) -> np.ndarray:
        """(1/Δs)∫_cell f(u_j, s) ds by Gauss–Legendre with ``order`` nodes per cell."""
        x, wq = np.polynomial.legendre.leggauss(order)
        out = np.zeros(self.shape)
        for xi, wi in zip(x, wq):
            s = (self.s + 0.5 * self.ds * xi)[:, None]
            out += 0.5 * wi * np.broadcast_to(np.asarray(f(self.u[None, :], s), dtype=float), self.shape)
        return out

    def __repr__(self):
        return (f"ZonalCylinderGrid(d={self.d}, lmax={self.lmax}, n_s={self.n_s}, "
                f"radii=({self.radii[0]:g}, {self.radii[1]:g}))")


def _ring_kernels(d: int, beta: float, u, v):
    """e^{−β}-scaled (k, ∂_u k/β, ∂_β k) of the ring kernel (module docstring) at nodes u (rows) × rings v."""
    u, v = np.asarray(u)[:, None], np.asarray(v)[None, :]
    su2, sv2 = 1.0 - u * u, 1.0 - v * v
    b = 0.5 * (d - 1)
    z = 0.25 * beta * beta * su2 * sv2
    scale = np.exp(beta * (u * v - 1.0))
    F0, F1 = hyp0f1(b, z), hyp0f1(b + 1.0, z) / b
    k = scale * F0
    du = scale * (v * F0 - 0.5 * beta * u * sv2 * F1)
    dbeta = scale * (u * v * F0 + 0.5 * beta * su2 * sv2 * F1)
    return k, du, dbeta


def _zonal_heads(model, d: int):
    """(normalisation, [(β, c, normalized)]) of a pre/peri-LN Transformer with zonal self-attention heads acting on
    R^d, or ``ValueError`` naming what is refused (:func:`meanfield.models.normalization.radial_zonal_heads`)."""
    return radial_zonal_heads(model, d, "solve_zonal_radial", f"the zonal S^{d - 1} × (0, ∞)")


class _Field:
    """(α, a) at given nodes from the rings' marginal f̄ (ring values, σ̄ density), summed over the heads, then
    scaled by the normalisation (pre-LN as is, peri-LN over |A| = √(α²(1 − u²) + a²))."""

    def __init__(self, d, norm, head_list, nodes, rings, ring_weights):
        self.norm = norm
        self.heads = []
        for beta, c, normalized in head_list:
            k, du, db = _ring_kernels(d, beta, nodes, rings)
            scale = c if normalized else c * np.exp(beta)  # USA: the unscaled sums, no division by φ
            self.heads.append((normalized, scale, k * ring_weights, du * ring_weights, db * ring_weights))
        self.sin2 = 1.0 - np.asarray(nodes) ** 2
        self.bound = sum(abs(scale) for _, scale, *_ in self.heads)  # the largest |A| any law gives

    def __call__(self, marginal):
        alpha = a = 0.0
        for normalized, scale, K, Du, Db in self.heads:
            phi = (K @ marginal) if normalized else 1.0
            alpha = alpha + scale * (Du @ marginal) / phi
            a = a + scale * (Db @ marginal) / phi
        return self.norm.scale_average((alpha, a), lambda: self._length(alpha, a))

    def _length(self, alpha, a):
        A = np.sqrt(alpha * alpha * self.sin2 + a * a)
        if not np.all(A > 1e-12 * self.bound):
            raise FloatingPointError("the normalisation divides A by |A|, but |A| vanishes at a node (e.g. the "
                                     "uniform law at β = 0): its direction is undefined there.")
        return A


def zonal_field(model, d: int, marginal, u):
    r"""(α(u), a(u)) of the module docstring — A(θ) = α(u)(e − uθ) + a(u)θ, then scaled by the model's normalisation
    (peri-LN: over |A|) — at polar cosines ``u``, for the zonal law of directions whose σ̄-density has the values
    ``marginal`` at the Gauss rings of ZonalGrid(d, len(marginal) − 1)."""
    norm, head_list = _zonal_heads(model, d)
    marginal = np.asarray(marginal, dtype=float)
    basis = ZonalGrid(d, marginal.size - 1).basis
    return _Field(d, norm, head_list, np.atleast_1d(np.asarray(u, float)), basis.u, basis.mean_weights)(marginal)


class _Rate:
    def __init__(self, grid: ZonalCylinderGrid, norm, head_list):
        d, L = grid.d, grid.lmax
        self.grid = grid
        Md = dealiased_nodes(L)
        self.ud, wd = gauss(d, Md)
        P, P1 = orthonormal(d, L, self.ud, derivatives=1, normalized=True)
        self.P = P  # coefficients → values at the dealiased nodes
        self.G = (P1 * (wd * (1.0 - self.ud ** 2))[:, None]).T  # flux at the dealiased nodes → ∂_t c̄
        self.field_d = _Field(d, norm, head_list, self.ud, grid.u, grid.w)
        self.field_r = _Field(d, norm, head_list, grid.u, grid.u, grid.w)
        self.decay = np.exp(-grid.s)[:, None]
        self.face_decay = np.exp(-grid.s_edges[1:-1])[:, None]
        self.sin_d = np.sqrt(1.0 - self.ud ** 2)

    def marginal(self, y):
        return y.sum(axis=0) * self.grid.ds

    def __call__(self, y):
        g = self.grid
        m = self.marginal(y)
        alpha_d, _ = self.field_d(m)
        _, a_r = self.field_r(m)
        C = g.zonal.coefficients(y)  # (n_s, L + 1)
        rho_d = C @ self.P.T  # (n_s, Md)
        rate_c = (rho_d * alpha_d) @ self.G.T
        rate_c[:, 0] = 0.0
        out = g.zonal.from_coefficients(rate_c) * self.decay
        flux = self.face_decay * a_r * (0.5 * (y[:-1] + y[1:]))
        out[:-1] -= flux / g.ds
        out[1:] += flux / g.ds
        return out

    def speeds(self, y):
        """(max |θ̇| r, max |ṙ|): the polar angle's and the radius's speeds without the factor 1/r."""
        m = self.marginal(y)
        alpha_d, a_d = self.field_d(m)
        return float(np.max(np.abs(alpha_d) * self.sin_d)), float(np.max(np.abs(a_d)))


class ZonalRadialProblem(GuardedProblem):
    """The zonal cylinder's continuity equation for :class:`~meanfield.integrate.Integrator` (module docstring):
    ``rate(values)`` on a :class:`ZonalCylinderGrid`, values of shape (n_s, lmax + 1), and the CFL cap ``max_step`` =
    r_min × min(Δθ_min/max|α sin θ|, Δs/max|a|) from the speeds at the accepted state (``probe``, which the radial
    guard calls after every step: ``probe_accepted``)."""

    probe_accepted = True
    hints = {"edge": "Widen `radii` (ZonalCylinderGrid), keeping the outer cells empty.",
             "resolution": "Refine the zonal cylinder grid (lmax, n_s), or loosen the monitor's neg_tol/tail_tol."}
    words = "the zonal cylinder density"

    def __init__(self, model, grid: ZonalCylinderGrid):
        norm, head_list = _zonal_heads(model, grid.d)
        self.kind, self.grid = norm.name, grid
        self.rhs = _Rate(grid, norm, head_list)
        self.speeds = (0.0, 0.0)

    def rate(self, y):
        return self.rhs(y)

    def probe(self, y):
        self.speeds = self.rhs.speeds(y)

    def max_step(self):
        g = self.grid
        wmax, bmax = self.speeds
        if not (wmax > 0 or bmax > 0):
            return np.inf
        bounds = [g.gap / wmax if wmax > 0 else np.inf, g.ds / bmax if bmax > 0 else np.inf]
        return float(g.radii[0] * min(bounds))


class ZonalCylinderRepresentation(RadialRepresentation):
    """Pre/peri-LN densities on the zonal S^{d-1} × (0, ∞), a :class:`~meanfield.Density` on a
    :class:`ZonalCylinderGrid`, on the one integrator (module docstring): the "zonal-cylinder" representation
    :func:`meanfield.solve` plans for the members of the product family
    :data:`~meanfield.domains.products.ZONAL_CYLINDER`. Its stops, defaults and diagnostics are those of every radial
    representation (:class:`~meanfield.representations.radial.RadialRepresentation`)."""

    name = "zonal-cylinder"
    domain_words = "zonal S^(d-1) × (0, ∞) (a ZonalCylinderGrid)"
    accuracy = "spectral in the polar cosine, second order in s = log r (docs/MATH.md §10)"

    def heads(self, model, domain):
        return _zonal_heads(model, domain.dim)

    def problem(self, model, grid):
        return ZonalRadialProblem(model, grid)


register(ZonalCylinderRepresentation())


@dataclass(frozen=True)
class ZonalRadialSolution:
    r"""ρ(u_j, s, t) on a :class:`~meanfield.solvers.zonal_cylinder.ZonalCylinderGrid` (cell averages in s, density w.r.t. dσ̄(u) ds): a view of the
    :class:`~meanfield.Solution` that :func:`meanfield.solve` returned (``solution``; its frames are densities on the
    grid).

    Attributes
    ----------
    t : ndarray (T,)
    values : ndarray (T, n_s, lmax + 1)
    grid : ZonalCylinderGrid
    dt : float
        The smallest step taken (inf where no step was taken).
    mass : ndarray (T,)
    status, message
        The Solution's: how the run ended.
    solution : Solution
    """

    t: np.ndarray
    values: np.ndarray
    grid: ZonalCylinderGrid
    dt: float
    mass: np.ndarray
    status: Status = Status.SUCCESS
    message: str = ""
    solution: object = None

    @property
    def polar_marginal(self) -> np.ndarray:
        """f̄(u_j, t) = ∫ ρ ds, the σ̄-density of the directions at the rings, shape (T, lmax + 1)."""
        return self.values.sum(axis=1) * self.grid.ds

    @property
    def log_radius_density(self) -> np.ndarray:
        """g(s_m, t) = ∫ ρ dσ̄, cell averages w.r.t. ds, shape (T, n_s)."""
        return self.values @ self.grid.w

    def polar_marginal_at(self, u, k: int = -1) -> np.ndarray:
        """The σ̄-density of the directions at polar cosines ``u`` (the rings' polynomial interpolant)."""
        return self.grid.zonal.basis.evaluate(self.grid.zonal.coefficients(self.polar_marginal[k]), u)

    def polar_angle_cdf(self, theta, k: int = -1) -> np.ndarray:
        r"""P(polar angle <= θ) at increasing θ ∈ [0, π] from 0: the density f̄(cos θ) sin^{d−2}θ / B_d integrated
        by Gauss–Legendre on each interval of ``theta`` (8 nodes; exact for the polynomial interpolant to the
        rule's order)."""
        theta = np.asarray(theta, dtype=float)
        x, wq = np.polynomial.legendre.leggauss(8)
        a, b = theta[:-1, None], theta[1:, None]
        th = 0.5 * (a + b) + 0.5 * (b - a) * x
        dens = self.polar_marginal_at(np.cos(th), k) * np.sin(th) ** (self.grid.d - 2)
        parts = (dens * wq).sum(axis=1) * 0.5 * (b - a)[:, 0]
        # B_d = ∫_0^π sin^{d−2}: by the same rule on 64 panels
        tt = np.linspace(0.0, np.pi, 65)
        ta, tb = tt[:-1, None], tt[1:, None]
        tq = 0.5 * (ta + tb) + 0.5 * (tb - ta) * x
        B = float(((np.sin(tq) ** (self.grid.d - 2)) * wq).sum() * 0.5 * (tt[1] - tt[0]))
        return np.concatenate([[0.0], np.cumsum(parts)]) / B

    def log_radius_cdf(self, s, k: int = -1) -> np.ndarray:
        """P(log r <= s): piecewise linear between the cell edges (the cell averages' CDF)."""
        g = self.log_radius_density[k]
        F = np.concatenate([[0.0], np.cumsum(g) * self.grid.ds])
        return np.interp(s, self.grid.s_edges, F)


def solve_zonal_radial(model, d: int, rho0, t_end: float, t_eval=None, *, lmax: int = 32, n_s: int = 128,
                       radii=(0.25, 8.0), method: str = "rk4", cfl: float = 0.2, dt: float | None = None,
                       edge_tol: float = 1e-10, monitor: ResolutionMonitor | None = None) -> ZonalRadialSolution:
    r"""The density of pre/peri-LN tokens x = rθ whose law is zonal about e (module docstring), on the rings × cells
    of s: a view of :func:`meanfield.solve` on a :class:`~meanfield.Density` of a :class:`~meanfield.solvers.zonal_cylinder.ZonalCylinderGrid`.

    Parameters
    ----------
    model : Transformer
        ``Transformer(attention, normalization="pre" | "peri")`` with zonal self-attention heads (Q = qI, K = kI,
        V = cI; SA or USA; several heads sum their averages), no noise, non-causal.
    d : int
        S^{d-1} ⊂ R^d, d >= 2.
    rho0 : callable or ndarray
        ``rho0(u, s)``: the initial density w.r.t. dσ̄(u) ds (broadcasting), averaged over the cells of s by
        Gauss–Legendre; or the cell values, shape (n_s, lmax + 1). Finite, >= 0, normalised here to mass 1.
    t_end : float
        The final time (from 0).
    t_eval : array_like, optional
        Strictly increasing output times in [0, t_end] (each landed on by the steps). Default (0, t_end).
    lmax, n_s, radii
        :class:`~meanfield.solvers.zonal_cylinder.ZonalCylinderGrid`.
    method : {"rk4", "ssprk3"}
    cfl, dt
        The step dt = cfl × r_min × min(Δθ_min/max|α sin θ|, Δs/max|a|) at each accepted state (module docstring),
        or a fixed ``dt``.
    edge_tol : float
        Mass (at the start or after any step) in the GUARD_CELLS outer cells of s at either end above which the run
        stops (:class:`RadiusRangeError`, a ``ValueError``).
    monitor : ResolutionMonitor, optional
        ``tail_tol`` (the polar spectrum's top band, summed over s, relative to its norm; default 1e-10) and
        ``neg_tol`` (the negative part's mass relative to the total; default :data:`NEG_TOL`) stop the run with
        :class:`~meanfield.integrate.monitor.ResolutionError`.

    Returns
    -------
    ZonalRadialSolution

    Raises
    ------
    ValueError
        A model or argument it cannot take (naming it); :class:`RadiusRangeError` where ρ0 or the solution puts mass
        in the guard cells, carrying the solution up to then.
    ResolutionError
        The polar tail or a negative undershoot passed the monitor's thresholds (the partial solution attached).
    FloatingPointError
        A non-finite state, or peri-LN's |A| = 0.
    """
    _zonal_heads(model, d)
    t_end = checks.positive(t_end, "t_end")
    grid = ZonalCylinderGrid(d, lmax, n_s, radii)
    settings = view_settings(method, edge_tol, monitor, cfl, dt)
    start = Density(grid, initial_values(rho0, grid, "u, s", "(n_s, lmax + 1)",
                                           "u, log r"), check=False)
    sol = solve_product(model, start, (0.0, t_end), t_eval, settings)
    values = np.array([f.values for f in sol.frames]).reshape((len(sol.t),) + grid.shape)
    out = ZonalRadialSolution(sol.t, values, grid, float(sol.diagnostics["min_step"]), sol.mass, sol.status,
                              sol.message, sol)
    raise_for_walls(sol, out)
    sol.raise_for_status()
    return out
