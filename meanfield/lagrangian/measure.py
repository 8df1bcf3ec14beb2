r"""One frame of the Lagrangian measure: moving points with fixed weights and the log-density they carry.

The continuity equation ∂_t μ + div(μ X[μ]) = 0 solved by characteristics
(docs/MATH.md §6): from the grid measure Σ_i w_i δ_{x_i} of the initial density
(w_i = ρ_0(x_i) × quadrature weight), the points follow dX_i/dt = X[μ_t](X_i) with
μ_t = Σ_i w_i δ_{X_i(t)} — an exact weak solution — and each carries its
log-Jacobian ℓ_i, dℓ_i/dt = div X[μ_t](X_i), so log ρ(X_i(t), t) = log ρ_0(x_i) − ℓ_i(t)
exactly along the characteristic, however sharp the density becomes.
"""

from __future__ import annotations

import numpy as np

from ..domains import Measure
from ..kernels import energy as pairwise_energy
from ..core.numerics import EXP_MAX

__all__ = ["LagrangianMeasure", "excess_energy"]


def _pairwise_excess(points, weights, beta):
    if beta == 0.0:
        m = weights @ points
        return 0.5 * float(m @ m)
    mass = float(np.sum(weights))
    return float(np.exp(-beta) * (pairwise_energy(points, weights, beta) - mass * mass / (2.0 * beta))) \
        if beta <= EXP_MAX else np.nan


def excess_energy(points, weights, domain, beta: float) -> float:
    """e^{-β}(E_β − m²/2β) of the point measure Σ_i w_i δ_{x_i} of ``domain``, finite for every β (½|Σ w_i x_i|² at
    β = 0): by the domain's spectral sums where it has them (the circle's O(nL) Fourier moments, S²'s O(nL²) harmonic
    moments), else pairwise — the one sum of every point frame (a Lagrangian measure, a particle snapshot). For β < 0
    pairwise where the domain refuses repulsion (``repulsion_refusal``: S²'s sums have no truncation bound there)."""
    points = np.asarray(points, dtype=float)
    sums = domain.point_sums(points.shape[-1])
    if float(beta) < 0.0 and domain.repulsion_refusal is not None:
        sums = None
    return (_pairwise_excess if sums is None else sums.excess_energy)(points, np.asarray(weights, dtype=float),
                                                                      float(beta))


class PointFrame:
    """What a frame of weighted points answers from its ``points``, ``weights`` and ``domain`` alone — a Lagrangian
    measure, a particle snapshot (``particles.Snapshot``): the measure, its mass, first moment and energy."""

    __slots__ = ()

    @property
    def dim(self) -> int:
        """The dimension d of the ambient R^d of the points."""
        return self.points.shape[-1]

    def as_measure(self) -> Measure:
        """Σ_i w_i δ_{x_i} carrying its domain (``validation.wasserstein`` takes it as it is)."""
        return Measure(self.points, self.weights, self.domain)

    def mass(self) -> float:
        """Σ_i w_i (a Lagrangian measure's is fixed in time, the mass of the initial grid measure)."""
        return float(np.sum(self.weights))

    def mean(self) -> np.ndarray:
        """∫ x dμ = Σ_i w_i x_i ∈ R^d, in the ambient R^d of the domain (as :meth:`meanfield.Density.mean`)."""
        return self.domain.mean(self.points, self.weights)

    def excess_energy(self, beta: float) -> float:
        """e^{-β}(E_β − m²/2β), finite for every β (½|∫x dμ|² at β = 0): :func:`excess_energy`."""
        return excess_energy(self.points, self.weights, self.domain, beta)

    def energy(self, beta: float) -> float:
        """E_β = (1/2β) Σ_ij w_i w_j e^{β⟨x_i, x_j⟩} (½|Σ w_i x_i|² at β = 0; GLPR §3.2)."""
        from ..domains.zonal import energy_from_excess

        return energy_from_excess(self.excess_energy(beta), self.mass(), float(beta))


def _frozen(a, handed_over: bool) -> np.ndarray:
    """A float64 copy of ``a`` that nothing else can write, or, for the solver's own frames (``handed_over``: built
    with ``check=False``), ``a`` itself where it is a read-only float64 array owning its memory (another frame's
    weights, a fresh array handed over): the frames of a run share their weights instead of copying 8 MB per frame
    at 10⁶ points. A caller's array is always copied: being read-only and owning its memory does not mean nothing
    else writes it (a writable view taken before its flag was cleared still does)."""
    if (handed_over and isinstance(a, np.ndarray) and a.dtype == np.float64 and a.base is None
            and not a.flags.writeable):
        return a
    return np.array(a, dtype=float)


class LagrangianMeasure(PointFrame):
    """Σ_i w_i δ_{X_i} with log ρ at the points: a frame of the Lagrangian solution.

    Parameters
    ----------
    state : ndarray, shape (n, k)
        The points in the domain's chart (angles on the circle, points of S² or R^d).
    weights : ndarray, shape (n,)
        Fixed masses, non-negative, summing to one (to 1e-12).
    log_density : ndarray, shape (n,)
        log ρ at the points (−inf where the initial density was 0).
    domain : Domain
    mesh : object
        The initial grid's connectivity (``domain.chart.mesh``), moved with the points.
    t : float
    check : bool, keyword-only
        False for frames the solver builds (weights of any positive total, as the initial density's mass).
    log_condition : ndarray, shape (n,), optional, keyword-only
        log κ_i, the largest expansion ∂X_i(t)/∂X_i(s') (s' <= t) of the flow along each characteristic, where
        the solver tracks it (the circle's adaptive panels). A perturbation of size ε (round-off) of a point is
        amplified by κ_i, so float64 gives log ρ at the point to about 10³ ε κ_i at best (docs/MATH.md §6):
        near a repelling point κ_i grows like e^{ct}. None where not tracked.

    Raises
    ------
    ValueError
        Weights of the wrong shape, negative, non-finite or not summing to one; points off the domain;
        log-densities that are NaN or +inf.
    """

    __slots__ = ("state", "weights", "log_density", "domain", "mesh", "t", "log_condition")

    #: a frame of points, not of grid values (:class:`meanfield.density.Frame`)
    grid = None
    #: its points carry their log-density along the characteristics (:class:`meanfield.density.Frame`)
    lagrangian = True

    def __init__(self, state, weights, log_density, domain, mesh=None, t: float = 0.0, *, check: bool = True,
                 log_condition=None):
        state, weights, log_density = (_frozen(a, not check) for a in (state, weights, log_density))
        if check:
            n = state.shape[0] if state.ndim == 2 else -1
            if state.ndim != 2 or weights.shape != (n,) or log_density.shape != (n,):
                raise ValueError(f"`state` must have shape (n, k), `weights` and `log_density` shape (n,); got "
                                 f"{state.shape}, {weights.shape}, {log_density.shape}.")
            if not np.all(np.isfinite(weights)) or np.any(weights < 0):
                raise ValueError("`weights` must be finite and non-negative.")
            if abs(weights.sum() - 1.0) > 1e-12:
                raise ValueError(f"`weights` must sum to one (a probability measure), got {weights.sum():.17g}.")
            if np.any(np.isnan(log_density)) or np.any(log_density == np.inf):
                raise ValueError("`log_density` must be finite or −inf (where the density is 0), not NaN or +inf.")
            domain.chart.check_state(state)
        for a in (state, weights, log_density):
            a.setflags(write=False)
        self.state, self.weights, self.log_density = state, weights, log_density
        self.domain, self.mesh, self.t = domain, mesh, float(t)
        if log_condition is not None:
            log_condition = np.array(log_condition, dtype=float)
            if log_condition.shape != weights.shape:
                raise ValueError(f"`log_condition` must have shape {weights.shape}, got {log_condition.shape}.")
            log_condition.setflags(write=False)
        self.log_condition = log_condition

    # ------------------------------------------------------------------ as a measure
    @property
    def points(self) -> np.ndarray:
        """The points X_i(t), shape (n, d)."""
        return self.domain.chart.to_points(self.state)

    @property
    def density(self) -> np.ndarray:
        """ρ(X_i(t), t) = exp(log ρ_0(x_i) − ℓ_i(t)) (may overflow to inf past 1e308; use ``log_density``)."""
        with np.errstate(over="ignore"):
            return np.exp(self.log_density)

    # ------------------------------------------------------------------ as a density
    def log_density_at(self, queries) -> np.ndarray:
        """log ρ at points of the domain, interpolated on the moved mesh (−inf where the density is 0)."""
        q = self.domain.check_points(queries, "queries")
        return self.domain.chart.interpolate_log(self.state, self.mesh, self.log_density, q)

    def __call__(self, queries) -> np.ndarray:
        """ρ at points of the domain (shape (..., d) → (...)): the log-density interpolated on the moved mesh
        (periodic cubic spline in the angle on the circle, linear on the moved triangles of the initial grid
        on S² and in R², linear in R¹), then exponentiated."""
        with np.errstate(over="ignore"):
            return np.exp(self.log_density_at(queries))

    def __len__(self) -> int:
        return self.weights.size

    def __repr__(self) -> str:
        return (f"LagrangianMeasure({self.domain.name}, n={len(self)}, t={self.t:g}, "
                f"max log10 ρ={np.max(self.log_density) / np.log(10):.3g})")

    # ------------------------------------------------------------------ figure
    def plot(self, ax=None, gap: float = 10.0, **kwargs):
        """ρ at the points on a log scale: on the circle against the angle over the whole of [0, 2π] (in R¹ against
        the coordinate), as a line broken where there is no mass: between consecutive points further apart than
        ``gap`` × the spacing their weights and densities imply (w_i/ρ_i: the width of the mass a point carries),
        and at points where ρ = 0; on S² a Mollweide map (in R² the plane) of the points coloured by ρ, one colour
        bar 'ρ (at the points, log scale)' as the study figures'. Returns the Axes."""
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm

        from ..domains.plotting import density_label

        coords = np.asarray(self.domain.coordinates(self.points))
        logr = np.where(np.isfinite(self.log_density), self.log_density, np.nan)
        top = np.nanmax(logr) if np.isfinite(logr).any() else 0.0
        if self.domain.intrinsic_dimension(self.points.shape[-1]) == 1:  # one chart coordinate: a line
            c = coords.reshape(-1)
            periodic = bool(self.domain.periodic)
            if periodic:
                c = np.mod(c, self.domain.volume)
            order = np.argsort(c, kind="stable")
            c, lr, w = c[order], logr[order], self.weights[order]
            if periodic and c.size:  # the neighbours across θ = 0: the line reaches both ends where mass is there
                c = np.concatenate([[c[-1] - self.domain.volume], c, [c[0] + self.domain.volume]])
                lr, w = np.concatenate([[lr[-1]], lr, [lr[0]]]), np.concatenate([[w[-1]], w, [w[0]]])
            x, y = _broken_line(c, lr, w, gap)
            if ax is None:
                _, ax = plt.subplots(layout="constrained")
            with np.errstate(over="ignore"):
                ax.plot(x, np.exp(np.minimum(y, 700.0)), **({"lw": 1} | kwargs))
            ax.set_yscale("log")
            ax.set_xlabel(self.domain.coordinate_label)
            ax.set_ylabel(density_label("ρ", LogNorm(), "at the points"))
            if periodic:
                ax.set_xlim(0.0, self.domain.volume)
                ax.set_xticks(np.pi * np.array([0, 0.5, 1, 1.5, 2]), ["0", "π/2", "π", "3π/2", "2π"])
            ax.set_title(f"t = {self.t:g}")
            return ax
        if self.domain.projection:  # a map (S²'s Mollweide map)
            from ..domains.sphere.plotting import style_map

            if ax is None:
                _, ax = plt.subplots(subplot_kw={"projection": self.domain.projection}, layout="constrained")
            x = self.points
            lon, lat = np.arctan2(x[:, 1], x[:, 0]), np.arcsin(np.clip(x[:, 2], -1, 1))
            style_map(ax)
            ax.set_facecolor(plt.get_cmap(kwargs.get("cmap", "magma"))(0.0))  # no mass: dark, as the density maps
        else:
            if ax is None:
                _, ax = plt.subplots(layout="constrained")
            lon, lat = coords[:, 0], coords[:, 1]
        lo = max(np.nanmin(logr), top - 690.0) if np.isfinite(logr).any() else top - 1.0
        norm = LogNorm(vmin=np.exp(lo), vmax=np.exp(min(top, 700.0)) if top > lo else np.exp(lo + 1.0))
        order = np.argsort(np.nan_to_num(logr, nan=-np.inf))  # the densest points on top
        sc = ax.scatter(lon[order], lat[order], c=np.exp(np.clip(logr[order], lo, 700.0)), s=kwargs.pop("s", 3),
                        cmap=kwargs.pop("cmap", "magma"), norm=norm, **kwargs)
        ax.figure.colorbar(sc, ax=ax, label=density_label("ρ", norm, "at the points"), shrink=0.7,
                           orientation=self.domain.colorbar_orientation)
        ax.set_title(f"t = {self.t:g}")
        return ax


def _broken_line(c, logr, weights, gap: float):
    """(x, log ρ) of sorted points with NaN inserted where the line would cross a gap: consecutive points further
    apart than ``gap`` × the mean of the widths w_i/ρ_i their masses occupy (and more than 1e-9 of the range, the
    round-off of coincident points), or a point without density (log ρ NaN)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        width = np.exp(np.log(weights) - logr)  # the width the point's mass fills at its density
    step = np.diff(c)
    allowed = gap * 0.5 * (width[:-1] + width[1:])
    tiny = 1e-9 * max(float(np.ptp(c)) if c.size else 1.0, 1e-300)
    cut = (step > np.where(np.isfinite(allowed), allowed, 0.0)) & (step > tiny)
    x = np.insert(c, np.flatnonzero(cut) + 1, np.nan)
    y = np.insert(logr, np.flatnonzero(cut) + 1, np.nan)
    return x, y
