r"""The grid of [0, 1] × S¹: m positions s_k = k/(m − 1) (trapezoidal weights) × n equispaced angles (Fourier).

A density f(s, θ) of tokens with positions (docs/MATH.md §8.4) against ds dθ; the positions never move, so its
s-marginal is that of the initial law (1 for every s where the positions are uniform). Rows are the circle's
trigonometric interpolants (spectral in θ); across rows the density is read linearly (second order in 1/(m − 1),
the order of the cumulative trapezoidal sums that make the causal field).
"""

from __future__ import annotations

import numpy as np

from ..base import Diagonal, Grid, Measure, get
from ..circle import fourier
from ..circle.geometry import angles_to_points, points_to_angles
from ..circle.grid import CircleGrid

__all__ = ["SequenceGrid", "cumulative"]


def cumulative(values, h: float, decay: float = 0.0) -> np.ndarray:
    r"""R_k = ∫_0^{s_k} e^{−λ(s_k − τ)} f(τ) dτ along the first axis by the trapezoidal rule on nodes of spacing h
    (R_0 = 0; docs/MATH.md §13, the decay mask).

    λ = ``decay`` = 0: the cumulative sums of the trapezoids (today's causal model, the same operations). λ ≠ 0:
    the trapezoidal rule for the integrand e^{−λ(s_k − τ)} f(τ), written as the recursion
    R_k = a R_{k−1} + (h/2)(a f_{k−1} + f_k), a = e^{−λh} (the semigroup e^{−λ(s_k − τ)} = a e^{−λ(s_{k−1} − τ)}):
    no factor e^{λτ} that could overflow, second order in h like the plain sums.
    """
    values = np.asarray(values)
    out = np.zeros_like(values)
    if not decay:
        out[1:] = np.cumsum(0.5 * h * (values[1:] + values[:-1]), axis=0)
        return out
    a, half = np.exp(-decay * h), 0.5 * h
    for k in range(1, values.shape[0]):
        out[k] = a * out[k - 1] + half * (a * values[k - 1] + values[k])
    return out


class SequenceGrid(Grid):
    """[0, 1] × S¹: ``positions`` rows s_k = k/(positions − 1) of ``n`` angles θ_j = 2πj/n.

    Parameters
    ----------
    n : int
        Angles per row, n >= 4 (what refinement doubles).
    positions : int, default 33
        Rows, >= 2 (fixed: positions do not move, and the causal field's error in s, O((m − 1)^-2), does not
        grow with the solution's sharpness in θ; docs/MATH.md §8.4).

    Attributes
    ----------
    positions : ndarray, shape (m,)
    angles : ndarray, shape (n,)
    points : ndarray, shape (m, n, 3)
        Rows (s_k, cos θ_j, sin θ_j).
    weights : ndarray, shape (m, n)
        Trapezoidal weights in s times 2π/n.
    """

    dim = 3  # a position and a point of R²
    resolution_name = "n"

    def linear_transport_refusal(self) -> str:
        return (f"common noise is not solved on {self!r}: its points are rows (s, x) of a position and a token, and "
                "the push-forward of each row's density by a linear layer's map x ↦ e^A x/|e^A x| (the position "
                "unmoved) is not written (nor are the rows of causal particles moved: they refuse it too)")

    def __init__(self, n: int, positions: int = 33):
        self.circle = CircleGrid(n)
        if isinstance(positions, bool) or not isinstance(positions, (int, np.integer)):
            raise TypeError(f"`positions` must be an integer, got {positions!r}.")
        if positions < 2:
            raise ValueError(f"`positions` must be at least 2 (s = 0 and s = 1), got {positions}.")
        self.n, self.m = self.circle.n, int(positions)
        self.h = 1.0 / (self.m - 1)
        self.positions = np.linspace(0.0, 1.0, self.m)
        self.angles = self.circle.angles
        self.position_weights = np.full(self.m, self.h)
        self.position_weights[[0, -1]] *= 0.5
        self.points = np.concatenate([np.broadcast_to(self.positions[:, None, None], (self.m, self.n, 1)),
                                      np.broadcast_to(self.circle.points, (self.m, self.n, 2))], axis=-1)
        self.weights = self.position_weights[:, None] * self.circle.weights[None, :]
        for a in (self.positions, self.position_weights, self.points, self.weights):
            a.setflags(write=False)

    @property
    def domain(self):
        return get("sequence")

    @property
    def shape(self) -> tuple[int, int]:
        return (self.m, self.n)

    @property
    def spacing(self) -> float:
        """Δθ: positions do not move, so the CFL step compares speeds with the angular spacing only."""
        return self.circle.spacing

    def __eq__(self, other) -> bool:
        return isinstance(other, SequenceGrid) and (other.n, other.m) == (self.n, self.m)

    def __hash__(self) -> int:
        return hash(("sequence", self.n, self.m))

    def __repr__(self) -> str:
        return f"SequenceGrid(n={self.n}, positions={self.m})"

    def refined(self, factor: int = 2) -> "SequenceGrid":
        """Twice (``factor`` times) the angles, the same positions."""
        return SequenceGrid(self.n * int(factor), self.m)

    def integrate(self, values) -> float:
        """∫∫ f ds dθ (trapezoidal in s and θ)."""
        return float(np.sum(np.asarray(values) * self.weights))

    def marginal(self, values) -> np.ndarray:
        """The s-marginal ∫ f(s_k, θ) dθ of each row, shape (m,)."""
        return np.asarray(values) @ self.circle.weights

    def coordinates(self) -> dict:
        return {"position": (self.positions.copy(), {"long_name": "position s in the sequence"}),
                "theta": (self.angles.copy(), {"long_name": "angle θ", "units": "rad"})}

    @classmethod
    def from_coordinates(cls, coordinates) -> "SequenceGrid":
        return cls(len(coordinates["theta"]), len(coordinates["position"]))

    def coarsened(self, values) -> Measure:
        """Each row's interpolant truncated to n/2 angles, as a grid measure."""
        coarse = SequenceGrid(max(4, self.n // 2), self.m)
        return Measure(coarse.points.reshape(-1, 3), (self.resample(values, coarse.n) * coarse.weights).ravel(),
                       self.domain)

    # ----------------------------------------------------------- spectra (each row's, in θ)
    def coefficients(self, values) -> np.ndarray:
        return fourier.coefficients(values)

    def spectrum(self, values) -> np.ndarray:
        return self.coefficients(values)

    def spectral_tail(self, values, spectrum=None) -> float:
        """The circle's spectral tail (:meth:`CircleGrid.spectral_tail`) of the worst row, relative to that row's
        mass (rows of zero mass are left out)."""
        c = np.abs(self.coefficients(values) if spectrum is None else spectrum)
        top = (self.n - 1) // 2
        width = max(2, top // 16)
        c0 = c[:, 0]
        ok = c0 > 0
        if not np.any(ok):
            return 0.0 if np.all(c == 0) else float("inf")
        return float(np.max(np.max(c[ok, top - width + 1: top + 1], axis=-1) / c0[ok]))

    def resolution(self, values, tail_tol: float, *, spectrum=None) -> str | None:
        tail = self.spectral_tail(values, spectrum)
        if not tail <= tail_tol:
            return f"the spectral tail {tail:.6g} exceeds tail_tol = {tail_tol:.6g} on {self!r}"
        return None

    def laplacian(self) -> Diagonal:
        """∂²_θ on each row (noise moves angles, never positions)."""
        return self.circle.laplacian()

    def resample(self, values, n: int) -> np.ndarray:
        """Each row's interpolant on ``n`` angles (exact zero-padding upwards)."""
        return fourier.resample(values, n)

    def _rows_at(self, s):
        """Row k and weight λ of s = (1 − λ)s_k + λs_{k+1} (linear in s)."""
        s = np.asarray(s, dtype=float)
        if np.any((s < 0) | (s > 1)) or not np.all(np.isfinite(s)):
            raise ValueError("positions must lie in [0, 1].")
        k = np.minimum((s / self.h).astype(int), self.m - 2)
        return k, s / self.h - k

    def interpolate(self, values, points) -> np.ndarray:
        """The density at points (s, x): each row's trigonometric interpolant at θ, linear in s between rows."""
        x = self.domain.check_points(points, "points")
        if x.shape[-1] != 3:
            raise ValueError(f"`points` must be rows (s, x) with x in R² for {self!r}, got shape {x.shape}.")
        flat = x.reshape(-1, 3)
        k, lam = self._rows_at(flat[:, 0])
        theta = points_to_angles(flat[:, 1:])
        out = np.empty(flat.shape[0])
        for row in np.unique(k):
            at = k == row
            lo, hi = (fourier.evaluate(values[r], theta[at]) for r in (row, row + 1))
            out[at] = (1.0 - lam[at]) * lo + lam[at] * hi
        return out.reshape(x.shape[:-1])

    def sample(self, values, shape: tuple, rng) -> np.ndarray:
        r"""iid tokens (s, x) from the density read linearly in s: a cell [s_k, s_{k+1}] with its mass, then the
        row k (λ with density 2(1 − λ)) or k + 1 (density 2λ) in proportion to their marginals, then θ from that
        row by the circle's exact inversion of its interpolant's CDF."""
        from ..circle.sampling import sample_values

        m = self.marginal(values)
        if np.any(m < 0) or not np.sum(m) > 0:
            raise ValueError("the density's rows must have non-negative mass, and some positive.")
        size = int(np.prod(shape))
        cell_mass = 0.5 * (m[:-1] + m[1:])
        cell = rng.choice(self.m - 1, size=size, p=cell_mass / cell_mass.sum())
        upper = rng.uniform(size=size) * (m[cell] + m[cell + 1]) < m[cell + 1]  # the row k + 1 component
        u = rng.uniform(size=size)
        lam = np.where(upper, np.sqrt(u), 1.0 - np.sqrt(u))
        row = cell + upper
        out = np.empty((size, 3))
        out[:, 0] = self.positions[cell] + lam * self.h
        for r in np.unique(row):
            at = np.flatnonzero(row == r)
            out[at, 1:] = sample_values(values[r], (at.size,), rng)
        return out.reshape(tuple(shape) + (3,))


def as_rows(points) -> tuple[np.ndarray, np.ndarray]:
    """(s, θ) of points (..., 3) of [0, 1] × S¹."""
    x = np.asarray(points, dtype=float)
    return x[..., 0], points_to_angles(x[..., 1:])


def from_rows(s, theta) -> np.ndarray:
    """Points (s, cos θ, sin θ)."""
    s = np.asarray(s, dtype=float)
    return np.concatenate([s[..., None], angles_to_points(np.asarray(theta, dtype=float))], axis=-1)
