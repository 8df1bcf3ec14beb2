r"""Hardmax attention, β = ∞ (docs/MATH.md §11; Alcalde, Fantuzzi & Zuazua 2024; Alcalde, Geshkovski &
Ruiz-Balet 2025).

Each token attends to the tokens that maximise its score, the ties sharing equally:

.. math::

    C_i = \operatorname{argmax}_j \langle Qx_i, Kx_j\rangle,\qquad
    u_i = V\,\frac{\sum_{j\in C_i} w_j x_j}{\sum_{j\in C_i} w_j},\qquad
    \dot x_i = P_{x_i}^\perp u_i\ \ (S^{d-1}),\quad \dot x_i = u_i\ \ (\mathbb R^d),

the limit β → ∞ of softmax attention's average (SelfAttention on the sphere, Softmax in R^d) away from ties (the
softmax weights of the non-maximisers are e^{−β·gap}). The discrete map of Alcalde–Fantuzzi–Zuazua (AFZ) with
step γ ∈ (0, 1],

.. math:: x_i \mapsto x_i + \gamma(u_i - x_i)\quad(\mathbb R^d),\qquad x_i \mapsto N(x_i + \gamma(u_i - x_i))
          \quad(S^{d-1}),

is the explicit Euler step of ż = u(z) − z, the R^d flow in the rescaled frame z = e^{−t}x for V = I (GLPR §9.2:
argmax sets are invariant under a common positive scaling). With B = KᵀQ positive semidefinite in R^d the extreme
points of the tokens' convex hull attend to themselves and stay fixed under the map ("leaders"), and a token in the
cell {x : ⟨Bx, v⟩ >= ⟨Bx, w⟩ ∀w} of a leader v moves straight to it: |x_i^k − v| = (1 − γ)^k |x_i^0 − v| (MATH.md §11).

Ties: j ∈ C_i when its score is within ``tie_tol`` × |Qx_i| max_j |Kx_j| of the row's maximum (the Cauchy–Schwarz
scale of the scores, so round-off never splits a tie); points of weight 0 carry no mass and are never attended to.
The field jumps across the cells' boundaries: it has no Lipschitz constant (``constants`` says ∞) and no density
solver (:func:`meanfield.models.normalization.density_refusal`); particles run it with the model's own sums
(strategy "quadrature").
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field

import numpy as np

from ..core import checks
from ..domains.sphere.geometry import check_on_sphere, project_tangent
from .base import Head, check_weights, row_chunks
from .bounds import HeadConstants, norm2

__all__ = ["Hardmax", "MANIFOLDS", "TIE_TOL"]

#: where hardmax tokens live
MANIFOLDS = ("sphere", "euclidean")
#: ties: scores within this fraction of the row's Cauchy–Schwarz scale of its maximum
TIE_TOL = 1e-12


@dataclass(frozen=True, eq=False)
class Hardmax(Head):
    r"""Hardmax self-attention (β = ∞; module docstring, docs/MATH.md §11).

    Parameters
    ----------
    Q, K, V : array_like, shape (d, d), optional
        Query, key and value matrices; ``None`` means the identity (of any d).
    manifold : {"sphere", "euclidean"}
        Tokens on S^{d-1} (the field projected on the tangent space) or in R^d.
    tie_tol : float, keyword-only
        Relative tolerance of a tie (module docstring), >= 0; default :data:`TIE_TOL`.
    noise : float, keyword-only
        D >= 0, as for the other heads (particles only).
    """

    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None
    manifold: str = "sphere"
    tie_tol: float = dc_field(default=TIE_TOL, kw_only=True)
    noise: float = dc_field(default=0.0, kw_only=True)

    kind = "hardmax"
    min_dim = 1
    zonal = None
    causal = False
    normalized = True
    beta = float("inf")
    time_fields = ("Q", "K", "V")

    def __post_init__(self):
        if self.manifold not in MANIFOLDS:
            raise ValueError(f"`manifold` must be one of {MANIFOLDS}, got {self.manifold!r}.")
        self._check_matrices()
        if self.manifold == "sphere" and self.dim == 1:
            raise ValueError("hardmax tokens on S^(d-1) need d >= 2; the matrices are 1×1.")
        self._check_noise()
        tol = checks.real(self.tie_tol, "tie_tol")
        if not (np.isfinite(tol) and tol >= 0):
            raise ValueError(f"`tie_tol` must be finite and >= 0, got {self.tie_tol!r}.")
        object.__setattr__(self, "tie_tol", tol)

    # ------------------------------------------------------------------ bounds
    def constants(self, radius: float | None = None) -> HeadConstants:
        """|u| <= ‖V‖R; the field jumps across the cells' boundaries: no Lipschitz constant (∞)."""
        v = norm2(self.V)
        return HeadConstants(v, float("inf"), float("inf"), None, float("inf"), float("inf"))

    def speed_bound(self) -> float:
        """‖V‖ >= sup|u| on the sphere (the scale of the default step; the field is not differentiable)."""
        return norm2(self.V)

    def __repr__(self) -> str:
        def show(M):
            return "I" if M is None else np.array2string(np.asarray(M), precision=3)

        mats = ", ".join(f"{n}={show(getattr(self, n))}" for n in ("Q", "K", "V"))
        noise = f", noise={self.noise:g}" if self.noise else ""
        return f"Hardmax({self.manifold}, {mats}{noise})"

    # ------------------------------------------------------------------ the cells and the field
    def cells(self, points, weights, queries) -> np.ndarray:
        r"""The attention matrix of β = ∞, shape (..., m, n): row i is w_j 1{j ∈ C_i} / Σ_{k ∈ C_i} w_k (module
        docstring: the maximisers of ⟨Qx_i, Ky_j⟩ among the points of positive weight, ties sharing by weight).
        No input checks."""
        d = points.shape[-1]
        Q, K, _ = self.matrices(d)
        Qx, Ky = queries @ Q.T, points @ K.T
        live = weights > 0
        scale = np.linalg.norm(Qx, axis=-1)[..., :, None] * \
            np.max(np.where(live, np.linalg.norm(Ky, axis=-1), 0.0), axis=-1, keepdims=True)[..., None, :]
        s = np.where(live[..., None, :], Qx @ np.swapaxes(Ky, -1, -2), -np.inf)
        smax = np.max(s, axis=-1, keepdims=True)
        if not np.all(np.isfinite(smax)):
            raise ValueError("hardmax attention needs points of positive weight: every weight is 0.")
        a = np.where(s >= smax - self.tie_tol * scale, weights[..., None, :], 0.0)
        return a / np.sum(a, axis=-1, keepdims=True)

    def average(self, points, weights, queries, positions=None) -> np.ndarray:
        """u_i = V mean_{j ∈ C_i} y_j (module docstring), shape (..., m, d), before any projection; no input checks."""
        if positions is not None:
            raise ValueError("hardmax attention is not causal here: no positions.")
        d = points.shape[-1]
        V = self.matrices(d)[2]
        Vy = points @ V.T
        m, n = queries.shape[-2], points.shape[-2]
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (m, d))
        for sl in row_chunks(m, n):
            out[..., sl, :] = self.cells(points, weights, queries[..., sl, :]) @ Vy
        return out

    def _checked(self, points, weights, queries):
        if self.manifold == "sphere":
            points, queries = check_on_sphere(points, "points"), check_on_sphere(queries, "queries")
        else:
            points, queries = np.asarray(points, dtype=float), np.asarray(queries, dtype=float)
            if not (np.all(np.isfinite(points)) and np.all(np.isfinite(queries))):
                raise ValueError("`points` and `queries` must be finite.")
        if points.ndim < 2 or queries.ndim < 2 or points.shape[-1] != queries.shape[-1]:
            raise ValueError(f"`points` and `queries` must have shapes (..., n, d) and (..., m, d) in one R^d, got "
                             f"{points.shape} and {queries.shape}.")
        self.check_dim(points.shape[-1])
        return points, check_weights(weights, points), queries

    def field(self, points, weights, queries) -> np.ndarray:
        r"""ẋ at ``queries``: P_x u on S^{d-1}, u in R^d (module docstring), shape (..., m, d)."""
        return self.sum_of_fields((self,), points, weights, queries)

    @staticmethod
    def sum_of_fields(heads, points, weights, queries, divergence: bool = False):
        """Σ_h of the heads' fields (multi-head hardmax: the averages summed, projected once on the sphere)."""
        if divergence:
            raise ValueError("hardmax attention's field jumps across the cells' boundaries: it has no divergence "
                             "(no density solver, no Lagrangian measure); run particles.")
        points, weights, queries = heads[0]._checked(points, weights, queries)
        u = sum(h.average(points, weights, queries) for h in heads)
        return project_tangent(queries, u) if heads[0].manifold == "sphere" else u

    def field_and_divergence(self, points, weights, queries):
        return self.sum_of_fields((self,), points, weights, queries, divergence=True)

    def layer_map(self, points, weights, gamma: float) -> np.ndarray:
        r"""One AFZ layer x ↦ x + γ(u − x) (R^d), N(x + γ(u − x)) (S^{d-1}), u at the points themselves (module
        docstring), γ ∈ (0, 1]."""
        gamma = checks.positive(gamma, "gamma")
        if gamma > 1:
            raise ValueError(f"`gamma` (the AFZ step) must lie in (0, 1], got {gamma!r}.")
        x, w, _ = self._checked(points, weights, points)
        y = x + gamma * (self.average(x, w, x) - x)
        return y / np.linalg.norm(y, axis=-1, keepdims=True) if self.manifold == "sphere" else y
