r"""The circle S¹ ⊂ R²: equispaced angles, trapezoidal quadrature and the FFT.

Conventions (MATH.md §2.1): a density ρ(θ) integrates to 1 against dθ; its
Fourier coefficients are ρ̂_k = (1/2π)∫ρ e^{-ikθ} dθ, which on n equispaced
nodes θ_j = 2πj/n are ``rfft(ρ)/n`` (exact for trigonometric polynomials of
degree < n/2). For even n the Nyquist coefficient is split evenly between
k = ±n/2, so the interpolant is real and exact at the nodes.
"""

from __future__ import annotations

import numpy as np
import scipy.fft as sfft

from ..geometry import angles_to_points, check_on_sphere, points_to_angles

__all__ = ["CircleGrid"]

_CHUNK = 1 << 20


class CircleGrid:
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
    domain = "circle"

    def __init__(self, n: int):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"`n` must be an integer, got {n!r}.")
        if n < 4:
            raise ValueError(f"`n` must be at least 4, got {n}.")
        self.n = int(n)
        self.angles = 2.0 * np.pi * np.arange(self.n) / self.n
        self.points = angles_to_points(self.angles)
        self.weights = np.full(self.n, 2.0 * np.pi / self.n)
        for a in (self.angles, self.points, self.weights):
            a.setflags(write=False)

    # ----------------------------------------------------------- basics
    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    @property
    def spacing(self) -> float:
        """Δθ = 2π/n."""
        return 2.0 * np.pi / self.n

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

    # ----------------------------------------------------------- spectra
    def coefficients(self, values: np.ndarray) -> np.ndarray:
        """ρ̂_k for k = 0..n//2 (last axis), ``rfft(values)/n``."""
        return sfft.rfft(values, axis=-1) / self.n

    def from_coefficients(self, coeffs: np.ndarray) -> np.ndarray:
        """Nodal values from ρ̂_k, k = 0..n//2 (inverse of :meth:`coefficients`)."""
        return sfft.irfft(coeffs * self.n, self.n, axis=-1)

    def resample(self, values: np.ndarray, n: int) -> np.ndarray:
        """Values of the trigonometric interpolant on the grid with ``n`` nodes.

        Zero-padding (n > self.n) is exact; truncation (n < self.n) drops the
        modes above n/2 (the Nyquist mode of the result is the symmetric one).
        """
        c = self.coefficients(values)
        out = np.zeros(c.shape[:-1] + (n // 2 + 1,), dtype=complex)
        if n >= self.n:
            out[..., : c.shape[-1]] = c
            if self.n % 2 == 0:  # split the Nyquist mode between ±n/2
                out[..., self.n // 2] *= 0.5
        else:
            out[...] = c[..., : n // 2 + 1]
            if n % 2 == 0:
                out[..., n // 2] = 2.0 * out[..., n // 2].real
        return sfft.irfft(out * n, n, axis=-1)

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
        theta = np.asarray(theta, dtype=float)
        c = self.coefficients(np.asarray(values, dtype=float))
        fac = np.full(c.shape[-1], 2.0)
        fac[0] = 1.0
        if self.n % 2 == 0:
            fac[-1] = 1.0
        c = c * fac
        k = np.arange(c.shape[-1])
        flat = theta.ravel()
        out = np.empty(flat.shape)
        step = max(1, _CHUNK // c.shape[-1])
        for i in range(0, flat.size, step):
            th = flat[i : i + step]
            out[i : i + step] = (np.exp(1j * np.outer(th, k)) @ c).real
        return out.reshape(theta.shape)

    def spectral_tail(self, values: np.ndarray) -> float:
        """max |ρ̂_k| over the top 1/16 of the wavenumbers, relative to |ρ̂_0|.

        The band is the highest max(2, k'/16) wavenumbers up to k' = (n − 1)//2;
        the Nyquist mode of an even grid is left out, since the solver holds it
        fixed (its derivative is set to zero). This is the resolution indicator
        of :class:`meanfield.monitor.ResolutionMonitor`: a resolved density has
        coefficients decaying to round-off before n/2.
        """
        c = np.abs(sfft.rfft(values))
        top = (self.n - 1) // 2
        width = max(2, top // 16)
        return float(np.max(c[top - width + 1 : top + 1]) / c[0])
