r"""Attention models: the velocity field X[μ] shared by particles and grids.

A model is an immutable object with one job: given a weighted point set
(an empirical measure, or grid nodes with density × quadrature weight) it
evaluates the velocity field at arbitrary query points,

.. math::

    X[\mu](x) = P_x^\perp\Big(\frac{1}{Z_\mu(x)}\int e^{\beta\langle Qx, Ky\rangle}\,Vy\,d\mu(y)\Big),
    \qquad Z_\mu(x) = \int e^{\beta\langle Qx, Ky\rangle}\,d\mu(y)\ \ (\text{SA}),
    \quad Z_\mu \equiv 1\ \ (\text{USA}),

(GLPR (2.3), (USA) and (3.4); MATH.md §1–2). For an empirical measure with
weights 1/n this is exactly the particle system of GLPR; the USA convention
``Z ≡ 1`` with weights 1/n is the paper's ``Z_i = n``.

This module is the single definition of the dynamics; the fast spectral paths
of the grids are optimisations of it and are tested against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Sequence

import numpy as np

from .geometry import check_on_sphere, project_tangent

__all__ = ["SelfAttention", "MultiHeadAttention", "Softmax", "L2", "Sinkhorn", "Sigmoid", "Masked", "heads",
           "head_norms", "rate_scale"]

#: Largest exponent whose exponential is finite in float64 (log of the largest double).
_EXP_MAX = float(np.log(np.finfo(float).max))

#: Work arrays of the pairwise sums are chunked to at most this many entries.
_CHUNK = 1 << 21


def _check_beta(beta) -> float:
    try:
        b = float(beta)
    except (TypeError, ValueError):
        raise TypeError(f"`beta` must be a real number, got {beta!r}.") from None
    if not np.isfinite(b) or b < 0:
        raise ValueError(f"`beta` must be finite and >= 0, got {beta!r}.")
    return b


def _check_matrix(M, name: str, min_dim: int = 2) -> np.ndarray | None:
    if M is None:
        return None
    A = np.array(M, dtype=float, ndmin=2)  # a private copy, made read-only below
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < min_dim:
        raise ValueError(f"`{name}` must be a square d×d matrix with d >= {min_dim}, got shape {np.shape(M)}.")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"`{name}` contains non-finite entries.")
    A.setflags(write=False)
    return A


def _identity_multiple(M: np.ndarray | None) -> float | None:
    """c if ``M`` is c·I (``None`` counts as I), else None."""
    if M is None:
        return 1.0
    c = M[0, 0]
    return float(c) if np.array_equal(M, c * np.eye(M.shape[0])) else None


def _check_measure(points, weights, queries):
    points = check_on_sphere(points, "points")
    queries = check_on_sphere(queries, "queries")
    if points.ndim < 2 or queries.ndim < 2:
        raise ValueError(
            f"`points` and `queries` must have shape (..., n, d); got {points.shape} and {queries.shape}."
        )
    if points.shape[-1] != queries.shape[-1]:
        raise ValueError(
            f"`points` and `queries` live in different dimensions: d = {points.shape[-1]} and {queries.shape[-1]}."
        )
    return points, _check_weights(weights, points), queries


def _check_weights(weights, points) -> np.ndarray:
    weights = np.asarray(weights, dtype=float)
    if weights.shape != points.shape[:-1]:
        raise ValueError(f"`weights` must have shape {points.shape[:-1]} (one per point), got {weights.shape}.")
    if not np.all(np.isfinite(weights)):
        raise ValueError("`weights` contains non-finite values (NaN or inf).")
    return weights


def check_usa_beta(beta: float, normalized: bool, where: str) -> None:
    """``OverflowError`` for USA where the unscaled kernel e^β overflows float64 (MATH.md §2.1)."""
    if not normalized and beta > _EXP_MAX:
        raise OverflowError(
            f"USA on {where} with β = {beta:g}: the unscaled kernel e^(β⟨x,y⟩) overflows float64 for β > "
            f"{_EXP_MAX:.1f} (MATH.md §2.1 keeps it unscaled); use SA or a smaller β."
        )


@dataclass(frozen=True, eq=False)
class SelfAttention:
    r"""Self-attention dynamics on the sphere S^{d-1} (GLPR (2.3) and (USA)).

    Parameters
    ----------
    beta : float
        Inverse temperature β >= 0.
    Q, K, V : array_like, shape (d, d), optional
        Query, key and value matrices; ``None`` means the identity (of any d).
    normalized : bool, default True
        ``True`` for SA (softmax normalisation by Z_μ(x)), ``False`` for USA
        (Z ≡ 1, i.e. Z_i = n for n particles of weight 1/n).

    Notes
    -----
    With Q = K = I and V = ±I the field is a gradient (MATH.md §2.1):
    USA: X = (1/β)∇(K_β*μ); SA: X = (1/β)∇ log(K_β*μ), with
    K_β*μ(x) = ∫ e^{β⟨x,y⟩} dμ(y). The interaction energy
    E_β(μ) = (1/2β)∬ e^{β⟨x,y⟩} dμ dμ is then non-decreasing for V = I
    and non-increasing for V = -I (GLPR Lemma 3.7).
    """

    beta: float
    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None
    normalized: bool = True

    domain = "sphere"  # where the tokens live (a class constant, not a field)

    def __post_init__(self):
        object.__setattr__(self, "beta", _check_beta(self.beta))
        dims = set()
        for name in ("Q", "K", "V"):
            M = _check_matrix(getattr(self, name), name)
            object.__setattr__(self, name, M)
            if M is not None:
                dims.add(M.shape[0])
        if len(dims) > 1:
            raise ValueError(f"`Q`, `K`, `V` must share one dimension d, got sizes {sorted(dims)}.")
        if not isinstance(self.normalized, (bool, np.bool_)):
            raise TypeError(f"`normalized` must be a bool, got {self.normalized!r}.")

    # ------------------------------------------------------------------ info
    @property
    def dim(self) -> int | None:
        """The ambient dimension d fixed by the matrices, or None if all are identities."""
        for M in (self.Q, self.K, self.V):
            if M is not None:
                return M.shape[0]
        return None

    @property
    def zonal(self) -> tuple[float, float] | None:
        """``(β_eff, c)`` when Q = qI, K = kI, V = cI with qk >= 0, else None.

        Then ⟨Qx, Ky⟩ = qk⟨x, y⟩, the kernel is zonal with inverse temperature
        β_eff = β q k, and the field is c times the Q = K = V = I field with
        β_eff. This is when the fast spectral paths apply.
        """
        q, k, c = (_identity_multiple(M) for M in (self.Q, self.K, self.V))
        if q is None or k is None or c is None or q * k < 0:
            return None
        return self.beta * q * k, c

    def __repr__(self) -> str:
        mats = ", ".join(
            f"{n}={'I' if M is None else np.array2string(M, precision=3)}"
            for n, M in (("Q", self.Q), ("K", self.K), ("V", self.V))
        )
        kind = "SA" if self.normalized else "USA"
        return f"SelfAttention({kind}, beta={self.beta:g}, {mats})"

    # ------------------------------------------------------------------ field
    def _check_dim(self, d: int) -> None:
        if self.dim is not None and self.dim != d:
            raise ValueError(f"the model's matrices are {self.dim}×{self.dim} but the points live in R^{d}.")

    def _transformed(self, points, queries):
        Kx = points if self.K is None else points @ self.K.T
        Qx = queries if self.Q is None else queries @ self.Q.T
        Vx = points if self.V is None else points @ self.V.T
        return Qx, Kx, Vx

    def _unprojected(self, points, weights, queries) -> np.ndarray:
        """∫ e^{β⟨Qx,Ky⟩} V y dμ(y) / Z(x) before the tangent projection, shape (..., m, d)."""
        Qx, Kx, Vx = self._transformed(points, queries)
        wV = weights[..., :, None] * Vx
        m, n = queries.shape[-2], points.shape[-2]
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (m, Vx.shape[-1]))
        step = max(1, _CHUNK // max(n, 1))
        for i0 in range(0, m, step):
            sl = slice(i0, min(m, i0 + step))
            s = self.beta * (Qx[..., sl, :] @ np.swapaxes(Kx, -1, -2))  # (..., mc, n)
            smax = np.max(s, axis=-1, keepdims=True)
            e = np.exp(s - smax)
            num = e @ wV
            if self.normalized:
                Z = e @ weights[..., :, None]
                if np.any(Z <= 0):
                    raise ValueError(
                        "the softmax normaliser Z_μ(x) is not positive: the weights must "
                        "describe a non-negative measure of positive mass."
                    )
                out[..., sl, :] = num / Z
            else:
                if np.max(smax) > _EXP_MAX:
                    raise OverflowError(
                        f"USA field overflows float64: β⟨Qx,Ky⟩ reaches {np.max(smax):.1f} > "
                        f"{_EXP_MAX:.1f}; USA keeps the unscaled kernel e^(β⟨Qx,Ky⟩) (MATH.md §2.1), "
                        "so use a smaller β or the normalised model (SA)."
                    )
                out[..., sl, :] = num * np.exp(smax)
        return out

    def field(self, points, weights, queries) -> np.ndarray:
        r"""Velocity field X[μ] at ``queries`` for μ = Σ_j w_j δ_{points_j}.

        Parameters
        ----------
        points : array_like, shape (..., n, d)
            Unit vectors carrying the measure.
        weights : array_like, shape (..., n)
            Their weights (1/n for particles; density × quadrature weight for grids).
        queries : array_like, shape (..., m, d)
            Unit vectors where the field is evaluated.

        Returns
        -------
        ndarray, shape (..., m, d)
            Tangent vectors X[μ](queries) (MATH.md §2). For SA the exponents are
            shifted by their maximum, so any β is safe; for USA an
            ``OverflowError`` is raised where e^{β⟨Qx,Ky⟩} overflows.
        """
        points, weights, queries = _check_measure(points, weights, queries)
        self._check_dim(points.shape[-1])
        return project_tangent(queries, self._unprojected(points, weights, queries))

    # ------------------------------------------------------------------ energy
    def _energy_beta(self) -> float:
        z = self.zonal
        if z is None:
            raise ValueError(
                "the interaction energy E_β is defined here for zonal kernels only "
                f"(Q = qI, K = kI with qk >= 0); this model is {self!r}."
            )
        return z[0]

    def scaled_energy(self, points, weights) -> float:
        r"""e^{-β} E_β(μ), finite for every β (see :meth:`energy`)."""
        points = check_on_sphere(points, "points")
        weights = np.asarray(weights, dtype=float)
        if weights.shape != points.shape[:-1] or points.ndim != 2:
            raise ValueError(
                f"`points` must have shape (n, d) and `weights` shape (n,), got {points.shape} and {weights.shape}."
            )
        self._check_dim(points.shape[-1])
        beta = self._energy_beta()
        if beta == 0.0:
            m = weights @ points
            return 0.5 * float(m @ m)
        G = points @ points.T
        return float(weights @ np.exp(beta * (G - 1.0)) @ weights) / (2.0 * beta)

    def energy(self, points, weights) -> float:
        r"""Interaction energy E_β(μ) = (1/2β) ∬ e^{β⟨x,y⟩} dμ(x) dμ(y) (GLPR §3.2).

        Defined for zonal kernels (Q = qI, K = kI, β_eff = βqk; V plays no role).
        At β = 0 this returns ½|∫x dμ|², the limit of E_β − μ(S)²/(2β), which is
        the Lyapunov function of the β = 0 dynamics. ``OverflowError`` where
        e^β overflows (β > 709); use :meth:`scaled_energy` there.
        """
        s = self.scaled_energy(points, weights)
        beta = self._energy_beta()
        if beta > _EXP_MAX:
            raise OverflowError(f"E_β overflows float64 for β = {beta:g}; use `scaled_energy`.")
        return s * np.exp(beta)


@dataclass(frozen=True, eq=False)
class MultiHeadAttention:
    """Multi-head attention: the sum over heads of their fields (GLPR (2.7); CACP for R^d).

    Parameters
    ----------
    heads : sequence of SelfAttention, or of R^d models (Softmax, L2, ...)
        At least one head, all on the sphere or all in R^d; each carries its
        own parameters.
    """

    heads: tuple[SelfAttention, ...] = dc_field(default_factory=tuple)

    def __post_init__(self):
        heads = tuple(self.heads) if isinstance(self.heads, Sequence) else self.heads
        if not isinstance(heads, tuple) or len(heads) == 0:
            raise ValueError(f"`heads` must be a non-empty sequence of SelfAttention, got {self.heads!r}.")
        for i, h in enumerate(heads):
            if not isinstance(h, (SelfAttention, _EuclideanAttention)):
                raise TypeError(f"`heads[{i}]` must be an attention model, got {type(h).__name__}.")
        if len({isinstance(h, SelfAttention) for h in heads}) > 1:
            raise ValueError("`heads` mixes sphere (SelfAttention) and R^d heads.")
        dims = {h.dim for h in heads if h.dim is not None}
        if len(dims) > 1:
            raise ValueError(f"the heads live in different dimensions: {sorted(dims)}.")
        object.__setattr__(self, "heads", heads)

    @property
    def dim(self) -> int | None:
        for h in self.heads:
            if h.dim is not None:
                return h.dim
        return None

    @property
    def zonal(self) -> None:
        """Multi-head models always use the generic (quadrature) path."""
        return None

    @property
    def domain(self) -> str:
        return "sphere" if isinstance(self.heads[0], SelfAttention) else "euclidean"

    def field(self, points, weights, queries) -> np.ndarray:
        """Σ_h X_h[μ](queries), shape (..., m, d); see :meth:`SelfAttention.field`."""
        if self.domain == "euclidean":
            return sum(h.field(points, weights, queries) for h in self.heads)
        points, weights, queries = _check_measure(points, weights, queries)
        for h in self.heads:
            h._check_dim(points.shape[-1])
        total = sum(h._unprojected(points, weights, queries) for h in self.heads)
        return project_tangent(queries, total)


def heads(model) -> tuple:
    """The heads of a model: its own tuple for multi-head, ``(model,)`` for one head."""
    if isinstance(model, MultiHeadAttention):
        return model.heads
    if isinstance(model, (SelfAttention, _EuclideanAttention)):
        return (model,)
    raise TypeError(f"`model` must be an attention model from meanfield.models, got {type(model).__name__}.")


def head_norms(head: SelfAttention) -> tuple[float, float]:
    """(a, v) = (β‖Q‖‖K‖, ‖V‖), operator 2-norms: |β⟨Qx, Ky⟩| <= a and |Vy| <= v on the sphere."""
    nq, nk, nv = (1.0 if M is None else float(np.linalg.norm(M, 2)) for M in (head.Q, head.K, head.V))
    return head.beta * nq * nk, nv


def rate_scale(model) -> float:
    """A bound on the strain |∂X| of the field for any probability measure.

    Per head ‖V‖(1 + β‖Q‖‖K‖), times e^{β‖Q‖‖K‖} for USA, summed over heads:
    the Lipschitz constant in x of MATH.md §4 up to an O(1) factor. The
    solvers scale their default time steps by its inverse. ``inf`` where
    the USA factor overflows float64.
    """
    total = 0.0
    for h in heads(model):
        b, nv = head_norms(h)
        if h.normalized:
            total += nv * (1.0 + b)
        elif b + np.log1p(b) + np.log(max(nv, 1e-300)) > _EXP_MAX:
            return float("inf")
        else:
            total += nv * (1.0 + b) * np.exp(b)
    return total


# ====================================================================== R^d (CACP, MATH.md §5)
def _positive_param(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a real number, got {value!r}.") from None
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"`{name}` must be positive and finite, got {value!r}.")
    return v


def _rd_check(points, weights, queries, d_model):
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
    return points, _check_weights(weights, points), queries


@dataclass(frozen=True, eq=False)
class _EuclideanAttention:
    """Common parts of the R^d models: Q, K, V (None = identity), A = KᵀQ, chunked pairwise sums."""

    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None

    def __post_init__(self):
        dims = set()
        for name in ("Q", "K", "V"):
            M = _check_matrix(getattr(self, name), name, min_dim=1)
            object.__setattr__(self, name, M)
            if M is not None:
                dims.add(M.shape[0])
        if len(dims) > 1:
            raise ValueError(f"`Q`, `K`, `V` must share one dimension d, got sizes {sorted(dims)}.")

    domain = "euclidean"
    zonal = None

    @property
    def dim(self) -> int | None:
        for M in (self.Q, self.K, self.V):
            if M is not None:
                return M.shape[0]
        return None

    def _mat(self, M, d):
        return np.eye(d) if M is None else M

    def A(self, d: int) -> np.ndarray:
        """A = KᵀQ, so that ⟨Qx, Ky⟩ = ⟨Ax, y⟩."""
        return self._mat(self.K, d).T @ self._mat(self.Q, d)

    def _rows(self, queries, n):
        m = queries.shape[-2]
        step = max(1, _CHUNK // max(n, 1))
        return [slice(i, min(m, i + step)) for i in range(0, m, step)]

    def _softmax_field(self, points, weights, queries, scale):
        """Σ_j w_j e^{scale⟨Ax,y_j⟩} V y_j / Σ_j w_j e^{scale⟨Ax,y_j⟩} at the queries, in row chunks."""
        d = points.shape[-1]
        Vy = points @ self._mat(self.V, d).T
        Ax = scale * queries @ self.A(d).T
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d))
        for sl in self._rows(queries, points.shape[-2]):
            out[..., sl, :] = self._softmax_average(Ax[..., sl, :] @ np.swapaxes(points, -1, -2), weights, Vy)
        return out

    def _softmax_average(self, logits, weights, Vy):
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
class Softmax(_EuclideanAttention):
    r"""Softmax attention in R^d (CACP; MATH.md §5).

    Γ(x) = ∫ V y e^{β⟨Ax, y⟩} dμ(y) / ∫ e^{β⟨Ax, y⟩} dμ(y),  A = KᵀQ.

    ``beta`` (default 1) scales A; MATH.md absorbs it into A.
    """

    beta: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "beta", _check_beta(self.beta))

    def field(self, points, weights, queries) -> np.ndarray:
        """Γ at ``queries`` (..., m, d) for μ = Σ w_j δ_{points_j}; no projection (R^d)."""
        points, weights, queries = _rd_check(points, weights, queries, self.dim)
        return self._softmax_field(points, weights, queries, self.beta)


@dataclass(frozen=True, eq=False)
class L2(_EuclideanAttention):
    r"""L2 attention in R^d: Γ(x) = ∫ V y k dμ / ∫ k dμ with k = e^{−|Qx − Ky|²/(2τ)} (MATH.md §3, §5).

    τ = 1/2 gives the kernel e^{−|Qx−Ky|²} written in MATH.md §5; the Gaussian
    closure of §3 is stated for general τ.
    """

    tau: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "tau", _positive_param(self.tau, "tau"))

    def field(self, points, weights, queries) -> np.ndarray:
        points, weights, queries = _rd_check(points, weights, queries, self.dim)
        d = points.shape[-1]
        Qx = queries @ self._mat(self.Q, d).T
        Ky = points @ self._mat(self.K, d).T
        Vy = points @ self._mat(self.V, d).T
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d))
        Ky2 = np.sum(Ky * Ky, axis=-1)
        for sl in self._rows(queries, points.shape[-2]):
            q = Qx[..., sl, :]
            # −|q − k|²/(2τ) = (2⟨q,k⟩ − |k|² − |q|²)/(2τ); |q|² cancels in the normalised average
            logits = (2.0 * q @ np.swapaxes(Ky, -1, -2) - Ky2[..., None, :]) / (2.0 * self.tau)
            out[..., sl, :] = self._softmax_average(logits, weights, Vy)
        return out


@dataclass(frozen=True, eq=False)
class Sinkhorn(_EuclideanAttention):
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

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "tau", _positive_param(self.tau, "tau"))
        object.__setattr__(self, "tol", _positive_param(self.tol, "tol"))
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
        points, weights, queries = _rd_check(points, weights, queries, self.dim)
        g = self.potentials(points, weights)
        w_eff = weights * np.exp(g - np.max(g, axis=-1, keepdims=True))
        return self._softmax_field(points, w_eff, queries, 1.0 / self.tau)


@dataclass(frozen=True, eq=False)
class Sigmoid(_EuclideanAttention):
    r"""Sigmoid attention in R^d: Γ(x) = ∫ V y σ(⟨Ax, y⟩ + b) dμ(y), no normalisation (MATH.md §5)."""

    b: float = 0.0

    def field(self, points, weights, queries) -> np.ndarray:
        from scipy.special import expit

        points, weights, queries = _rd_check(points, weights, queries, self.dim)
        d = points.shape[-1]
        Vy = points @ self._mat(self.V, d).T
        Ax = queries @ self.A(d).T
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d))
        for sl in self._rows(queries, points.shape[-2]):
            s = expit(Ax[..., sl, :] @ np.swapaxes(points, -1, -2) + self.b) * weights[..., None, :]
            out[..., sl, :] = s @ Vy
        return out


@dataclass(frozen=True, eq=False)
class Masked(_EuclideanAttention):
    r"""Causal (masked) softmax attention on [0, 1] × R^d (CACP; MATH.md §5).

    Points are (τ, y) ∈ R^{1+d}, the first coordinate the position in the
    sequence; Γ(s, x) = (0, ∫ V y e^{β⟨Ax,y⟩} 1_{τ<=s} dμ̄ / ∫ e^{β⟨Ax,y⟩} 1_{τ<=s} dμ̄).
    Q, K, V act on the R^d part. A query with no point at τ <= s gets zero.
    """

    beta: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "beta", _check_beta(self.beta))

    @property
    def dim(self) -> int | None:
        d = super().dim
        return None if d is None else d + 1

    def field(self, points, weights, queries) -> np.ndarray:
        points, weights, queries = _rd_check(points, weights, queries, self.dim)
        d = points.shape[-1] - 1
        tau, y = points[..., 0], points[..., 1:]
        s, x = queries[..., 0], queries[..., 1:]
        Vy = y @ self._mat(self.V, d).T
        Ax = self.beta * x @ self.A(d).T
        out = np.zeros(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (queries.shape[-2], d + 1))
        for sl in self._rows(queries, points.shape[-2]):
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
