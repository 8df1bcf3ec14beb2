r"""Common noise: one random linear layer shared by every token (MATH.md §13; issue 48 item 3).

The tokens follow the Stratonovich SDE

    dX_i = X[μ](X_i) dt + √(2D) dB_i + Σ_k P_{X_i}(Σ_k X_i) ∘ dW^k,

with d×d matrices Σ_k (k = 1..m), B_i independent Brownian motions (the idiosyncratic noise, MATH.md §6) and W^k
scalar Brownian motions common to every token (Engel & Shalova, arXiv 2603.06187; Fedorov et al., arXiv
2601.21942). Conditioned on the common path W, the empirical measure converges to the solution of the stochastic
continuity equation

    dμ + div(μ X[μ]) dt + Σ_k div(μ P_x Σ_k x) ∘ dW^k = D Δμ dt.

The noise term alone is the projection of a linear flow: if dY = Σ_k Σ_k Y ∘ dW^k (Stratonovich: the ordinary
chain rule holds), then X = Y/|Y| solves dX = Σ_k P_X(Σ_k X) ∘ dW^k. Over a time step with increments ΔW^k the
scheme moves every token by

    x ↦ e^{A} x / |e^{A} x|,   A = Σ_k ΔW^k Σ_k,

the exact flow of the noise term where the Σ_k commute (one Σ; skew Σ on S¹), else its first Magnus term (the
Lévy areas of non-commuting Σ_k left out, which limits the strong order to 1/2; no order is measured here). A time step of length h is
Strang split, e^{A'} ∘ drift(h) ∘ e^{A''} with A', A'' the generators of the two half-step increments, and the
half-maps of neighbouring steps merged into one matrix product where no output falls between them: particles
(:mod:`particles.common_noise`) and densities (:mod:`meanfield.representations.common_noise`) apply the same maps
of the same :class:`CommonPath`, so one realisation of each can be compared path by path.

For skew-symmetric Σ_k every map is a rotation, and for rotation-equivariant attention (Q = K = V = I) the solution
is the noiseless one rotated by the common path, μ_t = (R_t)_# ν_t with dR = Σ_k Σ_k R ∘ dW^k (MATH.md §13): the
scheme keeps this exactly, its drift steps being the noiseless ones (:meth:`CommonNoise.flow` is R at the path's
times).

Without attention, tokens synchronise at the Lyapunov gap λ₁ − λ₂ of the linear flow (up to sign: the images of
x and −x stay antipodal); :func:`lyapunov_exponents` computes the spectrum of the scheme's own product of maps by
QR (Benettin et al. 1980), :func:`lyapunov_gap` its mean over independent paths with a 95 % interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..core import checks

__all__ = ["CommonPath", "CommonNoise", "expm_batch", "interval_maps", "lyapunov_exponents", "lyapunov_gap", "LyapunovGap"]

#: Relative slack with which a time is read as a point of the path's grid.
GRID_TOL = 1e-9


def expm_batch(A) -> np.ndarray:
    r"""e^A for a stack of small matrices (shape (..., d, d)), by scaling and squaring: the Taylor polynomial of degree
    18 of A/2^s, ‖A/2^s‖₁ <= 1/2 (one s for the stack), squared s times. The truncation is below
    (1/2)^19/19! < 1e-22 relative, so the result is e^A to round-off times the s squarings (a few 1e-16 for the
    increments of a path, ‖A‖ ~ |Σ|√dt); scipy's expm takes a millisecond per matrix on a stack."""
    A = np.asarray(A, dtype=float)
    norm = float(np.max(np.sum(np.abs(A), axis=-2))) if A.size else 0.0
    s = max(0, int(np.ceil(np.log2(norm / 0.5)))) if norm > 0.5 else 0
    X = A / 2.0 ** s
    eye = np.broadcast_to(np.eye(A.shape[-1]), A.shape)
    E, term = eye.copy(), eye
    for k in range(1, 19):
        term = term @ X / k
        E = E + term
    for _ in range(s):
        E = E @ E
    return E


class CommonPath:
    r"""A seed-reproducible realisation of m common Brownian motions W^1..W^m on [t0, t1].

    The path holds its increments over half steps, ΔW^k_j = W^k(t0 + (j+1)h/2) − W^k(t0 + jh/2), j = 0..2K−1,
    K = (t1 − t0)/h steps of length ``dt`` = h, drawn as √(h/2)·N(0, 1) from ``numpy.random.default_rng(seed)``
    (the same seed gives the same path on every machine).

    Parameters
    ----------
    m : int
        The number of Brownian motions (one per matrix Σ_k).
    dt : float
        The step h > 0 of the scheme that uses the path (particles and densities step on its grid).
    t1 : float
        The end of the path; (t1 − t0)/dt must be an integer (to 1e-9).
    seed : int, Generator or None
        The seed (None: fresh entropy — the path is then not reproducible).
    t0 : float, default 0
    """

    def __init__(self, m: int, dt: float, t1: float, seed=None, t0: float = 0.0):
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ValueError(f"`m` must be a positive integer (the number of Brownian motions), got {m!r}.")
        dt, t0, t1 = float(dt), float(t0), float(t1)
        if not np.isfinite(dt) or dt <= 0:
            raise ValueError(f"`dt` must be a finite positive step, got {dt!r}.")
        if not (np.isfinite(t0) and np.isfinite(t1)) or t1 <= t0:
            raise ValueError(f"`t1` must be finite and > t0 = {t0!r}, got {t1!r}.")
        steps = (t1 - t0) / dt
        K = int(round(steps))
        if K < 1 or abs(steps - K) > GRID_TOL * max(1.0, steps):
            raise ValueError(f"`t1` − t0 = {t1 - t0!r} must be a whole number of steps `dt` = {dt!r}, got {steps!r}.")
        self.m, self.dt, self.t0, self.steps = int(m), dt, t0, K
        self.t1 = t0 + K * dt
        rng = checks.generator(seed, "seed")
        self.increments = np.sqrt(0.5 * dt) * rng.standard_normal((2 * K, self.m))
        self.increments.flags.writeable = False

    @property
    def times(self) -> np.ndarray:
        """The step times t0 + jh, j = 0..K."""
        return self.t0 + self.dt * np.arange(self.steps + 1)

    def W(self, t) -> np.ndarray:
        """W(t) − W(t0) at step times ``t`` (shape t.shape + (m,)), the sum of the half-step increments."""
        j = self.index(t)
        cum = np.concatenate([np.zeros((1, self.m)), np.cumsum(self.increments, axis=0)])
        return cum[2 * j]

    def index(self, t, name: str = "t") -> np.ndarray | int:
        """The step index j of step times t = t0 + jh; ValueError naming ``name`` for a time off the grid."""
        t = np.asarray(t, dtype=float)
        x = (t - self.t0) / self.dt
        j = np.rint(x).astype(int)
        off = np.abs(x - j) > GRID_TOL * np.maximum(1.0, np.abs(x))
        if np.any(off) or np.any(j < 0) or np.any(j > self.steps):
            bad = t[off | (j < 0) | (j > self.steps)] if t.ndim else t
            raise ValueError(f"`{name}` must lie on the common path's grid t0 + j·dt (t0 = {self.t0:g}, dt = "
                             f"{self.dt:g}, j = 0..{self.steps}), got {np.ravel(bad)[:3]!r}.")
        return int(j) if j.ndim == 0 else j

    def __repr__(self) -> str:
        return f"CommonPath(m={self.m}, dt={self.dt:g}, t0={self.t0:g}, t1={self.t1:g}, steps={self.steps})"


class CommonNoise:
    r"""The common-noise term Σ_k P_x(Σ_k x) ∘ dW^k of a run: the matrices Σ_k and the path W (module docstring).

    Parameters
    ----------
    sigmas : array_like, shape (m, d, d) or (d, d)
        The matrices Σ_k (one matrix: m = 1). Finite.
    path : CommonPath
        The common Brownian motions, ``path.m`` = m.

    Attributes
    ----------
    sigmas : ndarray, shape (m, d, d)
    path : CommonPath
    dim : int
        d.
    is_zero : bool
        Every Σ_k = 0: the term is absent, and the solvers run today's noiseless (or idiosyncratic-noise) scheme
        unchanged, bit for bit.
    skew : bool
        Every Σ_k skew-symmetric: every map is a rotation.
    """

    def __init__(self, sigmas, path: CommonPath):
        S = np.asarray(sigmas, dtype=float)
        if S.ndim == 2:
            S = S[None]
        if S.ndim != 3 or S.shape[1] != S.shape[2] or S.shape[1] < 2:
            raise ValueError(f"`sigmas` must be d×d matrices, shape (m, d, d) or (d, d) with d >= 2, got shape "
                             f"{np.shape(sigmas)}.")
        if not np.all(np.isfinite(S)):
            raise ValueError("`sigmas` must be finite.")
        if not isinstance(path, CommonPath):
            raise TypeError(f"`path` must be a CommonPath, got {type(path).__name__}.")
        if path.m != S.shape[0]:
            raise ValueError(f"`path` holds {path.m} Brownian motion(s) but `sigmas` has {S.shape[0]} matrices: one "
                             "W^k per Σ_k.")
        S.flags.writeable = False
        self.sigmas, self.path, self.dim = S, path, S.shape[1]
        self.is_zero = bool(not np.any(S))
        self.skew = bool(np.array_equal(S, -np.swapaxes(S, 1, 2)))
        self._maps = None

    # ---------------------------------------------------------------- the maps
    def generators(self) -> np.ndarray:
        """A_j = Σ_k ΔW^k_j Σ_k of every half step j = 0..2K−1, shape (2K, d, d)."""
        return np.einsum("jk,kab->jab", self.path.increments, self.sigmas)

    def half_maps(self) -> np.ndarray:
        """e^{A_j} of every half step, shape (2K, d, d) (computed once)."""
        if self._maps is None:
            self._maps = expm_batch(self.generators())
            self._maps.flags.writeable = False
        return self._maps

    def flow(self, t) -> np.ndarray:
        r"""The scheme's linear flow R_t = e^{A_{2j−1}} ⋯ e^{A_0} at step times t = t0 + jh, shape t.shape + (d, d):
        dR = Σ_k Σ_k R ∘ dW^k discretised as the scheme does (exact where the Σ_k commute: R_t = e^{Σ_k Σ_k W^k_t})."""
        j = np.atleast_1d(self.path.index(t))
        maps = self.half_maps()
        out = np.empty((j.size, self.dim, self.dim))
        R, done = np.eye(self.dim), 0
        for i in np.argsort(j):
            for h in range(done, 2 * j[i]):
                R = maps[h] @ R
            done = max(done, 2 * j[i])
            out[i] = R
        return out.reshape(np.shape(t) + (self.dim, self.dim))

    def tangent_field(self, x) -> np.ndarray:
        """P_x(Σ_k x) for every k at unit vectors x (shape (..., d)), shape (m, ..., d): the noise's vector fields."""
        x = np.asarray(x, dtype=float)
        v = np.einsum("kab,...b->k...a", self.sigmas, x)
        return v - np.sum(v * x, axis=-1, keepdims=True) * x

    def refusal(self, domain, d: int) -> str | None:
        """Why this common noise cannot move points of ``domain`` in R^d, or None: the maps act on unit vectors
        (S¹, S^{d-1}), and the matrices must be d×d."""
        if not domain.unit_vectors:
            return (f"common noise is implemented for tokens on spheres (S¹, S^(d-1)): the scheme maps unit vectors "
                    f"x ↦ e^A x/|e^A x|; {domain!r} is not one (R^d tokens would need the unprojected flow e^A x, "
                    "causal rows (s, x) a position that the layer must not move — neither is written)")
        if self.dim != d:
            raise ValueError(f"`common_noise`: its matrices Σ_k are {self.dim}×{self.dim} but the tokens live in R^{d}.")
        return None

    def __repr__(self) -> str:
        return f"CommonNoise(m={self.sigmas.shape[0]}, d={self.dim}, skew={self.skew}, {self.path!r})"


def interval_maps(noise: CommonNoise, j0: int, j1: int) -> list:
    r"""The maps of the split scheme from step time t_{j0} to t_{j1} (module docstring), a list of j1 − j0 + 1
    matrices: entry i < j1 − j0 is applied before the drift step from t_{j0+i} — the first half of that step's
    increment, times the second half of the step before where that lies inside the interval (merged: one map per
    step) —, the last entry after the last drift step (the second half of step j1 − 1). None stands for the identity
    (a zero increment: nothing to apply, so Σ_k = 0 changes no bit)."""
    maps, eye = noise.half_maps(), np.eye(noise.dim)
    out = []
    for j in range(j0, j1 + 1):
        first = maps[2 * j] if j < j1 else None
        second = maps[2 * j - 1] if j > j0 else None
        m = second if first is None else (first if second is None else first @ second)
        out.append(None if m is None or np.array_equal(m, eye) else m)
    return out


# --------------------------------------------------------------------- Lyapunov exponents
def lyapunov_exponents(noise: CommonNoise) -> np.ndarray:
    r"""The Lyapunov spectrum λ₁ >= … >= λ_d of the scheme's linear flow over the whole path (Benettin's QR method).

    With R_T = M_{2K−1} ⋯ M_0 (M_j = e^{A_j}, :meth:`CommonNoise.half_maps`), Q_0 = I and M_j Q_j = Q_{j+1} R_j
    (QR with diag R_j > 0), λ_i = (1/T) Σ_j log (R_j)_{ii}, T = t1 − t0: the finite-time exponents of the product
    that the particles' noise maps apply (MATH.md §13). λ₁ + … + λ_d = (1/T) log det R_T = (1/T) Σ_j tr A_j.

    Returns
    -------
    ndarray, shape (d,)
        Per unit time, in the order of the QR columns: decreasing as T → ∞ (the first column follows the most
        expanded direction), possibly not over a short path where two exponents are close.
    """
    return _qr_exponents(noise.half_maps()[None], noise.path.t1 - noise.path.t0)[0]


def _qr_exponents(maps, T):
    """Benettin's QR over the products of ``maps`` (shape (P, J, d, d): P independent products of J maps): the
    exponents (P, d) per unit time ``T``."""
    P, J, d = maps.shape[0], maps.shape[1], maps.shape[-1]
    Q = np.broadcast_to(np.eye(d), (P, d, d)).copy()
    logs = np.zeros((P, d))
    for j in range(J):
        Q, R = np.linalg.qr(maps[:, j] @ Q)
        diag = np.diagonal(R, axis1=-2, axis2=-1)
        Q = Q * np.where(diag < 0, -1.0, 1.0)[:, None, :]
        logs += np.log(np.abs(diag))
    return logs / T


@dataclass(frozen=True)
class LyapunovGap:
    """λ₁ − λ₂ of the linear flow dY = Σ_k Σ_k Y ∘ dW^k estimated over independent paths (:func:`lyapunov_gap`).

    Attributes
    ----------
    gap : float
        The mean over the paths of their finite-time gaps.
    low, high : float
        Its two-sided 95 % Student-t interval (over ``paths`` independent paths).
    exponents : ndarray, shape (paths, d)
        Each path's spectrum (:func:`lyapunov_exponents`).
    t, dt : float
        Each path's length and step.
    """

    gap: float
    low: float
    high: float
    exponents: np.ndarray
    t: float
    dt: float


def lyapunov_gap(sigmas, t: float, dt: float, paths: int = 8, seed=None, level: float = 0.95) -> LyapunovGap:
    r"""λ₁ − λ₂ of the shared linear flow, from ``paths`` independent paths of length ``t`` (the scheme's maps with
    step ``dt``), with the Student-t interval of their mean at ``level``.

    The finite-time gap of one path is asymptotically normal about the true gap with variance ∝ 1/t (a central limit
    theorem for products of random matrices), so the interval is that of the mean of independent normal estimates.
    Path i is ``CommonPath(m, dt, t, seed=SeedSequence(seed).spawn(paths)[i])``.
    """
    sigmas = np.asarray(sigmas, dtype=float)
    m = 1 if sigmas.ndim == 2 else sigmas.shape[0]
    if isinstance(paths, bool) or not isinstance(paths, (int, np.integer)) or paths < 2:
        raise ValueError(f"`paths` must be an integer >= 2 (an interval needs a spread), got {paths!r}.")
    if not 0 < level < 1:
        raise ValueError(f"`level` must lie in (0, 1), got {level!r}.")
    seeds = np.random.SeedSequence(seed).spawn(int(paths))
    noises = [CommonNoise(sigmas, CommonPath(m, dt, t, seed=s)) for s in seeds]
    ex = _qr_exponents(np.stack([c.half_maps() for c in noises]), noises[0].path.t1 - noises[0].path.t0)
    gaps = ex[:, 0] - ex[:, 1]
    mean, half = float(gaps.mean()), float(stats.t.ppf(0.5 + level / 2, paths - 1) * gaps.std(ddof=1) / np.sqrt(paths))
    return LyapunovGap(mean, mean - half, mean + half, ex, float(t), float(dt))
