r"""A box in R^d (d = 1, 2) cut into equal cells, for finite volumes.

Values are a density against Lebesgue measure at the cell centres (point
values: :meth:`meanfield.Density.from_function` samples there, and the
fifth-order fluxes read them so, docs/MATH.md §5.1); the grid measure puts
each cell's mass ρ_i |cell| at its centre (the midpoint rule: spectrally
accurate for a smooth density that decays inside the box, second order
otherwise). Cells are indexed C-style, shape ``(n_1[, n_2])``.
"""

from __future__ import annotations

import numpy as np

from ..base import Diagonal, Grid, Measure, get

__all__ = ["EuclideanGrid"]


class EuclideanGrid(Grid):
    """Equal cells on the box Π_k [a_k, b_k].

    Parameters
    ----------
    bounds : sequence of (a, b)
        One interval per dimension (d = 1 or 2), a < b.
    shape : int or sequence of int
        Cells per dimension (>= 4 each).

    Attributes
    ----------
    points : ndarray, shape shape + (d,)
        Cell centres.
    weights : ndarray, shape shape
        Cell volumes.
    widths : ndarray, shape (d,)
        Cell widths h_k.
    """

    resolution_name = "n"  # cells along the first axis

    def linear_transport_refusal(self) -> str:
        return (f"common noise is not implemented on R^d grids ({self!r}): the tokens of R^d models are not projected "
                "(P_x = I), so the layer's flow x ↦ e^A x stretches the density out of any fixed box at an exponential "
                "rate, and finite volumes have no remap of their cell averages under a linear map")

    def __init__(self, bounds, shape):
        b = np.asarray(bounds, dtype=float)
        if b.ndim != 2 or b.shape[1] != 2 or b.shape[0] not in (1, 2):
            raise ValueError(f"`bounds` must be ((a, b),) or ((a1, b1), (a2, b2)), got {bounds!r}.")
        if not np.all(np.isfinite(b)) or np.any(b[:, 1] <= b[:, 0]):
            raise ValueError(f"`bounds` must be finite intervals with a < b, got {bounds!r}.")
        shape = (shape,) * b.shape[0] if isinstance(shape, (int, np.integer)) else tuple(shape)
        if len(shape) != b.shape[0] or any((not isinstance(s, (int, np.integer))) or s < 4 for s in shape):
            raise ValueError(f"`shape` must give an integer >= 4 per dimension ({b.shape[0]}), got {shape!r}.")
        self.bounds = b
        self._shape = tuple(int(s) for s in shape)
        self.dim = b.shape[0]
        self.widths = (b[:, 1] - b[:, 0]) / np.array(self._shape)
        axes = [b[k, 0] + (np.arange(self._shape[k]) + 0.5) * self.widths[k] for k in range(self.dim)]
        self.axes = axes
        self.points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
        self.weights = np.full(self._shape, float(np.prod(self.widths)))
        for a in (self.points, self.weights, self.widths):
            a.setflags(write=False)

    @property
    def covering_radius(self) -> float:
        """Half the cell diagonal: every point of the box is that close to a cell centre."""
        return 0.5 * float(np.linalg.norm(self.widths))

    @property
    def domain(self):
        return get("euclidean")

    @property
    def shape(self):
        return self._shape

    @property
    def n(self) -> int:
        return self._shape[0]

    @property
    def spacing(self) -> float:
        return float(np.min(self.widths))

    def __eq__(self, other):
        return isinstance(other, EuclideanGrid) and other.shape == self.shape and np.array_equal(other.bounds, self.bounds)

    def __hash__(self):
        return hash(("euclidean", self.shape, self.bounds.tobytes()))

    def __repr__(self):
        box = " × ".join(f"[{a:g}, {b:g}]" for a, b in self.bounds)
        return f"EuclideanGrid({box}, shape={self.shape})"

    def integrate(self, values) -> float:
        return float(np.sum(np.asarray(values) * self.weights))

    def laplacian(self) -> Diagonal:
        r"""The 3-point Laplacian Σ_k (ρ_{i+e_k} − 2ρ_i + ρ_{i−e_k})/h_k² with ρ = 0 in the cells beyond the box (mass
        reaching the boundary leaves it, as the finite volumes' outflow does): diagonal in the orthonormal DST-I
        basis, eigenvalues Σ_k (2cos(πj_k/(n_k + 1)) − 2)/h_k², j_k = 1..n_k. Second order in h."""
        from scipy.fft import dstn

        axes = tuple(range(self.dim))
        eig = np.zeros(self.shape)
        for k, (n, h) in enumerate(zip(self.shape, self.widths)):
            lam = (2.0 * np.cos(np.pi * np.arange(1, n + 1) / (n + 1)) - 2.0) / (h * h)
            eig = eig + lam.reshape([-1 if i == k else 1 for i in range(self.dim)])
        transform = lambda v: dstn(v, type=1, axes=axes, norm="ortho")  # its own inverse
        return Diagonal(transform, transform, eig)

    def refined(self, factor: int = 2) -> "EuclideanGrid":
        return EuclideanGrid(self.bounds, tuple(s * int(factor) for s in self.shape))

    def moments(self, values):
        """(mass, mean, covariance) of the grid measure."""
        w = (np.asarray(values) * self.weights).ravel()
        x = self.points.reshape(-1, self.dim)
        m = w.sum()
        mean = w @ x / m
        dev = x - mean
        return m, mean, (dev * w[:, None]).T @ dev / m

    def interpolate(self, values, points):
        """Piecewise-constant (cell) value at points in the box (0 outside)."""
        x = np.asarray(points, dtype=float)
        idx = np.floor((x - self.bounds[:, 0]) / self.widths).astype(int)
        inside = np.all((idx >= 0) & (idx < np.array(self.shape)), axis=-1)
        idx = np.clip(idx, 0, np.array(self.shape) - 1)
        out = np.asarray(values)[tuple(idx[..., k] for k in range(self.dim))]
        return np.where(inside, out, 0.0)

    def resample(self, values, n):
        raise NotImplementedError("finite-volume grids are not refined by the solver (use a finer grid).")

    def coordinates(self) -> dict:
        names = ("x", "y")[: self.dim]
        return {k: (self.axes[i].copy(), {"long_name": f"cell centre {k}"}) for i, k in enumerate(names)}

    @classmethod
    def from_coordinates(cls, coordinates) -> "EuclideanGrid":
        """From the cell centres of each axis (equal cells): the box extends half a cell beyond them."""
        axes = [np.asarray(coordinates[k], dtype=float) for k in ("x", "y") if k in coordinates]
        widths = [(a[-1] - a[0]) / (a.size - 1) for a in axes]
        bounds = [(a[0] - 0.5 * h, a[-1] + 0.5 * h) for a, h in zip(axes, widths)]
        return cls(bounds, tuple(a.size for a in axes))

    def coarsened(self, values) -> Measure:
        """Masses of 2 × 2 blocks of cells (exact sums) at the blocks' centres of mass, normalised."""
        m = np.asarray(values) * self.weights
        x = self.points
        even = tuple(slice(0, 2 * (s // 2)) for s in self.shape)
        m, x = m[even], x[even]
        if self.dim == 1:
            mb = m.reshape(-1, 2).sum(1)
            xb = (m[:, None] * x).reshape(-1, 2, 1).sum(1)
        else:
            a, b = m.shape
            mb = m.reshape(a // 2, 2, b // 2, 2).sum(axis=(1, 3)).ravel()
            xb = (m[..., None] * x).reshape(a // 2, 2, b // 2, 2, 2).sum(axis=(1, 3)).reshape(-1, 2)
        keep = mb > 0
        return Measure(xb[keep] / mb[keep, None], mb[keep] / mb.sum(), self.domain)

    def boundary_mass(self, values) -> float:
        """Mass in the cells touching the boundary of the box."""
        inner = np.asarray(values) * self.weights
        core = inner[tuple(slice(1, -1) for _ in range(self.dim))]
        return float(inner.sum() - core.sum())

    def resolution(self, values, tail_tol: float | None = None, cells: float = 2.0, *, spectrum=None) -> str | None:
        """A reason if the density is narrower than ``cells`` cells in some direction, else None.

        A heuristic, not a bound (there is no spectral tail here; ``tail_tol`` is not used)."""
        m, _, cov = self.moments(values)
        if not m > 0:
            return "the density has no mass left in the box"
        ev = np.linalg.eigvalsh(cov)
        if np.sqrt(max(ev.min(), 0.0)) < cells * self.spacing:
            return (f"the density's smallest standard deviation {np.sqrt(max(ev.min(), 0.0)):.3g} is below "
                    f"{cells:g} cells ({cells * self.spacing:.3g}) on {self!r}")
        return None
