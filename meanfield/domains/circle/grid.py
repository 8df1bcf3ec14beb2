r"""The circle grid: n equispaced angles, trapezoidal quadrature, spectral interpolation.

Conventions (MATH.md §2.1): a density ρ(θ) integrates to 1 against dθ; its
Fourier coefficients and the real series they define are those of
:mod:`meanfield.domains.circle.fourier`.
"""

from __future__ import annotations

import numpy as np

from ..base import Diagonal, Grid, Measure, get
from ..sphere.geometry import check_on_sphere
from . import fourier
from .geometry import angles_to_points, points_to_angles

__all__ = ["CircleGrid"]


class CircleGrid(Grid):
    """n equispaced nodes θ_j = 2πj/n on the unit circle.

    Parameters
    ----------
    n : int
        Number of nodes, n >= 4.

    Attributes
    ----------
    n : int
    angles : ndarray, shape (n,)
        θ_j in [0, 2π).
    points : ndarray, shape (n, 2)
        Unit vectors (cos θ_j, sin θ_j).
    weights : ndarray, shape (n,)
        Trapezoidal quadrature weights 2π/n, spectrally accurate for smooth
        periodic integrands.
    """

    dim = 2  # ambient dimension: the circle sits in R²
    resolution_name = "n"  # what refinement doubles

    def __init__(self, n: int):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"`n` must be an integer, got {n!r}.")
        if n < 4:
            raise ValueError(f"`n` must be at least 4, got {n}.")
        self.n = int(n)
        self.angles = 2.0 * np.pi * np.arange(self.n) / self.n
        self.points = angles_to_points(self.angles)
        self.weights = np.full(self.n, 2.0 * np.pi / self.n)
        self._cos, self._sin = (np.ascontiguousarray(self.points[:, i]) for i in (0, 1))  # the noise maps' nodes
        for a in (self.angles, self.points, self.weights, self._cos, self._sin):
            a.setflags(write=False)

    # ----------------------------------------------------------- basics
    @property
    def domain(self):
        return get("circle")

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    @property
    def spacing(self) -> float:
        """Δθ = 2π/n."""
        return 2.0 * np.pi / self.n

    @property
    def covering_radius(self) -> float:
        """π/n: every angle is that close (geodesically) to a node."""
        return np.pi / self.n

    @property
    def kmax(self) -> int:
        """Highest wavenumber represented, n // 2."""
        return self.n // 2

    def __eq__(self, other) -> bool:
        return isinstance(other, CircleGrid) and other.n == self.n

    def __hash__(self) -> int:
        return hash(("circle", self.n))

    def __repr__(self) -> str:
        return f"CircleGrid(n={self.n})"

    def refined(self, factor: int = 2) -> "CircleGrid":
        """The grid with ``factor`` times as many nodes."""
        return CircleGrid(self.n * int(factor))

    def integrate(self, values: np.ndarray) -> np.ndarray:
        """∫ f dθ by the trapezoidal rule over the last axis."""
        return np.asarray(values) @ self.weights

    def coordinates(self) -> dict:
        return {"theta": (self.angles.copy(), {"long_name": "angle θ", "units": "rad"})}

    @classmethod
    def from_coordinates(cls, coordinates) -> "CircleGrid":
        return cls(len(coordinates["theta"]))

    def coarsened(self, values) -> Measure:
        """The interpolant truncated to n/2 nodes, as a grid measure."""
        coarse = CircleGrid(max(4, self.n // 2))
        return Measure(coarse.points, self.resample(values, coarse.n) * coarse.weights, self.domain)

    # ----------------------------------------------------------- spectra
    def coefficients(self, values: np.ndarray) -> np.ndarray:
        """ρ̂_k for k = 0..n//2 (last axis), ``rfft(values)/n``."""
        return fourier.coefficients(values)

    def from_coefficients(self, coeffs: np.ndarray) -> np.ndarray:
        """Nodal values from ρ̂_k, k = 0..n//2 (inverse of :meth:`coefficients`)."""
        return fourier.from_coefficients(coeffs, self.n)

    def laplacian(self) -> Diagonal:
        """∂²_θ on the trigonometric interpolant: −k² on ρ̂_k (k = 0..n//2; the Nyquist mode of an even n is the
        real cos(nθ/2), whose second derivative is −(n/2)² times itself at the nodes)."""
        k = np.arange(self.n // 2 + 1, dtype=float)
        return Diagonal(fourier.rfft, lambda z: fourier.irfft(z, self.n), -k * k)

    def resample(self, values: np.ndarray, n: int) -> np.ndarray:
        """Values of the trigonometric interpolant on the grid with ``n`` nodes (:func:`fourier.resample`)."""
        return fourier.resample(values, n)

    def interpolate(self, values: np.ndarray, points) -> np.ndarray:
        """Evaluate the trigonometric interpolant of nodal ``values`` at unit vectors.

        Parameters
        ----------
        values : ndarray, shape (n,)
        points : array_like, shape (..., 2)
            Unit vectors (checked to 1e-8).

        Returns
        -------
        ndarray, shape points.shape[:-1]
        """
        x = check_on_sphere(points, "points")
        if x.shape[-1] != 2:
            raise ValueError(f"`points` must be unit vectors in R^2 for a circle grid, got shape {x.shape}.")
        return self.interpolate_angles(values, points_to_angles(x))

    def interpolate_angles(self, values: np.ndarray, theta) -> np.ndarray:
        """Evaluate the trigonometric interpolant of nodal ``values`` at angles θ."""
        return fourier.evaluate(values, theta)

    def linear_transport_refusal(self) -> None:
        return None

    def linear_transport(self, values: np.ndarray, B, spectrum: np.ndarray | None = None) -> np.ndarray:
        r"""The density pushed forward by φ(u) = Bu/|Bu| (B a 2×2 matrix, det B > 0), at the nodes (MATH.md §13).

        A rotation B = R_α (BᵀB = I to 1e-13) shifts the interpolant, ρ̂_k ↦ ρ̂_k e^{−ikα}: exact for the
        trigonometric polynomial, mass and spectrum kept. Any other B: (φ_#ρ)(θ) = ρ(φ^{-1}(θ)) |(φ^{-1})'(θ)| with
        φ^{-1}(u) = B^{-1}u/|B^{-1}u| and (φ^{-1})'(θ) = det B^{-1} / |B^{-1}u(θ)|², the interpolant evaluated at the
        preimages (:func:`fourier.linear_pushforward`: local Lagrange interpolation of the interpolant on σn nodes,
        σ and the stencil chosen from the spectrum's a-priori bound, to 1.4e-14 of Σ|ρ̂_k| plus round-off — the bound
        of the fixed (4n nodes, 32) it replaced): spectrally accurate for a resolved
        density (the result is no longer a trigonometric polynomial of degree n/2; its mass changes by that
        truncation and the interpolation's accuracy alone).
        """
        B = np.asarray(B, dtype=float)
        if B.shape != (2, 2) or not np.all(np.isfinite(B)):
            raise ValueError(f"`B` must be a finite 2×2 matrix, got shape {B.shape}.")
        (a, b), (c, d) = B.tolist()
        det = a * d - b * c
        if not det > 0:
            raise ValueError(f"`B` must preserve orientation (det B > 0), got det B = {det!r}.")
        if max(abs(a * a + c * c - 1.0), abs(b * b + d * d - 1.0), abs(a * b + c * d)) <= 1e-13:  # BᵀB = I
            alpha = np.arctan2(c - b, a + d)
            k = np.arange(self.n // 2 + 1)
            return fourier.irfft(fourier.rfft(values) * np.exp(-1j * alpha * k), self.n)
        # the preimages adj(B)u_j = (det B) B^{-1}u_j (the factor leaves their angles alone) and the Jacobian
        return fourier.linear_pushforward(values, ((a, b), (c, d)), self._cos, self._sin,
                                          rfft_values=None if spectrum is None else spectrum * self.n)

    def spectrum(self, values: np.ndarray) -> np.ndarray:
        """ρ̂_k (:meth:`coefficients`), which the resolution check and the energy both read."""
        return self.coefficients(values)

    def spectral_tail(self, values: np.ndarray, spectrum: np.ndarray | None = None) -> float:
        """max |ρ̂_k| over the top 1/16 of the wavenumbers, relative to |ρ̂_0| (``spectrum``: :meth:`spectrum`
        of ``values``, if known).

        The band is the highest max(2, k'/16) wavenumbers up to k' = (n − 1)//2;
        the Nyquist mode of an even grid is left out, since the solver holds it
        fixed (its derivative is set to zero). A resolved density has
        coefficients decaying to round-off before n/2.
        """
        c = np.abs(self.coefficients(values) if spectrum is None else spectrum)
        top = (self.n - 1) // 2
        width = max(2, top // 16)
        return float(np.max(c[top - width + 1 : top + 1]) / c[0])

    def resolution(self, values, tail_tol: float, *, spectrum=None) -> str | None:
        tail = self.spectral_tail(values, spectrum)
        if not tail <= tail_tol:
            return f"the spectral tail {tail:.6g} exceeds tail_tol = {tail_tol:.6g} on {self!r}"
        return None
