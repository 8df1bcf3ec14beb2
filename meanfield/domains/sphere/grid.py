"""The Gauss–Legendre grid of S² (conventions of :mod:`meanfield.domains.sphere.transforms`)."""

from __future__ import annotations

import numpy as np

from ..base import Diagonal, Grid, Measure, get
from .ducc import complex_alm, real_cilm
from .geometry import check_on_sphere
from .pushforward import determinant_and_gram_defect, pushforward, pushforward_stencil
from .transforms import BACKENDS, default_backend, degree_power, evaluate, glq, laplacian, nodes

__all__ = ["SphereGrid"]


class SphereGrid(Grid):
    """Gauss–Legendre grid of degree lmax on S².

    Parameters
    ----------
    lmax : int
        Spherical-harmonic degree, >= 2.
    backend : {"ducc0", "pyshtools", "shtns"}, optional
        Transform library; default ducc0 where importable (:func:`default_backend`). "shtns" is
        optional (it needs FFTW from the system; ``ImportError`` with the install line where absent).

    Attributes
    ----------
    lmax : int
    colatitudes, longitudes : ndarray, shapes (lmax + 1,) and (2 lmax + 1,)
    points : ndarray, shape (lmax + 1, 2 lmax + 1, 3)
        Unit vectors of the nodes.
    weights : ndarray, shape (lmax + 1, 2 lmax + 1)
        Quadrature weights w_i 2π/(2 lmax + 1), exact for degree <= 2 lmax.
    """

    dim = 3
    resolution_name = "lmax"  # what refinement doubles

    def __init__(self, lmax: int, backend: str | None = None):
        if isinstance(lmax, bool) or not isinstance(lmax, (int, np.integer)):
            raise TypeError(f"`lmax` must be an integer, got {lmax!r}.")
        if lmax < 2:
            raise ValueError(f"`lmax` must be at least 2, got {lmax}.")
        name = default_backend() if backend is None else backend
        if name not in BACKENDS:
            raise ValueError(f"`backend` must be one of {sorted(BACKENDS)}, got {backend!r}.")
        self.backend = BACKENDS[name]
        if name == "shtns":
            from .shtns_plans import require

            require()  # the ImportError that says how to install it, now rather than at the first transform
        self.lmax = int(lmax)
        _, w = glq(self.lmax)
        nlon = 2 * self.lmax + 1
        self.colatitudes, self.longitudes, self.points = nodes(self.lmax)
        self.weights = np.outer(w, np.full(nlon, 2.0 * np.pi / nlon))
        for a in (self.colatitudes, self.longitudes, self.points, self.weights):
            a.setflags(write=False)

    @property
    def domain(self):
        return get("sphere")

    @property
    def shape(self) -> tuple[int, int]:
        return (self.lmax + 1, 2 * self.lmax + 1)

    @property
    def n(self) -> int:
        """The resolution parameter refinement doubles (here lmax)."""
        return self.lmax

    @property
    def spacing(self) -> float:
        """π / lmax, the shortest resolved half-wavelength (for the CFL step)."""
        return np.pi / self.lmax

    @property
    def colatitude_edges(self) -> np.ndarray:
        """The edges of the cells around the node rows: 0, the midpoints of neighbouring colatitudes, π."""
        return np.concatenate([[0.0], 0.5 * (self.colatitudes[1:] + self.colatitudes[:-1]), [np.pi]])

    @property
    def covering_radius(self) -> float:
        """An upper bound on the geodesic distance from any point of S² to the nearest node.

        Go along the meridian to the nearest node colatitude (at most half the
        largest gap, or the polar cap), then along the parallel to the nearest
        longitude (at most π/(2 lmax + 1))."""
        th = self.colatitudes
        lat = max(float(np.max(np.diff(th))) / 2.0, float(th[0]), float(np.pi - th[-1]))
        return lat + np.pi / (2 * self.lmax + 1)

    def __eq__(self, other) -> bool:
        return isinstance(other, SphereGrid) and other.lmax == self.lmax

    def __hash__(self) -> int:
        return hash(("sphere", self.lmax))

    def __repr__(self) -> str:
        return f"SphereGrid(lmax={self.lmax})"

    def refined(self, factor: int = 2) -> "SphereGrid":
        return SphereGrid(self.lmax * int(factor), backend=self.backend.name)

    def integrate(self, values: np.ndarray) -> float:
        return float(np.sum(np.asarray(values) * self.weights))

    def coordinates(self) -> dict:
        return {"colatitude": (self.colatitudes.copy(), {"units": "rad", "grid": "Gauss-Legendre"}),
                "longitude": (self.longitudes.copy(), {"units": "rad"})}

    @classmethod
    def from_coordinates(cls, coordinates) -> "SphereGrid":
        return cls(len(coordinates["colatitude"]) - 1)

    def coarsened(self, values) -> Measure:
        """The expansion resampled at lmax/2, as a grid measure."""
        coarse = SphereGrid(max(2, self.lmax // 2), backend=self.backend.name)
        weights = (self.resample(values, coarse.lmax) * coarse.weights).ravel()
        return Measure(coarse.points.reshape(-1, 3), weights, self.domain)

    # ----------------------------------------------------------- spectra
    def coefficients(self, values: np.ndarray) -> np.ndarray:
        """Orthonormal coefficients c_lm, shape (2, lmax + 1, lmax + 1)."""
        return self.backend.analysis(values, self.lmax)

    def from_coefficients(self, cilm: np.ndarray) -> np.ndarray:
        return self.backend.synthesis(cilm, self.lmax)

    def laplacian(self) -> Diagonal:
        """Δ_S on the expansion of degree lmax: −l(l + 1) on the c_lm (MATH.md §2.1)."""
        B, L = self.backend, self.lmax
        return Diagonal(lambda v: B.analysis(v, L), lambda c: B.synthesis(c, L),
                        np.broadcast_to(laplacian(L), (2, L + 1, L + 1)).copy())

    def resample(self, values: np.ndarray, lmax: int) -> np.ndarray:
        """The expansion on the grid of degree lmax (zero-padding is exact)."""
        return self.backend.synthesis(self.coefficients(values), int(lmax))

    def interpolate(self, values: np.ndarray, points) -> np.ndarray:
        """Evaluate the spherical-harmonic expansion at unit vectors of shape (..., 3)."""
        x = check_on_sphere(points, "points")
        if x.shape[-1] != 3:
            raise ValueError(f"`points` must be unit vectors in R^3 for a sphere grid, got shape {x.shape}.")
        return evaluate(self.coefficients(values), x)

    def linear_transport_refusal(self) -> None:
        return None

    def linear_transport(self, values: np.ndarray, B, spectrum: np.ndarray | None = None) -> np.ndarray:
        r"""The density pushed forward by φ(u) = Bu/|Bu| (B a 3×3 matrix, det B > 0), at the nodes (MATH.md §13):
        (φ_#ρ)(x) = ρ(φ^{-1}(x)) J(x), φ^{-1}(x) = B^{-1}x/|B^{-1}x|, J(x) = det B^{-1} / |B^{-1}x|³ (the Jacobian
        of u ↦ Au/|Au| on S² is det A/|Au|³), the expansion at the preimages by p × p Lagrange stencils on its
        values on an equiangular grid of 2σ(lmax + 1) longitudes (:mod:`.pushforward`: σ and p chosen from the
        spectrum's a-priori bound, within 1e-14 Σ_l U_l >= 1e-14 sup|ρ|), or by ducc0's non-uniform synthesis
        (:func:`.transforms.evaluate`) where no stencil p <= 16 meets it: spectrally accurate for a resolved
        density (the result is truncated to degree lmax by the next analysis). A rotation (BᵀB = I to
        1e-13) keeps the degree: its coefficients are rotated by ducc0's ``rotate_alm`` (:func:`rotated`), and the
        change is synthesised and added to the values (an analysis-synthesis round trip alone drifts by ~5e-14 a
        trip at lmax 24; the change carries the transforms' error in proportion to the rotation's size)."""
        B = np.asarray(B, dtype=float)
        if B.shape != (3, 3) or not np.all(np.isfinite(B)):
            raise ValueError(f"`B` must be a finite 3×3 matrix, got shape {B.shape}.")
        det, defect = determinant_and_gram_defect(B)  # det B and max |BᵀB − I| (compiled: numpy's calls cost more)
        if not det > 0:
            raise ValueError(f"`B` must preserve orientation (det B > 0), got det B = {det!r}.")
        if defect <= 1e-13:  # a rotation: its Wigner matrices on the coefficients,
            c = self.coefficients(values) if spectrum is None else spectrum  # added as a change (the transforms'
            # error scales with the rotation's size)
            return values + self.from_coefficients(rotated(c, B, self.lmax) - c)
        alm_of = getattr(self.backend, "analysis_alm", None)  # ducc0's layout straight from its analysis, on one
        # thread as the rest of the map (a second thread's hand-off costs more than it saves at this size, and much
        # more on a loaded machine)
        if spectrum is not None:
            alm = complex_alm(spectrum, self.lmax)
        elif alm_of is not None:
            alm = alm_of(values, self.lmax, 1)
        else:
            alm = complex_alm(self.coefficients(values), self.lmax)
        sigma, p, _ = pushforward_stencil(alm, self.lmax)
        if sigma:  # the expansion on an equiangular grid, then p × p local stencils within the bound
            return pushforward(alm, self.lmax, self.points.reshape(-1, 3), B, sigma, p).reshape(np.shape(values))
        pre = self.points @ np.linalg.inv(B).T  # no stencil within the bound: ducc0's non-uniform synthesis
        r = np.linalg.norm(pre, axis=-1)
        return evaluate(real_cilm(alm, self.lmax), pre / r[..., None]) / (det * r ** 3)

    def spectrum(self, values: np.ndarray) -> np.ndarray:
        """The coefficients c_lm (:meth:`coefficients`), which the resolution check and the energy both read."""
        return self.coefficients(values)

    def spectral_tail(self, values: np.ndarray, spectrum: np.ndarray | None = None) -> float:
        """sqrt(max power per degree) over the top 1/16 of degrees, relative to |c_00|
        (``spectrum``: :meth:`spectrum` of ``values``, if known)."""
        p = degree_power(self.coefficients(values) if spectrum is None else spectrum)
        width = max(2, self.lmax // 16)
        return float(np.sqrt(np.max(p[-width:])) / abs(np.sqrt(p[0])))

    def resolution(self, values, tail_tol: float, *, spectrum=None) -> str | None:
        tail = self.spectral_tail(values, spectrum)
        if not tail <= tail_tol:
            return f"the spectral tail {tail:.6g} exceeds tail_tol = {tail_tol:.6g} on {self!r}"
        return None


def rotated(cilm: np.ndarray, R, lmax: int) -> np.ndarray:
    """The real orthonormal coefficients of f∘R^{-1} (f rotated actively by R ∈ SO(3)) from those of f: ducc0's
    ``rotate_alm`` with the Euler angles of R = R_z(φ) R_y(θ) R_z(ψ) (rotations about the fixed axes, ψ first)."""
    from ducc0.sht import rotate_alm

    from .ducc import complex_alm, real_cilm

    R = np.asarray(R, dtype=float)
    theta = np.arctan2(np.hypot(R[0, 2], R[1, 2]), R[2, 2])
    if np.hypot(R[0, 2], R[1, 2]) > 1e-12:
        phi, psi = np.arctan2(R[1, 2], R[0, 2]), np.arctan2(R[2, 1], -R[2, 0])
    else:  # θ = 0 or π: only φ ± ψ is defined; take ψ = 0
        phi, psi = np.arctan2(R[1, 0], R[0, 0]) if R[2, 2] > 0 else np.arctan2(-R[1, 0], -R[0, 0]), 0.0
    alm = rotate_alm(complex_alm(cilm, lmax), lmax, float(psi), float(theta), float(phi))
    return real_cilm(alm, lmax)
