r"""The zonal grid of S^{d-1}: a density ρ(x) = f(⟨x, e⟩) at the Gauss nodes of its zonal basis (MATH.md §9).

A node is a ring {x ∈ S^{d-1} : ⟨x, e⟩ = u_j} — a point of the zonal domain, given by its polar angle
θ_j = arccos u_j — and its quadrature weight is the ring's share of the surface measure, so Σ_j f(u_j) w_j = ∫ f dσ
exactly for polynomials of degree <= 2 lmax + 1. Densities are with respect to surface area (as on S¹ and S²: the
uniform law is 1/|S^{d−1}|, 1.5e55 at d = 128), expanded in the σ̄-orthonormal zonal polynomials p̄_l
(:class:`~meanfield.domains.gegenbauer.ZonalBasis`), degree <= lmax.

In high dimension the outer rings carry a negligible share of the sphere (at d = 128 and lmax = 256 the first ring's
weight is 1e-76 of the total), and a value synthesised there from coefficients carries their round-off times
p̄_l(u_j) ~ w̄_j^{−1/2}: ε‖f‖_{L²(σ̄)}/√w̄_j, up to 1e22 of the mean at those rings. The rings' masses ρ_j w_j — what
the equation, the monitor, E_β, the distances and the figures of the polar angle's law read — are accurate to
ε‖f‖√w̄_j. Read a solution's values there with that in mind (or its masses, ``density.as_measure()``).
"""

from __future__ import annotations

import numpy as np

from ..base import Diagonal, Grid, Measure
from ..gegenbauer import ZonalBasis, log_sphere_area

__all__ = ["ZonalGrid", "MAX_DIMENSION", "axis", "polar_angles", "uniform_polar_cdf", "cell_measure"]

#: The uniform density 1/|S^{d−1}| stays below 1e200 up to this d (the clusters' peaks need the 1e108 above it): the
#: largest dimension whose densities against surface area float64 holds. Particles live on any S^{d−1}.
MAX_DIMENSION = next(d for d in range(3, 4000) if -log_sphere_area(d - 1) > 200.0 * np.log(10.0)) - 1


def axis(d: int) -> np.ndarray:
    """The axis e of the zonal densities in R^d: e_1 on the circle (the polar angle is the circle's angle θ, a zonal
    density an even one, ρ(θ) = ρ(−θ)), the north pole e_d for d >= 3 (the polar angle is S²'s colatitude)."""
    e = np.zeros(d)
    e[0 if d == 2 else -1] = 1.0
    return e


def check_dimension(d) -> int:
    """``d`` as the integer dimension of a zonal domain (``ValueError`` naming the bound otherwise)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"`d` must be an integer (S^(d-1) ⊂ R^d), got {d!r}.")
    if d < 2:
        raise ValueError(f"`d` must be >= 2 (S^(d-1) ⊂ R^d: d = 2 is the circle), got {d}.")
    if d > MAX_DIMENSION:
        raise ValueError(
            f"`d` = {d}: zonal densities are densities against surface area, and the uniform law 1/|S^(d-1)| = "
            f"10^{-log_sphere_area(d - 1) / np.log(10.0):.0f} leaves float64 (with room for clusters) past "
            f"d = {MAX_DIMENSION}. Particles run on any S^(d-1) (particles.simulate); the stationary branch, "
            "critical noise and linear rates (meanfield.analysis.stationary) take the zonal basis of any d.")
    return int(d)


def polar_angles(points, d: int, name: str = "points") -> np.ndarray:
    """θ = arccos⟨x, e⟩ of points of the zonal domain (polar angles, shape (..., 1)) or of unit vectors in R^d
    (shape (..., d)), shape (...)."""
    x = np.asarray(points, dtype=float)
    if x.ndim >= 1 and x.shape[-1] == 1:
        theta = x[..., 0]
        if not np.all(np.isfinite(theta)) or np.any((theta < -1e-12) | (theta > np.pi + 1e-12)):
            raise ValueError(f"`{name}`: polar angles must lie in [0, π].")
        return np.clip(theta, 0.0, np.pi)
    if x.ndim >= 1 and x.shape[-1] == d:
        from ..sphere.geometry import check_on_sphere

        x = check_on_sphere(x, name)
        return np.arccos(np.clip(x @ axis(d), -1.0, 1.0))
    raise ValueError(f"`{name}` must be polar angles (shape (..., 1)) or unit vectors of R^{d} (shape (..., {d})), "
                     f"got shape {x.shape}.")


def uniform_polar_cdf(d: int, theta) -> np.ndarray:
    """The fraction of S^{d-1} within polar angle θ of e: ½ I_{sin²θ}((d − 1)/2, ½) for θ <= π/2 and one minus it
    (at π − θ) beyond (I the regularised incomplete beta function; θ/π on the circle)."""
    from scipy.special import betainc

    theta = np.clip(np.asarray(theta, dtype=float), 0.0, np.pi)
    half = 0.5 * betainc(0.5 * (d - 1), 0.5, np.sin(np.minimum(theta, np.pi - theta)) ** 2)
    return np.where(theta <= 0.5 * np.pi, half, 1.0 - half)


def cell_measure(d: int, edges) -> np.ndarray:
    """The surface measure of the zones between consecutive polar angles ``edges`` (increasing, in [0, π]), from the
    tail on each zone's side of the equator (no cancellation: near the poles the zones of S^127 hold 1e-76 and less)."""
    from scipy.special import betainc

    edges = np.clip(np.asarray(edges, dtype=float), 0.0, np.pi)
    tail = 0.5 * betainc(0.5 * (d - 1), 0.5, np.sin(np.minimum(edges, np.pi - edges)) ** 2)  # the cap beyond
    a, b = edges[:-1], edges[1:]
    north = np.where(b <= 0.5 * np.pi, tail[1:] - tail[:-1], np.nan)  # caps about e: F = tail
    south = np.where(a >= 0.5 * np.pi, tail[:-1] - tail[1:], np.nan)  # caps about −e: 1 − F = tail
    across = 1.0 - tail[:-1] - tail[1:]  # a zone containing the equator
    share = np.where(b <= 0.5 * np.pi, north, np.where(a >= 0.5 * np.pi, south, across))
    return np.exp(log_sphere_area(d - 1)) * share


class ZonalGrid(Grid):
    """lmax + 1 rings of S^{d-1} at the Gauss nodes of the zonal basis (module docstring).

    Parameters
    ----------
    d : int
        The sphere S^{d-1} ⊂ R^d, 2 <= d <= :data:`MAX_DIMENSION`.
    lmax : int
        Largest degree of the expansion, >= 2.

    Attributes
    ----------
    d, lmax : int
    dim : int
        d, the ambient dimension of the sphere (what a model's matrices must act on); the grid's points are polar
        angles, shape (lmax + 1, 1).
    theta : ndarray, shape (lmax + 1,)
        Polar angles θ_j = arccos u_j of the rings, increasing.
    points : ndarray, shape (lmax + 1, 1)
        The rings as points of the zonal domain (their polar angles).
    weights : ndarray, shape (lmax + 1,)
        The rings' surface measure (sum |S^{d−1}|).
    basis : ZonalBasis
        The zonal basis on these nodes (M = lmax + 1).
    """

    resolution_name = "lmax"  # what refinement doubles

    def linear_transport_refusal(self) -> str:
        return (f"the push-forward of a zonal density by a linear layer's map u ↦ e^A u/|e^A u| (common noise) is not "
                f"implemented on this grid ({self!r}): a zonal density is a law of the polar angle alone, and a map "
                "that moves the pole makes it non-zonal (it needs the sphere's grid: domain 'sphere', S²), while maps "
                "that fix the pole are not written either; run the density on S² or the particles alone (drop [grid])")

    def __init__(self, d: int, lmax: int):
        d = check_dimension(d)
        if isinstance(lmax, bool) or not isinstance(lmax, (int, np.integer)):
            raise TypeError(f"`lmax` must be an integer, got {lmax!r}.")
        if lmax < 2:
            raise ValueError(f"`lmax` must be at least 2, got {lmax}.")
        self.d, self.lmax = d, int(lmax)
        self.basis = ZonalBasis(d, self.lmax + 1)
        self.theta = self.basis.theta
        self.points = self.theta[:, None].copy()
        self.weights = self.basis.weights
        self.points.setflags(write=False)

    @property
    def dim(self) -> int:
        return self.d

    @property
    def domain(self):
        from . import zonal_domain

        return zonal_domain(self.d)

    @property
    def shape(self) -> tuple[int]:
        return (self.lmax + 1,)

    @property
    def n(self) -> int:
        """The resolution parameter refinement doubles (lmax)."""
        return self.lmax

    @property
    def spacing(self) -> float:
        """π / lmax, the shortest resolved half-wavelength in θ (for the CFL step)."""
        return np.pi / self.lmax

    @property
    def covering_radius(self) -> float:
        """The largest distance |θ − θ_j| from a polar angle in [0, π] to the nearest ring."""
        th = self.theta
        return float(max(th[0], np.pi - th[-1], 0.5 * np.max(np.diff(th)) if th.size > 1 else np.pi))

    def __eq__(self, other) -> bool:
        return isinstance(other, ZonalGrid) and other.d == self.d and other.lmax == self.lmax

    def __hash__(self) -> int:
        return hash(("zonal", self.d, self.lmax))

    def __repr__(self) -> str:
        return f"ZonalGrid(d={self.d}, lmax={self.lmax})"

    def values_of(self, f) -> np.ndarray:
        """f at the rings, for a function ``f`` of unit vectors of R^d (..., d), as on every sphere: evaluated at three
        points of each ring (cos θ_j e + sin θ_j ξ for fixed unit vectors ξ ⊥ e) and refused (``ValueError`` naming
        the ring) where they differ by more than 1e-10 of max |f|: initial data on the zonal domain must be zonal
        about e."""
        e = axis(self.d)
        if self.d == 2:
            xis = np.array([[0.0, 1.0], [0.0, -1.0]])
        else:
            k = np.arange(self.d, dtype=float)
            xis = np.stack([np.eye(self.d)[0], np.where(k < self.d - 1, 1.0, 0.0),
                            np.where(k < self.d - 1, np.cos(1.0 + 2.0 * k), 0.0)])
            xis /= np.linalg.norm(xis, axis=1, keepdims=True)
        c, s = np.cos(self.theta)[None, :, None], np.sin(self.theta)[None, :, None]
        x = c * e + s * xis[:, None, :]
        values = np.asarray(f(x), dtype=float)
        if values.shape != (len(xis),) + self.shape:
            raise ValueError(f"`f` must return one value per point, shape (..., {self.d}) → (...); got shape "
                             f"{values.shape} for points of shape {x.shape}.")
        spread = np.max(np.abs(values - values[0]), axis=0)
        scale = float(np.max(np.abs(values))) if values.size else 0.0
        if np.any(spread > 1e-10 * scale):
            j = int(np.argmax(spread))
            raise ValueError(f"`f` is not zonal about the axis e = e_{1 if self.d == 2 else self.d}: on the ring of "
                             f"polar angle θ = {self.theta[j]:.6g} it takes values {values[:, j]} (a zonal density is "
                             "a function of ⟨x, e⟩ alone; the model keeps it zonal, and a rotation of the data "
                             "cannot be represented here).")
        return values[0]

    def refined(self, factor: int = 2) -> "ZonalGrid":
        return ZonalGrid(self.d, self.lmax * int(factor))

    def integrate(self, values) -> np.ndarray:
        """∫ f dσ over S^{d-1} by the Gauss rule (last axis)."""
        return np.asarray(values) @ self.weights

    def coordinates(self) -> dict:
        return {"theta": (self.theta.copy(), {"long_name": "polar angle θ = arccos⟨x, e⟩", "units": "rad",
                                              "dimension": self.d})}

    @classmethod
    def from_coordinates(cls, coordinates) -> "ZonalGrid":
        """The grid of these polar angles; ``coordinates["dimension"]`` gives d (the nodes depend on it)."""
        if "dimension" not in coordinates:
            raise ValueError("a zonal grid is rebuilt from its polar angles and its dimension: pass "
                             "coordinates['dimension'] (a results file keeps it as the attribute 'dimension').")
        return cls(int(np.asarray(coordinates["dimension"])), len(coordinates["theta"]) - 1)

    def coarsened(self, values) -> Measure:
        """The expansion truncated to degree lmax/2, as a grid measure (its rings and their masses)."""
        coarse = ZonalGrid(self.d, max(2, self.lmax // 2))
        return Measure(coarse.points, self.resample(values, coarse.lmax) * coarse.weights, self.domain)

    # ----------------------------------------------------------- spectra
    def coefficients(self, values) -> np.ndarray:
        """c̄_l = ∫ f p̄_l dσ̄, l = 0..lmax (last axis): the orthonormal coefficients for the normalised measure
        (c̄_0 = the mean of f, 1/|S^{d−1}| for the uniform law)."""
        return self.basis.coefficients(values)

    def from_coefficients(self, coefficients) -> np.ndarray:
        """Nodal values from c̄_l (inverse of :meth:`coefficients`; fewer degrees are zero-padded)."""
        return self.basis.values(coefficients)

    def laplacian(self) -> Diagonal:
        """Δ_S on zonal functions: −l(l + d − 2) on c̄_l (MATH.md §9)."""
        return Diagonal(self.coefficients, self.from_coefficients, np.array(self.basis.eigenvalues))

    def resample(self, values, lmax: int) -> np.ndarray:
        """The expansion on the grid of degree ``lmax`` (zero-padding is exact; truncation drops the top degrees)."""
        c = self.coefficients(values)
        new = ZonalGrid(self.d, int(lmax))
        return new.from_coefficients(c[..., : new.lmax + 1])

    def interpolate(self, values, points) -> np.ndarray:
        """The expansion at points of the zonal domain (polar angles, shape (..., 1)) or at unit vectors of R^d
        (shape (..., d)); shape (...)."""
        theta = polar_angles(points, self.d)
        return self.basis.evaluate(self.coefficients(values), np.cos(theta))

    def spectrum(self, values) -> np.ndarray:
        """The coefficients c̄_l (:meth:`coefficients`), which the resolution check and the energy both read."""
        return self.coefficients(values)

    def spectral_tail(self, values, spectrum=None) -> float:
        """max |c̄_l| over the top 1/16 of the degrees (at least 2), relative to ‖c̄‖ = ‖f‖_{L²(σ̄)} (|c̄_0| for a
        near-uniform density, as on S¹ and S²; in high dimension a cluster's coefficients exceed c̄_0 by many
        decades — e^{κu} spans e^{2κ} — and the projection's round-off sits at ε‖c̄‖, so the tail is measured there)."""
        c = np.abs(self.coefficients(values) if spectrum is None else spectrum)
        width = max(2, self.lmax // 16)
        return float(np.max(c[-width:]) / np.linalg.norm(c))

    def sign_check(self, values) -> tuple[float, float, str]:
        """(the rings' negative mass Σ_j min(ρ_j w_j, 0), the total mass, their words): the sign that matters is the
        mass's, and relative to the whole; a far ring's value, of negligible mass, carries the expansion's undershoot
        (in high dimension f spans hundreds of decades between a cluster and the far side: e^{κu},
        κ ≈ (d − 1)/(2(1 − r)), is approximated to 1e-15 of its L² norm with ring masses dipping to −1e-11 of the total
        at d = 128, r = 0.6). The monitor's −neg_tol × total thus also bounds the mass a hand-over to the rings, which
        keep the positive masses, adds."""
        mass = np.asarray(values) * self.weights
        negative, total = float(np.sum(np.minimum(mass, 0.0))), float(np.sum(mass))
        return negative, total, f"negative ring masses {negative:.3g}, total mass {total:.3g}"

    def resolution(self, values, tail_tol: float, *, spectrum=None) -> str | None:
        tail = self.spectral_tail(values, spectrum)
        if not tail <= tail_tol:
            return f"the spectral tail {tail:.6g} exceeds tail_tol = {tail_tol:.6g} on {self!r}"
        return None
