r"""Attention in R^d: the variants of Castin, Ablin, Carrillo & Peyré (CACP; MATH.md §5).

With A = KᵀQ and a probability measure μ on R^d, the continuity equation
∂_t μ + div(μ Γ_μ) = 0 has no projection; the fields are defined below, each
model's ``field`` being the reference (``quadrature``) sum over the measure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from .base import Head, check_weights, row_chunks

__all__ = ["EuclideanAttention", "Softmax", "L2", "Sinkhorn", "Sigmoid", "Masked", "EUCLIDEAN_MODELS", "check_points"]


def check_points(points, weights, queries, d_model):
    """Finite ``points`` (..., n, d) with one weight each and finite ``queries`` (..., m, d), in the model's R^d."""
    points = np.asarray(points, dtype=float)
    queries = np.asarray(queries, dtype=float)
    for name, a in (("points", points), ("queries", queries)):
        if a.ndim < 2:
            raise ValueError(f"`{name}` must have shape (..., n, d), got {a.shape}.")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"`{name}` contains non-finite values (NaN or inf).")
    if points.shape[-1] != queries.shape[-1]:
        raise ValueError(f"`points` and `queries` live in different dimensions: {points.shape[-1]} and {queries.shape[-1]}.")
    if d_model is not None and d_model != points.shape[-1]:
        raise ValueError(f"the model's matrices are {d_model}×{d_model} but the points live in R^{points.shape[-1]}.")
    return points, check_weights(weights, points), queries


@dataclass(frozen=True, eq=False)
class EuclideanAttention(Head):
    """Common parts of the R^d models: Q, K, V (None = identity), A = KᵀQ, row-chunked softmax sums."""

    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None

    min_dim = 1
    domain = "euclidean"
    zonal = None

    def __post_init__(self):
        self._check_matrices()

    def _softmax_field(self, points, weights, queries, scale):
        """Σ_j w_j e^{scale⟨Ax,y_j⟩} V y_j / Σ_j w_j e^{scale⟨Ax,y_j⟩} at the queries, in row chunks."""
        d = points.shape[-1]
        Vy = points @ self.matrices(d)[2].T
        Ax = scale * queries @ self.A(d).T
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d))
        for sl in row_chunks(queries.shape[-2], points.shape[-2]):
            out[..., sl, :] = self._softmax_average(Ax[..., sl, :] @ np.swapaxes(points, -1, -2), weights, Vy)
        return out

    @staticmethod
    def _softmax_average(logits, weights, Vy):
        """Σ_j w_j e^{s_ij} V y_j / Σ_j w_j e^{s_ij}, max-shifted (weights may carry log-scalings).

        Works in place on ``logits`` (a fresh work array from the caller)."""
        e = logits
        e -= np.max(e, axis=-1, keepdims=True)
        np.exp(e, out=e)
        e *= weights[..., None, :]
        Z = np.sum(e, axis=-1, keepdims=True)
        if np.any(Z <= 0):
            raise ValueError("the softmax normaliser is not positive: the weights must describe a positive measure.")
        return (e @ Vy) / Z


@dataclass(frozen=True, eq=False)
class Softmax(EuclideanAttention):
    r"""Softmax attention in R^d (CACP; MATH.md §5).

    Γ(x) = ∫ V y e^{β⟨Ax, y⟩} dμ(y) / ∫ e^{β⟨Ax, y⟩} dμ(y),  A = KᵀQ.

    ``beta`` (default 1) scales A; MATH.md absorbs it into A.
    """

    beta: float = 1.0

    kind = "softmax"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "beta", checks.beta(self.beta))

    def field(self, points, weights, queries) -> np.ndarray:
        """Γ at ``queries`` (..., m, d) for μ = Σ w_j δ_{points_j}; no projection (R^d)."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        return self._softmax_field(points, weights, queries, self.beta)


@dataclass(frozen=True, eq=False)
class L2(EuclideanAttention):
    r"""L2 attention in R^d: Γ(x) = ∫ V y k dμ / ∫ k dμ with k = e^{−|Qx − Ky|²/(2τ)} (MATH.md §3, §5).

    τ = 1/2 gives the kernel e^{−|Qx−Ky|²} written in MATH.md §5; the Gaussian
    closure of §3 is stated for general τ.
    """

    tau: float = 1.0

    kind = "l2"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "tau", checks.positive(self.tau, "tau"))

    def field(self, points, weights, queries) -> np.ndarray:
        points, weights, queries = check_points(points, weights, queries, self.dim)
        d = points.shape[-1]
        Q, K, V = self.matrices(d)
        Qx = queries @ Q.T
        Ky = points @ K.T
        Vy = points @ V.T
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d))
        Ky2 = np.sum(Ky * Ky, axis=-1)
        for sl in row_chunks(queries.shape[-2], points.shape[-2]):
            q = Qx[..., sl, :]
            # −|q − k|²/(2τ) = (2⟨q,k⟩ − |k|² − |q|²)/(2τ); |q|² cancels in the normalised average
            logits = (2.0 * q @ np.swapaxes(Ky, -1, -2) - Ky2[..., None, :]) / (2.0 * self.tau)
            out[..., sl, :] = self._softmax_average(logits, weights, Vy)
        return out


@dataclass(frozen=True, eq=False)
class Sinkhorn(EuclideanAttention):
    r"""Sinkhorn attention in R^d (CACP; MATH.md §3, §5).

    k^∞ is the limit of alternately normalising k^0(x, y) = e^{−|Qx − Ky|²/(2τ)}
    over y and over x against μ (Sinkhorn–Knopp), Γ(x) = ∫ V y k^∞(x, y) dμ(y).
    Since k^0 = a(x) e^{⟨Ax, y⟩/τ} b(y), the limit is e^{⟨Ax,y⟩/τ + f(x) + g(y)}
    with the symmetric entropic coupling of μ with itself, cost −⟨Ax, y⟩/τ:
    g is found in the log domain on the support of μ until both marginals
    are met to ``tol`` (max relative error), and at any query x the field is
    the softmax of ⟨Ax, y_j⟩/τ + g_j over μ. ``RuntimeError`` if ``max_iter``
    iterations do not reach ``tol``.
    """

    tau: float = 1.0
    tol: float = 1e-13
    max_iter: int = 100_000

    kind = "sinkhorn"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "tau", checks.positive(self.tau, "tau"))
        object.__setattr__(self, "tol", checks.positive(self.tol, "tol"))
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"`max_iter` must be a positive integer, got {self.max_iter!r}.")

    def potentials(self, points, weights) -> np.ndarray:
        """g (shape (..., n)): log-scalings with Σ_j w_j e^{S_ij + f_i + g_j} = 1 for both marginals."""
        from scipy.special import logsumexp

        d = points.shape[-1]
        S = (points @ self.A(d).T) @ np.swapaxes(points, -1, -2) / self.tau  # S_ij = ⟨Ax_i, x_j⟩/τ
        logw = np.log(np.where(weights > 0, weights, np.finfo(float).tiny))
        f = np.zeros(points.shape[:-1])
        g = np.zeros(points.shape[:-1])
        for _ in range(self.max_iter):
            f = -logsumexp(S + (g + logw)[..., None, :], axis=-1)
            g = -logsumexp(S + (f + logw)[..., :, None], axis=-2)
            row = logsumexp(S + (g + logw)[..., None, :], axis=-1) + f
            if np.max(np.abs(np.expm1(row))) <= self.tol:
                return g
        raise RuntimeError(f"Sinkhorn did not reach tol = {self.tol:g} in {self.max_iter} iterations.")

    def field(self, points, weights, queries) -> np.ndarray:
        points, weights, queries = check_points(points, weights, queries, self.dim)
        g = self.potentials(points, weights)
        w_eff = weights * np.exp(g - np.max(g, axis=-1, keepdims=True))
        return self._softmax_field(points, w_eff, queries, 1.0 / self.tau)


@dataclass(frozen=True, eq=False)
class Sigmoid(EuclideanAttention):
    r"""Sigmoid attention in R^d: Γ(x) = ∫ V y σ(⟨Ax, y⟩ + b) dμ(y), no normalisation (MATH.md §5)."""

    b: float = 0.0

    kind = "sigmoid"

    def field(self, points, weights, queries) -> np.ndarray:
        from scipy.special import expit

        points, weights, queries = check_points(points, weights, queries, self.dim)
        d = points.shape[-1]
        Vy = points @ self.matrices(d)[2].T
        Ax = queries @ self.A(d).T
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d))
        for sl in row_chunks(queries.shape[-2], points.shape[-2]):
            s = expit(Ax[..., sl, :] @ np.swapaxes(points, -1, -2) + self.b) * weights[..., None, :]
            out[..., sl, :] = s @ Vy
        return out


@dataclass(frozen=True, eq=False)
class Masked(EuclideanAttention):
    r"""Causal (masked) softmax attention on [0, 1] × R^d (CACP; MATH.md §5).

    Points are (τ, y) ∈ R^{1+d}, the first coordinate the position in the
    sequence; Γ(s, x) = (0, ∫ V y e^{β⟨Ax,y⟩} 1_{τ<=s} dμ̄ / ∫ e^{β⟨Ax,y⟩} 1_{τ<=s} dμ̄).
    Q, K, V act on the R^d part. A query with no point at τ <= s gets zero.
    """

    beta: float = 1.0

    kind = "masked"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "beta", checks.beta(self.beta))

    @property
    def dim(self) -> int | None:
        d = super().dim
        return None if d is None else d + 1

    def field(self, points, weights, queries) -> np.ndarray:
        points, weights, queries = check_points(points, weights, queries, self.dim)
        d = points.shape[-1] - 1
        tau, y = points[..., 0], points[..., 1:]
        s, x = queries[..., 0], queries[..., 1:]
        Vy = y @ self.matrices(d)[2].T
        Ax = self.beta * x @ self.A(d).T
        out = np.zeros(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d + 1))
        for sl in row_chunks(queries.shape[-2], points.shape[-2]):
            logits = Ax[..., sl, :] @ np.swapaxes(y, -1, -2)
            allowed = tau[..., None, :] <= s[..., sl, None]
            logits = np.where(allowed, logits, -np.inf)
            smax = np.max(logits, axis=-1, keepdims=True)
            smax = np.where(np.isfinite(smax), smax, 0.0)
            e = np.exp(logits - smax) * weights[..., None, :]
            Z = np.sum(e, axis=-1, keepdims=True)
            out[..., sl, 1:] = np.where(Z > 0, (e @ Vy) / np.where(Z > 0, Z, 1.0), 0.0)
        return out


EUCLIDEAN_MODELS = (Softmax, L2, Sinkhorn, Sigmoid, Masked)
