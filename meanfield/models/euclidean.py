r"""Attention in R^d: the variants of Castin, Ablin, Carrillo & Peyré (CACP; MATH.md §5).

With A = KᵀQ and a probability measure μ on R^d, the continuity equation
∂_t μ + div(μ Γ_μ) = 0 has no projection; the fields are defined below, each
model's ``field`` being the reference (``quadrature``) sum over the measure.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field as dc_field

import numpy as np

from ..core import checks
from .base import Head, check_weights, log_kernel_excess, row_chunks, softmax_jacobian
from .bounds import SIGMOID_CURVATURE, HeadConstants, exp_or_inf, norm2
from .registry import NOISE, ModelKind, Parameter, register

__all__ = ["EuclideanAttention", "Softmax", "L2", "Sinkhorn", "Sigmoid", "Masked", "EUCLIDEAN_MODELS", "check_points",
           "sinkhorn_log_weights", "sinkhorn_marginal_error"]

_TAU = Parameter("tau", "float", 1.0, "temperature τ", positive=True)


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
    checks.matrices_act_on(d_model, points.shape[-1])
    return points, check_weights(weights, points), queries



def _euclidean_beta(value, name):
    """β >= 0 of the R^d models, with the reason for β < 0: it only scales A = KᵀQ here (MATH.md §5)."""
    b = checks.beta(value, name, repulsive=True)
    if b < 0:
        raise ValueError(f"`{name}` must be >= 0 for the R^d models, got {value!r}: β only scales A = KᵀQ there "
                         "(MATH.md §5), so β < 0 is β = |β| with Q replaced by −Q; repulsive attention on the sphere "
                         "(far tokens weigh more, MATH.md §13) is SelfAttention's.")
    return b

@dataclass(frozen=True, eq=False)
class EuclideanAttention(Head):
    """Common parts of the R^d models: Q, K, V (None = identity), A = KᵀQ, row-chunked softmax sums, and the noise
    strength D >= 0 (keyword-only; particles dX = Γ dt + √(2D) dB, densities ∂_t ρ + div(ρΓ) = DΔρ, docs/MATH.md §7)."""

    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None
    noise: float = dc_field(default=0.0, kw_only=True)

    min_dim = 1
    manifold = "euclidean"
    zonal = None

    def __post_init__(self):
        self._check_matrices()
        self._check_noise()

    def _refuse_scalar_query(self) -> None:
        """``TypeError`` for a bare number as Q in a model that also has ``beta``: ``Softmax(2.0)`` read as Q = [[2]]
        with β = 1, where ``SelfAttention(2.0)`` means β = 2; the ambiguity is refused, both readings spelled out."""
        if isinstance(self.Q, numbers.Number) or (isinstance(self.Q, np.ndarray) and self.Q.ndim == 0):
            name = type(self).__name__
            raise TypeError(f"{name}(Q, K, V, beta): Q is a matrix (d × d); for the inverse temperature write "
                            f"{name}(beta={float(np.real(self.Q))!r}), for a 1 × 1 Q write Q=[[{float(np.real(self.Q))!r}]]; "
                            f"got Q = {self.Q!r}.")

    # ------------------------------------------------------------------ bounds (:mod:`.bounds` derives them)
    def _support(self, radius) -> tuple[float, float, float, float, float]:
        """(R, ‖Q‖, ‖K‖, ‖V‖, ‖A‖) for a support radius R, which R^d needs."""
        if radius is None or not (np.isfinite(radius) and radius > 0):
            raise ValueError(f"`radius` (the support radius R of the measures in R^d) must be positive and finite, "
                             f"got {radius!r}.")
        return float(radius), norm2(self.Q), norm2(self.K), norm2(self.V), \
            float(np.linalg.norm(self.A(self.dim or 1), 2))

    def constants(self, radius: float | None = None) -> HeadConstants:
        """No bound derived (∞): subclasses state theirs."""
        self._support(radius)
        inf = float("inf")
        return HeadConstants(norm2(self.V), inf, inf, None, inf, inf)

    @staticmethod
    def sum_of_fields(heads, points, weights, queries, divergence: bool = False):
        """Σ_h Γ_h[μ] (and Σ_h div Γ_h[μ]): in R^d the heads' fields add as they are."""
        if not divergence:
            return sum(h.field(points, weights, queries) for h in heads)
        parts = [h.field_and_divergence(points, weights, queries) for h in heads]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)

    def speed_bound(self) -> float:
        raise TypeError(f"{type(self).__name__} has no speed bound for every measure: in R^d speeds grow with the "
                        "support; give a step.")

    def _softmax_field(self, points, weights, queries, scale):
        """Σ_j w_j e^{scale⟨Ax,y_j⟩} V y_j / Σ_j w_j e^{scale⟨Ax,y_j⟩} at the queries, in row chunks."""
        d = points.shape[-1]
        Vy = points @ self.matrices(d)[2].T
        Ax = scale * queries @ self.A(d).T
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d))
        for sl in row_chunks(queries.shape[-2], points.shape[-2]):
            out[..., sl, :] = self._softmax_average(Ax[..., sl, :] @ np.swapaxes(points, -1, -2), weights, Vy)
        return out

    def _softmax_field_and_divergence(self, points, weights, queries, scale, offsets=None):
        r"""Γ and div Γ for the softmax law π_x ∝ w_j e^{scale⟨Ax, y_j⟩ + offset_j} (MATH.md §6).

        DΓ = Cov_{π_x}(Vy, scale·Aᵀy) = scale·V C_x A, so
        div Γ = scale (E_π[⟨Aᵀy, Vy⟩] − ⟨Aᵀm, Vm⟩) with m = E_π[y]: besides the
        field's sums, one sum of the per-point constant ⟨Aᵀy, Vy⟩ = yᵀAVy and one of y.
        """
        d = points.shape[-1]
        A, V = self.A(d), self.matrices(d)[2]
        Vy = points @ V.T
        Ax = scale * queries @ A.T
        c = np.sum((points @ A) * Vy, axis=-1)  # ⟨Aᵀy, Vy⟩ = yᵀAVy
        cols = np.concatenate([Vy, points, c[..., None]], axis=-1)  # one product for the three averages
        batch = np.broadcast_shapes(queries.shape[:-2], points.shape[:-2])
        out = np.empty(batch + (queries.shape[-2], d))
        div = np.empty(batch + (queries.shape[-2],))
        for sl in row_chunks(queries.shape[-2], points.shape[-2]):
            logits = Ax[..., sl, :] @ np.swapaxes(points, -1, -2)
            if offsets is not None:
                logits += offsets[..., None, :]
            avg = self._softmax_average(logits, weights, cols)
            G, m, Ec = avg[..., :d], avg[..., d:2 * d], avg[..., 2 * d]
            out[..., sl, :] = G
            div[..., sl] = scale * (Ec - np.sum((m @ A) * G, axis=-1))
        return out, div

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

    ``beta`` (default 1) scales A; MATH.md absorbs it into A. Q, K, V are d × d matrices (None: the identity): a
    bare number as Q is refused (``TypeError``), since ``Softmax(2.0)`` would read Q = [[2]] with β = 1 where
    ``SelfAttention(2.0)`` means β = 2 — write ``Softmax(beta=2.0)`` or ``Softmax(Q=[[2.0]])``.
    """

    beta: float = 1.0

    kind = "softmax"
    compiled_rows = "softmax"

    def __post_init__(self):
        self._refuse_scalar_query()
        super().__post_init__()
        self._check_scalar("beta", _euclidean_beta)

    def gaussian_closure(self, mean, cov):
        """The tilt e^{β⟨Ax,y⟩} N(α, Σ) ∝ N(α + βΣAx, Σ): Γ(x) = V(α + βΣAx) (:mod:`meanfield.analysis.gaussian`)."""
        d = np.size(mean)
        V = self.matrices(d)[2]
        return self.beta * V @ cov @ self.A(d), V @ mean

    @property
    def tilt_matrix(self):
        """d ↦ βA: the kernel e^{β⟨Ax, y⟩} (the finite volumes' separable sums; :class:`~.base.Head`)."""
        return lambda d: self.beta * self.A(d)

    def field(self, points, weights, queries) -> np.ndarray:
        """Γ at ``queries`` (..., m, d) for μ = Σ w_j δ_{points_j}; no projection (R^d)."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        return self._softmax_field(points, weights, queries, self.beta)

    def field_and_divergence(self, points, weights, queries):
        """Γ and div Γ = β(E_π[⟨Aᵀy, Vy⟩] − ⟨Aᵀm, Vm⟩) at ``queries`` (MATH.md §6)."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        return self._softmax_field_and_divergence(points, weights, queries, self.beta)

    def average_and_jacobian(self, points, weights, queries):
        """Γ and DΓ = β V C_x A at ``queries`` (m, d), shape (m, d, d); unbatched (MATH.md §4)."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        d = points.shape[-1]
        return softmax_jacobian(self.A(d), self.matrices(d)[2], self.beta, points, weights, queries)

    def log_kernel_excess(self, points, weights, queries, radius):
        """log(sup_{|y| <= R} e^{β⟨Ax,y⟩}/Z_μ(x)) = βR|Ax| − log Z_μ(x) (:mod:`meanfield.models.bounds`)."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        return log_kernel_excess(self.A(points.shape[-1]), self.beta, radius, points, weights, queries)

    def constants(self, radius=None) -> HeadConstants:
        """The softmax row of :mod:`.bounds`: a = β‖A‖R², L_x = va, L_μ = v(1 + 2a)e^{2a}."""
        R, _, _, v, nA = self._support(radius)
        c = self.beta * nA
        a = c * R * R
        return HeadConstants(v, v * a, v * (1.0 + 2.0 * a) * exp_or_inf(2.0 * a), a, c * R, 2.0 * v * R * (c * R) ** 2)


@dataclass(frozen=True, eq=False)
class L2(EuclideanAttention):
    r"""L2 attention in R^d: Γ(x) = ∫ V y k dμ / ∫ k dμ with k = e^{−|Qx − Ky|²/(2τ)} (MATH.md §3, §5).

    τ = 1/2 gives the kernel e^{−|Qx−Ky|²} written in MATH.md §5; the Gaussian
    closure of §3 is stated for general τ.
    """

    tau: float = 1.0

    kind = "l2"
    compiled_rows = "l2"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "tau", checks.positive(self.tau, "tau"))

    def gaussian_closure(self, mean, cov):
        """Σ̃ = (Σ⁻¹ + KᵀK/τ)⁻¹, Γ(x) = VΣ̃(Σ⁻¹α + Ax/τ) (:mod:`meanfield.analysis.gaussian`)."""
        Q, K, V = self.matrices(np.size(mean))
        St = np.linalg.inv(np.linalg.inv(cov) + K.T @ K / self.tau)
        return V @ St @ (K.T @ Q) / self.tau, V @ St @ np.linalg.solve(cov, mean)

    @property
    def translation_kernel(self):
        """z ↦ e^{−|Qz|²/(2τ)} where Q = K (the kernel e^{−|Qx−Ky|²/(2τ)} depends on x − y only), else None
        (:class:`~.base.Head`)."""
        if not ((self.Q is None and self.K is None)
                or (self.Q is not None and self.K is not None and np.array_equal(self.Q, self.K))):
            return None

        def kernel(z):
            Qz = z @ self.matrices(z.shape[-1])[0].T
            return np.exp(-np.sum(Qz * Qz, axis=-1) / (2.0 * self.tau))

        return kernel

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

    def field_and_divergence(self, points, weights, queries):
        """Γ and div Γ: the logits are ⟨Ax, y⟩/τ − |Ky|²/(2τ) (up to |Qx|²), so the softmax formula with
        scale 1/τ and offsets −|Ky|²/(2τ) (MATH.md §6)."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        return self._softmax_field_and_divergence(points, weights, queries, 1.0 / self.tau, self._offsets(points))

    def _offsets(self, points):
        """−|Ky|²/(2τ): the logits of the L2 kernel are ⟨Ax, y⟩/τ plus these (the |Qx|² term cancels)."""
        K = self.matrices(points.shape[-1])[1]
        Ky = points @ K.T
        return -np.sum(Ky * Ky, axis=-1) / (2.0 * self.tau)

    def average_and_jacobian(self, points, weights, queries):
        """Γ and DΓ = V C_x A/τ (the |Qx|² term of the logits is constant in y), unbatched."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        d = points.shape[-1]
        return softmax_jacobian(self.A(d), self.matrices(d)[2], 1.0 / self.tau, points, weights, queries,
                                self._offsets(points))

    def log_kernel_excess(self, points, weights, queries, radius):
        """log(sup_{|y| <= R} k(x, y)/Z_μ(x)) <= R|Ax|/τ − log Z_μ(x) (logits ⟨Ax,y⟩/τ − |Ky|²/(2τ))."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        return log_kernel_excess(self.A(points.shape[-1]), 1.0 / self.tau, radius, points, weights, queries,
                                 self._offsets(points))

    def constants(self, radius=None) -> HeadConstants:
        """The L2 row of :mod:`.bounds`: a = ‖K‖(‖Q‖ + ‖K‖)R²/τ, L_x = v‖A‖R²/τ."""
        R, nq, nk, v, nA = self._support(radius)
        c = nA / self.tau
        a = nk * (nq + nk) * R * R / self.tau
        return HeadConstants(v, v * c * R * R, v * (1.0 + 2.0 * a) * exp_or_inf(2.0 * a), a,
                             nq * (nq + nk) * R / self.tau, 2.0 * v * R * (c * R) ** 2)


def sinkhorn_log_weights(weights) -> np.ndarray:
    """log w_j, with the log of the smallest positive normal double (≈ −708.4) for w_j = 0 (Sinkhorn's potentials stay
    finite on points without mass)."""
    return np.log(np.where(weights > 0, weights, np.finfo(float).tiny))


def sinkhorn_marginal_error(f, f_next, g) -> tuple[float, float]:
    r"""The row marginals' largest relative error max_i |e^{f_i − f'_i} − 1| after a g-update, and its
    round-off floor 4ε(max|f| + max|g|).

    Each potential is a log-sum-exp of S_ij + g_j + ℓ_j (or of f), rounded to
    about ε·max(|S|, |f|, |g|); where the potentials are large (|S| ~ 10³, a
    cloud far from the origin) this exceeds a tolerance of 1e-13, and the
    iteration would never stop. Both Sinkhorn iterations stop when the error is
    below ``max(tol, floor)``.
    """
    err = float(np.max(np.abs(np.expm1(f - f_next))))
    floor = 4.0 * np.finfo(float).eps * float(np.max(np.abs(f)) + np.max(np.abs(g)))
    return err, floor


def _log_sum_exp_rows(a, points, offsets) -> np.ndarray:
    """log Σ_j e^{⟨a_i, y_j⟩ + o_j} for each row a_i (shape (..., m)), y = ``points`` (..., n, d), o = ``offsets``
    (..., n): max-shifted per row, over blocks of rows of at most :data:`~.base.CHUNK` entries (never the m × n
    matrix at once)."""
    batch = np.broadcast_shapes(a.shape[:-2], points.shape[:-2], offsets.shape[:-1])
    out = np.empty(batch + (a.shape[-2],))
    yt = np.swapaxes(points, -1, -2)
    for sl in row_chunks(a.shape[-2], points.shape[-2] * int(np.prod(batch))):  # a block of every system's rows
        s = a[..., sl, :] @ yt + offsets[..., None, :]  # not in place: the offsets may carry a batch the points lack
        top = np.max(s, axis=-1, keepdims=True)
        s -= top
        np.exp(s, out=s)
        out[..., sl] = np.log(np.sum(s, axis=-1)) + top[..., 0]
    return out


@dataclass(frozen=True, eq=False)
class Sinkhorn(EuclideanAttention):
    r"""Sinkhorn attention in R^d (CACP; MATH.md §3, §5).

    k^∞ is the limit of alternately normalising k^0(x, y) = e^{−|Qx − Ky|²/(2τ)}
    over y and over x against μ (Sinkhorn–Knopp), Γ(x) = ∫ V y k^∞(x, y) dμ(y).
    Since k^0 = a(x) e^{⟨Ax, y⟩/τ} b(y), the limit is e^{⟨Ax,y⟩/τ + f(x) + g(y)}
    with the symmetric entropic coupling of μ with itself, cost −⟨Ax, y⟩/τ:
    g is found in the log domain on the support of μ until both marginals
    are met to ``tol`` (max relative error; or to the round-off floor of the
    potentials, 4ε(max|f| + max|g|), where that is larger), and at any query x the field is
    the softmax of ⟨Ax, y_j⟩/τ + g_j over μ. ``RuntimeError`` if ``max_iter``
    iterations do not reach ``tol``.
    """

    tau: float = 1.0
    tol: float = 1e-13
    max_iter: int = 100_000

    kind = "sinkhorn"
    compiled_rows = "sinkhorn"

    def gaussian_closure(self, mean, cov):
        """Cost −⟨Ax, y⟩/τ: Ã = Σ^{1/2}(A/τ)Σ^{1/2}, C̃ = 2Ã(I + (I + 4ÃᵀÃ)^{1/2})⁻¹, C = Σ^{1/2}C̃Σ^{1/2},
        Γ(x) = V(α + CΣ⁻¹(x − α)) (:mod:`meanfield.analysis.gaussian`)."""
        from scipy.linalg import sqrtm

        d = np.size(mean)
        Q, K, V = self.matrices(d)
        R = np.real(sqrtm(cov))
        At = R @ (K.T @ Q / self.tau) @ R
        Ct = 2.0 * At @ np.linalg.inv(np.eye(d) + np.real(sqrtm(np.eye(d) + 4.0 * At.T @ At)))
        G = R @ Ct @ R @ np.linalg.inv(cov)
        return V @ G, V @ (mean - G @ mean)

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "tau", checks.positive(self.tau, "tau"))
        object.__setattr__(self, "tol", checks.positive(self.tol, "tol"))
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"`max_iter` must be a positive integer, got {self.max_iter!r}.")

    def potentials(self, points, weights) -> np.ndarray:
        r"""g (shape (..., n)): log-scalings with Σ_j w_j e^{S_ij + f_i + g_j} = 1 for both marginals.

        Sinkhorn–Knopp in the log domain from f = g = 0, S_ij = ⟨Ax_i, x_j⟩/τ,
        ℓ_j = log w_j (log of the smallest normal double for w_j = 0):

            f_i ← −log Σ_j e^{S_ij + g_j + ℓ_j},   g_j ← −log Σ_i e^{S_ij + f_i + ℓ_i}.

        After a g-update the column marginals hold exactly and the row marginals
        are e^{f_i − f'_i}, f' the next f-update; the iteration stops when
        max_i |e^{f_i − f'_i} − 1| <= ``tol``, or below its round-off floor
        4ε(max|f| + max|g|) where that is larger (:func:`sinkhorn_marginal_error`);
        that f' starts the next iteration, so each iteration costs two
        log-sum-exps. Each log-sum-exp forms S by blocks of rows (:func:`~.base.row_chunks`: at most
        :data:`~.base.CHUNK` entries at once), so the memory is O(n) beside the points, not n × n: at n = 9216
        (a 96 × 96 grid's nodes) the dense S and its temporaries held 5.7 GB. The compiled twin is
        :func:`meanfield.kernels.euclidean.sinkhorn_potentials`.
        """
        d = points.shape[-1]
        A = self.A(d) / self.tau
        rows, cols = points @ A.T, points @ A  # S_ij = ⟨rows_i, x_j⟩ = ⟨x_i, cols_j⟩: the rows of S and of Sᵀ
        logw = sinkhorn_log_weights(weights)
        f = -_log_sum_exp_rows(rows, points, logw)  # g = 0
        for _ in range(self.max_iter):
            g = -_log_sum_exp_rows(cols, points, f + logw)
            f_next = -_log_sum_exp_rows(rows, points, g + logw)
            err, floor = sinkhorn_marginal_error(f, f_next, g)
            if err <= max(self.tol, floor):
                return g
            f = f_next
        raise RuntimeError(f"Sinkhorn did not reach tol = {self.tol:g} in {self.max_iter} iterations.")

    def field(self, points, weights, queries) -> np.ndarray:
        points, weights, queries = check_points(points, weights, queries, self.dim)
        g = self.potentials(points, weights)
        w_eff = weights * np.exp(g - np.max(g, axis=-1, keepdims=True))
        return self._softmax_field(points, w_eff, queries, 1.0 / self.tau)

    def field_and_divergence(self, points, weights, queries):
        """Γ and div Γ at fixed μ: the softmax formula with scale 1/τ and the potentials g as offsets (MATH.md §6)."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        g = self.potentials(points, weights)
        w_eff = weights * np.exp(g - np.max(g, axis=-1, keepdims=True))
        return self._softmax_field_and_divergence(points, w_eff, queries, 1.0 / self.tau)

    def average_and_jacobian(self, points, weights, queries):
        """Γ and DΓ at fixed μ (the potentials g held fixed): V C_x A/τ under the softmax with offsets g, unbatched."""
        points, weights, queries = check_points(points, weights, queries, self.dim)
        g = self.potentials(points, weights)
        d = points.shape[-1]
        return softmax_jacobian(self.A(d), self.matrices(d)[2], 1.0 / self.tau, points, weights, queries, g)

    def constants(self, radius=None) -> HeadConstants:
        """The Sinkhorn row of :mod:`.bounds`: L_x = v‖A‖R²/τ; L_μ not derived (∞)."""
        R, nq, nk, v, nA = self._support(radius)
        c = nA / self.tau
        return HeadConstants(v, v * c * R * R, float("inf"), None, nq * (nq + nk) * R / self.tau,
                             2.0 * v * R * (c * R) ** 2)


@dataclass(frozen=True, eq=False)
class Sigmoid(EuclideanAttention):
    r"""Sigmoid attention in R^d: Γ(x) = ∫ V y σ(⟨Ax, y⟩ + b) dμ(y), no normalisation (MATH.md §5)."""

    b: float = 0.0

    kind = "sigmoid"
    compiled_rows = "sigmoid"
    gaussian_refusal = ("no Gaussian closure for sigmoid attention: its weight σ(⟨Ax, y⟩ + b) is not an exponential "
                        "tilt e^{⟨Ax, y⟩ + const}, so the field ∫ V y σ(⟨Ax, y⟩ + b) dN(m, Σ)(y) is not affine in x and "
                        "N(m, Σ) does not stay Gaussian (docs/MATH.md §7); the closures are those of softmax, L2 and "
                        "Sinkhorn attention and their multi-head sums. Solve it on a grid or with particles.")

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

    def field_and_divergence(self, points, weights, queries):
        """Γ and div Γ = Σ_j w_j σ'(⟨Ax, y_j⟩ + b)⟨Aᵀy_j, Vy_j⟩, σ' = σ(1 − σ) (MATH.md §6)."""
        from scipy.special import expit

        points, weights, queries = check_points(points, weights, queries, self.dim)
        d = points.shape[-1]
        A, V = self.A(d), self.matrices(d)[2]
        Vy = points @ V.T
        c = np.sum((points @ A) * Vy, axis=-1)
        Ax = queries @ A.T
        batch = np.broadcast_shapes(queries.shape[:-2], points.shape[:-2])
        out = np.empty(batch + (queries.shape[-2], d))
        div = np.empty(batch + (queries.shape[-2],))
        for sl in row_chunks(queries.shape[-2], points.shape[-2]):
            sig = expit(Ax[..., sl, :] @ np.swapaxes(points, -1, -2) + self.b)
            out[..., sl, :] = (sig * weights[..., None, :]) @ Vy
            div[..., sl] = np.sum(sig * (1.0 - sig) * (weights * c)[..., None, :], axis=-1)
        return out, div

    def average_and_jacobian(self, points, weights, queries):
        """Γ and DΓ = V (Σ_j w_j σ'(⟨Ax,y_j⟩ + b) y_j y_jᵀ) A at ``queries``, shape (m, d, d); unbatched."""
        from scipy.special import expit

        points, weights, queries = check_points(points, weights, queries, self.dim)
        d = points.shape[-1]
        A, V = self.A(d), self.matrices(d)[2]
        n, m = points.shape[0], queries.shape[0]
        outer = (points[:, :, None] * points[:, None, :]).reshape(n, d * d)
        G = np.empty((m, d))
        D = np.empty((m, d, d))
        for sl in row_chunks(m, n):
            sig = expit((queries[sl] @ A.T) @ points.T + self.b)
            G[sl] = (sig * weights) @ (points @ V.T)
            D[sl] = V @ ((sig * (1.0 - sig) * weights) @ outer).reshape(-1, d, d) @ A
        return G, D

    def constants(self, radius=None) -> HeadConstants:
        """The sigmoid row of :mod:`.bounds`: σ' <= 1/4, L_x = v‖A‖R²/4, L_μ = v(1 + ‖A‖R²/4)."""
        R, _, _, v, nA = self._support(radius)
        return HeadConstants(v, 0.25 * v * nA * R * R, v * (1.0 + 0.25 * nA * R * R), None, 0.0,
                             SIGMOID_CURVATURE * v * R * (nA * R) ** 2)


@dataclass(frozen=True, eq=False)
class Masked(EuclideanAttention):
    r"""Causal (masked) softmax attention on [0, 1] × R^d (CACP; MATH.md §5).

    Points are (τ, y) ∈ R^{1+d}, the first coordinate the position in the
    sequence; Γ(s, x) = (0, ∫ V y e^{β⟨Ax,y⟩} 1_{τ<=s} dμ̄ / ∫ e^{β⟨Ax,y⟩} 1_{τ<=s} dμ̄).
    Q, K, V act on the R^d part. A query with no point at τ <= s gets zero.
    """

    beta: float = 1.0

    kind = "masked"
    compiled_rows = "masked"
    gaussian_refusal = ("no Gaussian closure for masked (causal) attention: the mask 1_{τ <= s} couples the positions, "
                        "so the field at (s, x) averages over a part of the law that depends on s and is not affine in "
                        "(s, x); a Gaussian in the tokens does not stay Gaussian (docs/MATH.md §7); the closures are "
                        "those of softmax, L2 and Sinkhorn attention and their multi-head sums. Solve it on a grid or "
                        "with particles.")

    def __post_init__(self):
        self._refuse_scalar_query()
        super().__post_init__()
        self._check_scalar("beta", _euclidean_beta)

    @property
    def dim(self) -> int | None:
        d = super().dim
        return None if d is None else d + 1

    def field(self, points, weights, queries) -> np.ndarray:
        return self._masked(points, weights, queries, False)[0]

    def field_and_divergence(self, points, weights, queries):
        """Γ and its divergence in (s, x): the s-component is 0, the x-part the softmax formula over the
        points with τ <= s, β(E_π[⟨Aᵀy, Vy⟩] − ⟨Aᵀm, Vm⟩) (0 where no point is allowed; MATH.md §6)."""
        return self._masked(points, weights, queries, True)

    def _masked(self, points, weights, queries, divergence: bool):
        points, weights, queries = check_points(points, weights, queries, self.dim)
        d = points.shape[-1] - 1
        tau, y = points[..., 0], points[..., 1:]
        s, x = queries[..., 0], queries[..., 1:]
        A, V = self.A(d), self.matrices(d)[2]
        Vy = y @ V.T
        Ax = self.beta * x @ A.T
        batch = np.broadcast_shapes(queries.shape[:-2], points.shape[:-2])
        out = np.zeros(batch + (queries.shape[-2], d + 1))
        div = np.zeros(batch + (queries.shape[-2],)) if divergence else None
        if divergence:
            cols = np.concatenate([y, np.sum((y @ A) * Vy, axis=-1)[..., None]], axis=-1)
        for sl in row_chunks(queries.shape[-2], points.shape[-2]):
            logits = Ax[..., sl, :] @ np.swapaxes(y, -1, -2)
            allowed = tau[..., None, :] <= s[..., sl, None]
            logits = np.where(allowed, logits, -np.inf)
            smax = np.max(logits, axis=-1, keepdims=True)
            smax = np.where(np.isfinite(smax), smax, 0.0)
            e = np.exp(logits - smax) * weights[..., None, :]
            Z = np.sum(e, axis=-1, keepdims=True)
            safe = np.where(Z > 0, Z, 1.0)
            G = np.where(Z > 0, (e @ Vy) / safe, 0.0)
            out[..., sl, 1:] = G
            if divergence:
                avg = np.where(Z > 0, (e @ cols) / safe, 0.0)
                m, Ec = avg[..., :d], avg[..., d]
                div[..., sl] = self.beta * (Ec - np.sum((m @ A) * G, axis=-1))
        return out, div


EUCLIDEAN_MODELS = (Softmax, L2, Sinkhorn, Sigmoid, Masked)

register(ModelKind("softmax", Softmax, "euclidean", (
    Parameter("beta", "float", 1.0, "inverse temperature β (scales A = KᵀQ)", minimum=0.0), NOISE),
    doc="softmax attention in R^d (CACP)", words="softmax attention"))
register(ModelKind("l2", L2, "euclidean", (_TAU, NOISE), doc="L2 attention, kernel e^{−|Qx−Ky|²/(2τ)}",
                   words="L2 attention"))
register(ModelKind("sinkhorn", Sinkhorn, "euclidean", (_TAU, NOISE), doc="Sinkhorn attention (doubly stochastic kernel)",
                   words="Sinkhorn attention"))
register(ModelKind("sigmoid", Sigmoid, "euclidean", (Parameter("b", "float", 0.0, "bias b"), NOISE),
                   doc="sigmoid attention, no normalisation", words="sigmoid attention"))
register(ModelKind("masked", Masked, "euclidean", (
    Parameter("beta", "float", 1.0, "inverse temperature β", minimum=0.0), NOISE),
    doc="causal softmax attention on [0, 1] × R^d", study=False))
