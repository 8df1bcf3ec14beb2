r"""Pre-LN and peri-LN densities on S¹ × (0, ∞): direction × radius (docs/MATH.md §10.1; ../shared/MATH.md §10).

Pre- and peri-LN tokens are x = rθ with a radius r > 0 and a direction θ ∈ S¹, and attention is computed on the
directions (:mod:`meanfield.models.normalization`): A(θ) = Σ_h c_h ∫ e^{β_h cos(θ − φ)} (cos φ, sin φ) ρ̄(dφ) / Z_h(θ)
for zonal heads (Q = qI, K = kI, V = cI: β_h = βqk, Z_h = ∫ e^{β_h cos(θ − φ)} ρ̄(dφ) for SA, 1 for USA), with ρ̄ the
law of the directions. Split along θ and θ^⊥ = (−sin θ, cos θ), A = a(θ) θ + v(θ) θ^⊥, and

    pre-LN:  ṙ = a(θ),        θ̇ = v(θ)/r;        peri-LN: ṙ = a/|A|,  θ̇ = v/(r|A|),  |A| = √(a² + v²).

In s = log r both speeds carry the same factor e^{−s} (ṡ = ṙ/r), so the density ρ(θ, s, t) of (θ, s) with respect
to dθ ds solves the continuity equation on the cylinder S¹ × ℝ

    ∂_t ρ + ∂_θ(ρ e^{−s} w(θ)) + ∂_s(ρ e^{−s} b(θ)) = 0,     (w, b) = (v, a) (pre),  (v, a)/|A| (peri),

whose field depends on ρ only through the marginal ρ̄(θ) = ∫ ρ ds. With f̂_k = (1/2π)∫ f(u) e^{−iku} du the
coefficients of e^{β cos u} are I_k(β), those of cos u · e^{β cos u} = ∂_β e^{β cos u} are I_k'(β) =
(I_{k−1}(β) + I_{k+1}(β))/2, those of −sin u · e^{β cos u} = β^{−1} ∂_u e^{β cos u} are ik I_k(β)/β, so with the
marginal's coefficients ρ̄̂_k

    Z = Σ_k 2π I_k(β) ρ̄̂_k e^{ikθ},  a Z/c = Σ_k 2π I_k'(β) ρ̄̂_k e^{ikθ},  v Z/c = Σ_k 2π (ik/β) I_k(β) ρ̄̂_k e^{ikθ}

(the β → 0 limits where β = 0; exponentially scaled Bessel functions, as the circle solver's
:func:`~meanfield.domains.circle.continuity.bessel_multipliers`; USA multiplies back e^β and takes Z = 1).

Discretisation (a grid :class:`CylinderGrid` of n_θ equispaced angles × n_s cells of s = log r on [log r_min,
log r_max]): spectral collocation in θ — the θ-flux ρ e^{−s_m} w formed on the 3/2-padded grid and differentiated
spectrally (its k = 0 coefficient exactly zero), as :class:`~meanfield.domains.circle.continuity.CircleSpectral`
does on the circle — and finite volumes in s: cell averages ρ_m, the s-flux at each face F_{m+½} = e^{−s_{m+½}}
b(θ_j) (ρ_m + ρ_{m+1})/2 (the centred face value: second order, and linear in ρ with a coefficient smooth in θ — an
upwind or limited face value switches with the sign of b(θ), a kink in θ whose spectrum decays like k^{−2} and spoils
the spectral accuracy in θ), and zero flux through the two outer faces. Both parts are conservative, so the mass
Σ ρ_{jm} Δθ Δs is constant to round-off; the scheme is spectral in θ and second order in Δs (measured:
tests/meanfield/test_cylinder.py). Time: the library's :class:`~meanfield.integrate.Integrator`
(RK4 by default) with the step dt = cfl × r_min × min(Δθ/max|w|, Δs/max|b|).

A :class:`~meanfield.Density` on a :class:`CylinderGrid` is an initial state of :func:`meanfield.solve`, which
advances it by the "cylinder" representation (:class:`CylinderRepresentation`) on the one integrator and monitor
and returns a :class:`~meanfield.Solution` with its status; :func:`solve_radial` is the documented entry point, a
view of that Solution.

Nothing plausible but wrong is returned: a run stops with :class:`RadiusRangeError` when mass reaches the outer
cells of the s-interval (the zero-flux walls would hold it there), with :class:`~meanfield.integrate.monitor.ResolutionError`
when the angular spectrum's tail or a negative undershoot passes the monitor's thresholds, with
``FloatingPointError`` where peri-LN divides by |A| = 0 (through :func:`meanfield.solve`: the Solution's status
RESOLUTION_LOST for the first two, ``Solution.diagnostics["edge"]`` saying which end and how much mass).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ive

from ..core import checks
from ..density import Density
from ..domains import CircleGrid
from ..domains.circle import fourier
from ..domains.marginals import CellLaw, Marginal, directions, log_radii
from ..domains.products import CYLINDER, ProductGrid
from ..integrate import Status
from ..models.normalization import radial_zonal_heads
from ..integrate.monitor import ResolutionMonitor
from ..representations import register, solve_product
from ..representations.radial import (
    GUARD_CELLS, METHODS, NEG_TOL, GuardedProblem, RadialRepresentation, RadiusRangeError, initial_values,
    raise_for_walls, view_settings,
)

__all__ = ["CylinderGrid", "RadialProblem", "RadialSolution", "RadiusRangeError", "solve_radial", "radial_multipliers",
           "velocity", "METHODS", "NEG_TOL", "GUARD_CELLS", "CylinderRepresentation"]

# ----------------------------------------------------------------------------------------------------------------- grid
class CylinderGrid(ProductGrid):
    r"""n_θ equispaced angles × n_s cells of s = log r on [log r_min, log r_max]: a grid of the product domain
    :data:`~meanfield.domains.products.CYLINDER` (a :class:`~meanfield.Density` on it is an initial state of
    :func:`meanfield.solve`, advanced by the "cylinder" representation).

    Parameters
    ----------
    n_theta : int
        Angles θ_j = 2πj/n_θ (even, >= 8): a trigonometric interpolant in θ, as :class:`~meanfield.CircleGrid`.
    n_s : int
        Cells of equal width Δs = log(r_max/r_min)/n_s in s = log r (>= 2·GUARD_CELLS + 2).
    radii : (float, float)
        (r_min, r_max), 0 < r_min < r_max < ∞: the radii the law may occupy (the outer cells must stay empty).

    Attributes
    ----------
    theta : ndarray (n_theta,)
    s_edges : ndarray (n_s + 1,)
    s : ndarray (n_s,)
        Cell centres.
    r, r_edges : ndarray
        e^s at the centres and edges.
    ds, dtheta : float
    """


    def __init__(self, n_theta: int, n_s: int, radii):
        n_theta = checks.count(n_theta, "n_theta", 8)
        if n_theta % 2:
            raise ValueError(f"`n_theta` must be even (the Nyquist mode is held fixed, as on the circle), got "
                             f"{n_theta}.")
        n_s = checks.count(n_s, "n_s", 2 * GUARD_CELLS + 2)
        try:
            r_min, r_max = (checks.real(r, "radii") for r in radii)
        except TypeError:
            raise TypeError(f"`radii` must be a pair (r_min, r_max) of numbers, got {radii!r}.") from None
        if not (np.isfinite(r_min) and np.isfinite(r_max)) or r_min <= 0 or r_max <= r_min:
            raise ValueError(f"`radii` must be (r_min, r_max) with 0 < r_min < r_max < ∞ (tokens x = rθ have r > 0; "
                             f"the density lives on s = log r), got {radii!r}.")
        self.n_theta, self.n_s = n_theta, n_s
        self.radii = (r_min, r_max)
        self.theta = 2.0 * np.pi * np.arange(n_theta) / n_theta
        self.s_edges = np.linspace(np.log(r_min), np.log(r_max), n_s + 1)
        self.s = 0.5 * (self.s_edges[1:] + self.s_edges[:-1])
        self.ds = float(self.s_edges[1] - self.s_edges[0])
        self.dtheta = 2.0 * np.pi / n_theta
        self.r, self.r_edges = np.exp(self.s), np.exp(self.s_edges)
        self.circle = CircleGrid(n_theta)
        self.n, self.spacing = n_theta, min(self.dtheta, self.ds)

    domain = CYLINDER
    finer = "give a finer grid (n_theta, n_s)"
    refine_words = "n_s or n_theta"
    dim = 2

    def __eq__(self, other) -> bool:
        return isinstance(other, CylinderGrid) and (self.n_theta, self.n_s, self.radii) == (
            other.n_theta, other.n_s, other.radii)

    def __hash__(self) -> int:
        return hash((self.n_theta, self.n_s, self.radii))

    def integrate(self, values):
        """∫∫ ρ dθ ds over the last two axes (:meth:`mass` of each)."""
        return np.sum(values, axis=(-2, -1)) * self.dtheta * self.ds

    def interpolate(self, values, points):
        raise NotImplementedError(f"{self!r} holds cell averages in s: read them (values) or the marginals.")

    def resolution(self, values, tail_tol: float, *, spectrum=None):
        """The angular spectral tail (summed over s) against ``tail_tol``: None where resolved, else the reason."""
        C = np.abs(fourier.rfft(values)).sum(axis=0) * self.ds  # Σ_m |ρ̂_{m,k}| Δs ≥ every marginal's tail in θ
        top = (self.n_theta - 1) // 2
        width = max(2, top // 16)
        total = float(np.sum(values)) * (self.dtheta * self.ds)
        tail = float(np.max(C[top - width + 1: top + 1]) / (total / (2.0 * np.pi) * self.n_theta))
        if not tail <= tail_tol:
            return f"the angular spectral tail {tail:.3g} exceeds tail_tol = {tail_tol:g} on {self!r}; raise n_theta"
        return None

    def coordinates(self):
        return {"s": (self.s, {"edges": self.s_edges}), "theta": (self.theta, {})}

    @classmethod
    def from_coordinates(cls, coordinates):
        s, theta = np.asarray(coordinates["s"]), np.asarray(coordinates["theta"])
        ds = float(s[1] - s[0])
        return cls(theta.size, s.size, (float(np.exp(s[0] - ds / 2)), float(np.exp(s[-1] + ds / 2))))


    @property
    def shape(self) -> tuple[int, int]:
        """(n_s, n_theta): the values are rows of angles, one row per cell of s."""
        return (self.n_s, self.n_theta)

    def mass(self, values) -> float:
        """Σ_{m,j} ρ_{mj} Δθ Δs (exact for the trigonometric interpolant in θ and the cell averages in s)."""
        return float(np.sum(values) * self.dtheta * self.ds)

    def marginals(self, values):
        r"""The laws of the direction and of s = log r of the density with cell values ``values`` (n_s, n_θ)
        (:class:`~meanfield.domains.marginals.Marginal`):

        - "direction": ρ̄(θ_j) = Σ_m ρ_{mj} Δs on :attr:`circle`, a circle :class:`~meanfield.Density` whose measure
          is its trigonometric interpolant (the θ-discretisation's); particles read as their directions x/|x|;
        - "log r": the :class:`~meanfield.domains.marginals.CellLaw` of the masses Σ_j ρ_{mj} Δθ Δs spread uniformly
          on the cells [s_m − Δs/2, s_m + Δs/2] (finite volumes' cell averages in s); particles read as log|x|.
        """
        values = np.asarray(values, dtype=float)
        direction = Density(self.circle, values.sum(axis=0) * self.ds)
        log_r = CellLaw(self.s_edges, values.sum(axis=1) * (self.dtheta * self.ds), "log r")
        return (Marginal("direction", direction, directions), Marginal("log r", log_r, log_radii))

    def s_masses(self, values) -> np.ndarray:
        """The mass of each cell of s, Σ_j ρ_{mj} Δθ Δs, shape (n_s,) (what the radial guard reads at the walls)."""
        return np.sum(values, axis=-1) * (self.dtheta * self.ds)

    def cell_averages(self, f, order: int = 4) -> np.ndarray:
        """(1/Δs)∫_cell f(θ_j, s) ds by Gauss–Legendre with ``order`` nodes per cell (error O(Δs^{2·order}))."""
        x, w = np.polynomial.legendre.leggauss(order)
        out = np.zeros(self.shape)
        th = self.theta[None, :]
        for xi, wi in zip(x, w):
            s = (self.s + 0.5 * self.ds * xi)[:, None]
            out += 0.5 * wi * np.broadcast_to(np.asarray(f(th, s), dtype=float), self.shape)
        return out

    def __repr__(self) -> str:
        return f"CylinderGrid(n_theta={self.n_theta}, n_s={self.n_s}, radii=({self.radii[0]:g}, {self.radii[1]:g}))"


# ---------------------------------------------------------------------------------------------------------------- field
def radial_multipliers(kmax: int, beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Scaled multipliers of Z, of a·Z/c and of v·Z/c (module docstring) for k = 0..kmax.

    Returns ``D_k = 2π e^{−β} I_k(β)``, ``R_k = 2π e^{−β} I_k'(β) = π e^{−β}(I_{k−1}(β) + I_{k+1}(β))`` and
    ``N_k = 2π i k e^{−β} I_k(β)/β`` (β = 0: D = 2πδ_{k0}, R = πδ_{k1}, N = iπδ_{k1}, the limits).
    """
    k = np.arange(kmax + 1)
    if beta == 0.0:
        D = np.where(k == 0, 2.0 * np.pi, 0.0)
        R = np.where(k == 1, np.pi, 0.0)
        N = np.where(k == 1, 1j * np.pi, 0.0)
        return D.astype(complex), R.astype(complex), N
    I = ive(np.arange(-1, kmax + 2), beta)  # I_{-1} .. I_{kmax+1}, scaled; I_{-1} = I_1
    D = 2.0 * np.pi * I[1:-1]
    R = np.pi * (I[:-2] + I[2:])
    N = 2j * np.pi * k * (ive(k, beta) / beta if beta >= 1e-8 else _small_beta_ratio(k, beta))
    return D.astype(complex), R.astype(complex), N


def _small_beta_ratio(k, beta):
    """e^{−β} I_k(β)/β from the leading term of the series (β < 1e-8: the quotient of two subnormals otherwise)."""
    from scipy.special import factorial

    return np.where(k > 0, (beta / 2.0) ** np.maximum(k - 1, 0) / (2.0 * factorial(k)), 0.0) * np.exp(-beta)


def _zonal_heads(model):
    """(normalisation, [(β_eff, c, normalized)]) of a pre/peri-LN Transformer's heads on the circle, or ``ValueError``
    naming what is refused (:func:`meanfield.models.normalization.radial_zonal_heads`)."""
    return radial_zonal_heads(model, 2, "solve_radial", "the cylinder S¹ × (0, ∞)")


def _multipliers(head_list, size):
    """[(normalized, scale, D, R, N)] of the heads, multipliers to k = size//2 (:func:`radial_multipliers`)."""
    out = []
    for beta, c, normalized in head_list:
        D, R, N = radial_multipliers(size // 2, beta)
        out.append((normalized, c if normalized else c * np.exp(beta), D, R, N))
    return out


def _components(multipliers, P, n, size):
    """(a, v) = (⟨θ, A⟩, ⟨θ^⊥, A⟩) on ``size`` equispaced nodes from the rfft ``P`` of the directions' law on n
    nodes."""
    Pm = fourier.pad(P * (size / n), n, size // 2 + 1) if size != n else P
    L = Pm.shape[-1]
    a = v = 0.0
    for normalized, scale, D, R, N in multipliers:
        ah = fourier.irfft(Pm * R[:L], size)
        vh = fourier.irfft(Pm * N[:L], size)
        if normalized:
            Z = fourier.irfft(Pm * D[:L], size)
            ah, vh = ah / Z, vh / Z
        a = a + scale * ah
        v = v + scale * vh
    return a, v


def velocity(model, directions, s):
    r"""The speeds (ṡ, θ̇) = e^{−s}(b, w) of tokens at the nodes θ_j = 2πj/n and at s = log r, for the law of the
    directions ρ̄ given by its values on the n nodes (module docstring: pre-LN ṙ = a, θ̇ = v/r; peri-LN divided by
    |A|). The density's field, for comparison with the particles' (``particles.velocity``).

    Returns
    -------
    (ds_dt, dtheta_dt) : ndarrays of shape (len(s), n)
    """
    norm, head_list = _zonal_heads(model)
    rho = np.asarray(directions, dtype=float)
    n = rho.shape[-1]
    a, v = _components(_multipliers(head_list, n), fourier.rfft(rho), n, n)
    a, v = norm.scale_average((a, v), lambda: _length(a, v, n, _scale(_multipliers(head_list, 0))))
    decay = np.exp(-np.atleast_1d(np.asarray(s, dtype=float)))[:, None]
    return decay * a, decay * v


class _RadialRate:
    """∂_t ρ of the cylinder's continuity equation on a :class:`CylinderGrid` (module docstring), with the speeds
    the CFL step needs."""

    def __init__(self, grid: CylinderGrid, norm, head_list):
        self.grid, self.norm = grid, norm
        n = grid.n_theta
        self.n, self.M = n, fourier.padded_size(n)
        self.kn = n // 2 + 1
        self.ik = -1j * np.arange(self.kn)  # −∂_θ on the coefficients
        self._heads = _multipliers(head_list, self.M)
        self.decay = np.exp(-grid.s)[:, None]  # e^{−s_m}
        self.face_decay = np.exp(-grid.s_edges[1:-1])[:, None]  # e^{−s_{m+½}}, interior faces
        self.inv_ds = 1.0 / grid.ds
        self.speeds = (0.0, 0.0)

    # ---- the field of the marginal
    def _field_on(self, P, size):
        """(a, v) on ``size`` equispaced nodes from the marginal's rfft ``P`` (n//2 + 1 coefficients)."""
        return _components(self._heads, P, self.n, size)

    def fields(self, P):
        """(w on the padded grid, b on the nodes): the θ- and s-speeds without the factor e^{−s}."""
        a_M, v_M = self._field_on(P, self.M)
        a_n, v_n = self._field_on(P, self.n)
        scale = _scale(self._heads)
        (v_M,) = self.norm.scale_average((v_M,), lambda: _length(a_M, v_M, self.M, scale))
        (a_n,) = self.norm.scale_average((a_n,), lambda: _length(a_n, v_n, self.n, scale))
        return v_M, a_n

    def marginal_coefficients(self, C):
        return C.sum(axis=0) * self.grid.ds

    # ---- the rate
    def rate(self, y):
        n, M = self.n, self.M
        C = fourier.rfft(y)  # (n_s, n/2 + 1)
        w, b = self.fields(self.marginal_coefficients(C))
        # θ: −∂_θ(ρ_m e^{−s_m} w), the product on the padded grid
        rho_M = fourier.irfft(fourier.pad(C * (M / n), n, M // 2 + 1), M)
        F = fourier.rfft(rho_M * w)[:, : self.kn] * (n / M)
        F *= self.ik
        F[:, -1] = 0.0
        out = fourier.irfft(F, n)
        out *= self.decay
        # s: −(F_{m+½} − F_{m−½})/Δs, upwind value of the linear reconstruction, zero flux at the ends
        flux = self.face_decay * b * (0.5 * (y[:-1] + y[1:]))
        out[:-1] -= flux * self.inv_ds
        out[1:] += flux * self.inv_ds
        smax = np.exp(-self.grid.s_edges[0])
        self.speeds = (max(self.speeds[0], float(np.max(np.abs(w))) * smax),
                       max(self.speeds[1], float(np.max(np.abs(b))) * smax))
        return out

    def probe(self, y):
        w, b = self.fields(self.marginal_coefficients(fourier.rfft(y)))
        smax = np.exp(-self.grid.s_edges[0])
        self.speeds = (float(np.max(np.abs(w))) * smax, float(np.max(np.abs(b))) * smax)


#: |A| at or below this fraction of its largest possible value (Σ_h |c_h|, e^{β_h} times it for USA) is taken as 0 by
#: peri-LN: A/|A| of a round-off-sized A is noise
A_ZERO = 1e-12


def _length(a, v, size, scale):
    A = np.hypot(a, v)
    small = ~(A > A_ZERO * scale)
    if np.any(small):
        j = int(np.argmax(small))
        raise FloatingPointError(f"peri-LN divides the average A by |A|, but |A| = {A[j]:.3g} <= {A_ZERO:g} × "
                                 f"{scale:.3g} (its largest possible value) at θ = {2 * np.pi * j / size:.6g} (e.g. a "
                                 "uniform law of directions at β = 0): its direction A/|A| is undefined there.")
    return A


def _scale(multipliers):
    """Σ_h |c_h| (SA) or |c_h| e^{β_h} (USA): the largest |A| any law can give."""
    return sum(abs(scale) for _, scale, *_ in multipliers)


# -------------------------------------------------------------------------------------------------------------- problem
class RadialProblem(GuardedProblem):
    """The cylinder's continuity equation for :class:`~meanfield.integrate.Integrator` (what :func:`solve_radial`
    advances): ``rate(values)`` on a :class:`CylinderGrid`, values of shape (n_s, n_theta), and the CFL cap
    ``max_step`` = r_min × min(Δθ/max|w|, Δs/max|b|) from the speeds measured at the last step's stages."""

    def __init__(self, model, grid: CylinderGrid):
        norm, head_list = _zonal_heads(model)
        self.kind, self.grid = norm.name, grid
        self.rhs = _RadialRate(grid, norm, head_list)

    def rate(self, y):
        return self.rhs.rate(y)

    def probe(self, y):
        self.rhs.probe(y)

    def begin_step(self):
        self.rhs.speeds = (0.0, 0.0)

    def max_step(self):
        g = self.rhs.grid
        w, b = self.rhs.speeds
        bounds = [g.dtheta / w] if w > 0 else []
        if b > 0:
            bounds.append(g.ds / b)
        return min(bounds) if bounds else np.inf

    hints = {"edge": "Widen `radii` (CylinderGrid), keeping the outer cells empty.",
             "resolution": "Refine the cylinder grid (n_theta, n_s), or loosen the monitor's neg_tol/tail_tol."}
    words = "the cylinder density"


# --------------------------------------------------------------------------------------------------------------- result
@dataclass(frozen=True)
class RadialSolution:
    r"""The density of (θ, s = log r) at the output times (:func:`solve_radial`), in the style of ``solve_ivp``.

    Attributes
    ----------
    t : ndarray (T,)
    values : ndarray (T, n_s, n_theta)
        ρ(θ_j, s, t) averaged over the cells of s, with respect to dθ ds (the density of (θ, r) w.r.t. dθ dr is ρ/r).
    grid : CylinderGrid
    model : Transformer
    normalization : str
        "pre" or "peri".
    nfev, nsteps : int
    mass_drift : float
        max over accepted steps of |mass − mass(0)| (round-off: the scheme is conservative).
    status, message
        The :class:`~meanfield.Solution`'s (``solution``): how the run ended.
    solution : Solution
        What :func:`meanfield.solve` returned, of which this is a view (frames: densities on the CylinderGrid).
    """

    t: np.ndarray
    values: np.ndarray
    grid: CylinderGrid
    model: object
    normalization: str
    nfev: int
    nsteps: int
    mass_drift: float
    status: Status = Status.SUCCESS
    message: str = ""
    solution: object = None

    def raise_for_status(self) -> "RadialSolution":
        """This solution where the run reached its end; else raise as :meth:`meanfield.Solution.raise_for_status`."""
        if self.solution is not None and self.status is not Status.SUCCESS:
            self.solution.raise_for_status()
        return self

    @property
    def mass(self) -> np.ndarray:
        """Σ ρ Δθ Δs at each output (1 to round-off)."""
        return self.values.sum(axis=(1, 2)) * self.grid.dtheta * self.grid.ds

    @property
    def directions(self) -> np.ndarray:
        r"""The direction's marginal ρ̄(θ_j, t) = ∫ ρ ds = Σ_m ρ_m Δs, shape (T, n_theta)."""
        return self.values.sum(axis=1) * self.grid.ds

    def direction_marginal(self, k: int = -1) -> Density:
        """ρ̄ at output ``k`` as a :class:`~meanfield.Density` on the circle (for W1, plots, the circle's tools)."""
        return Density(self.grid.circle, self.directions[k])

    @property
    def log_radius_density(self) -> np.ndarray:
        r"""The law of s = log r: g(s_m, t) = ∫ ρ dθ, cell averages w.r.t. ds, shape (T, n_s)."""
        return self.values.sum(axis=2) * self.grid.dtheta

    @property
    def radius_masses(self) -> np.ndarray:
        """The radius law as masses of the cells [r_edges[m], r_edges[m+1]], shape (T, n_s), summing to 1."""
        return self.log_radius_density * self.grid.ds

    @property
    def radius_density(self) -> np.ndarray:
        """The radius law's density w.r.t. dr on each cell (its mass over its length), shape (T, n_s)."""
        return self.radius_masses / np.diff(self.grid.r_edges)

    @property
    def mean_radius(self) -> np.ndarray:
        r"""E r = Σ_m g_m ∫_cell e^s ds (second order, as the scheme), shape (T,)."""
        cell = np.diff(self.grid.r_edges)  # ∫_cell e^s ds
        return self.log_radius_density @ cell

    @property
    def order_parameter(self) -> np.ndarray:
        r"""|∫ e^{iθ} ρ̄(θ) dθ| at each output (1: all directions equal), shape (T,)."""
        z = self.directions @ np.exp(1j * self.grid.theta) * self.grid.dtheta
        return np.abs(z)


# ------------------------------------------------------------------------------------------------- representation
class CylinderRepresentation(RadialRepresentation):
    """Pre/peri-LN densities on S¹ × (0, ∞), a :class:`~meanfield.Density` on a :class:`CylinderGrid`, on the one
    integrator (module docstring): the "cylinder" representation :func:`meanfield.solve` plans for the product domain
    :data:`~meanfield.domains.products.CYLINDER`. Its stops, defaults and diagnostics are those of every radial
    representation (:class:`~meanfield.representations.radial.RadialRepresentation`: status RESOLUTION_LOST where
    mass reaches the guard cells, ``diagnostics["edge"]`` = (side, mass), or the angular tail or the negative part
    passes the monitor's ``tail_tol``/``neg_tol``; ``diagnostics["mass_drift"]``)."""

    name = "cylinder"
    domain_words = "cylinder S¹ × (0, ∞) (a CylinderGrid)"
    accuracy = "spectral in θ, second order in s = log r (docs/MATH.md §10.1)"

    def heads(self, model, domain):
        return _zonal_heads(model)

    def problem(self, model, grid):
        return RadialProblem(model, grid)


register(CylinderRepresentation())


# ---------------------------------------------------------------------------------------------------------------- solve
def solve_radial(model, rho0, t_span, t_eval=None, *, n_theta: int = 256, n_s: int = 128, radii=(0.25, 8.0),
                 method: str = "rk4", dt: float | None = None, cfl: float = 0.2,
                 edge_tol: float = 1e-10, monitor: ResolutionMonitor | None = None) -> RadialSolution:
    r"""The density of pre- or peri-LN tokens x = rθ on S¹ × (0, ∞) (module docstring; docs/MATH.md §10.1).

    Solves ∂_t ρ + ∂_θ(ρ e^{−s} w) + ∂_s(ρ e^{−s} b) = 0 for the density ρ(θ, s) of (direction, s = log r) w.r.t.
    dθ ds, with (w, b) = (v, a) for pre-LN (ṙ = ⟨θ, A⟩, θ̇ = P_θA/r) and (v, a)/|A| for peri-LN (ṙ = ⟨θ, A⟩/|A|,
    θ̇ = P_θA/(r|A|)), A = aθ + vθ^⊥ the heads' average of the directions' law (../shared/MATH.md §10).

    Parameters
    ----------
    model : Transformer
        ``Transformer(attention, normalization="pre" | "peri")`` with zonal self-attention heads (Q = qI, K = kI,
        qk >= 0, V = cI; SA or USA; several heads sum their averages), no noise. Post-LN and nGPT (tokens on the
        sphere) and Mix-LN are refused, with the solvers that take them.
    rho0 : callable or ndarray
        ``rho0(theta, s)`` the initial density of (θ, s = log r) w.r.t. dθ ds (broadcasting arrays; for a density
        p(θ, r) w.r.t. dθ dr give ``lambda th, s: p(th, np.exp(s)) * np.exp(s)``), averaged over the cells by
        Gauss–Legendre; or the cell values, shape (n_s, n_theta). Finite, >= 0, normalised here to mass 1 (as
        :meth:`Density.from_function`); its mass must stay out of the GUARD_CELLS outer cells at each end.
    t_span : (float, float)
    t_eval : array_like, optional
        Output times in ``t_span`` (default its ends).
    n_theta, n_s : int
        Angles (even) and cells of s (:class:`CylinderGrid`).
    radii : (float, float)
        (r_min, r_max), 0 < r_min < r_max: the radii the run may reach. Under SA |ṙ| = |⟨θ, A⟩| <= Σ|c_h|, under
        peri-LN |ṙ| <= 1: a law supported in [r_0, r_1] stays in [r_0 − Ut, r_1 + Ut], U that bound. The step
        scales with r_min (the direction turns at speed |v|/r).
    method : {"rk4", "ssprk3"}
    dt : float, optional
        Fixed step (default: cfl × r_min × min(Δθ/max|w|, Δs/max|b|), measured before every step).
    cfl : float
        The CFL number of the default step (RK4 is stable to about 0.9 for the spectral part).
    edge_tol : float
        Largest mass allowed in the guard cells of either end before the run stops (:class:`RadiusRangeError`).
    monitor : ResolutionMonitor, optional
        ``tail_tol`` (the angular spectrum's top band, summed over s, relative to the mean; default 1e-10) and
        ``neg_tol`` (the negative part's mass relative to the total; default :data:`NEG_TOL`) stop the run with
        :class:`ResolutionError`.

    Returns
    -------
    RadialSolution

    Raises
    ------
    ValueError
        A model or argument it cannot take (naming it); :class:`RadiusRangeError` (a ValueError) where ρ0 or the
        solution puts mass in the guard cells, carrying the solution up to then.
    ResolutionError
        The angular tail or a negative undershoot passed the monitor's thresholds (the partial solution attached).
    FloatingPointError
        A non-finite state, or peri-LN's |A| = 0.
    """
    norm, _ = _zonal_heads(model)
    grid = CylinderGrid(n_theta, n_s, radii)
    settings = view_settings(method, edge_tol, monitor, cfl, dt)
    start = Density(grid, initial_values(rho0, grid, "theta, s", "(n_s, n_theta)",
                                           "θ, log r"), check=False)
    sol = solve_product(model, start, t_span, t_eval, settings)
    values = np.array([f.values for f in sol.densities]).reshape((len(sol.t),) + grid.shape)
    out = RadialSolution(sol.t, values, grid, model, norm.name, sol.nfev, sol.nsteps, sol.diagnostics["mass_drift"],
                         sol.status, sol.message, sol)
    raise_for_walls(sol, out)
    return out.raise_for_status()
