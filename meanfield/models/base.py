"""What every attention head shares: Q, K, V checked once, the measure checks, row chunks.

A *head* is an immutable dataclass with matrices Q, K, V (``None`` means the
identity of any dimension). Every model — one head or a sum of heads — has
``heads`` (a tuple of heads), ``dim`` (the d its matrices fix, or None),
``manifold`` (where its tokens live: "sphere", S^{d-1} with the circle included, or
"euclidean", R^d), ``kind`` (its name in study files, :mod:`.registry`), ``zonal``
(a :class:`Zonal` record or None) and ``field(points, weights, queries)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import checks

__all__ = ["Head", "Zonal", "heads", "check_weights", "row_chunks", "identity_multiple", "tilted_moments",
           "softmax_jacobian", "log_kernel_excess", "CHUNK"]

#: Work arrays of the pairwise sums are chunked to at most this many entries.
CHUNK = 1 << 21

class Zonal(NamedTuple):
    """A zonal model's kernel: e^{β⟨Qx,Ky⟩} = e^{beta⟨x,y⟩} with ``beta`` = βqk, and V = ``c``·I (MATH.md §2.1;
    :data:`meanfield.domains.zonal.ZONAL_RULE`)."""

    beta: float
    c: float


class Head:
    """Mixin of the dataclass heads: validates ``Q``, ``K``, ``V`` in ``__post_init__``.

    ``min_dim`` is the smallest d allowed (2 on the sphere, 1 in R^d).
    """

    min_dim = 2
    manifold: str  # "sphere" (S^{d-1}) or "euclidean" (R^d): a class constant of each model
    Q: np.ndarray | None
    K: np.ndarray | None
    V: np.ndarray | None

    def _check_noise(self) -> None:
        object.__setattr__(self, "noise", checks.noise(self.noise))

    def _check_matrices(self) -> None:
        dims = set()
        for name in ("Q", "K", "V"):
            M = checks.square_matrix(getattr(self, name), name, self.min_dim)
            object.__setattr__(self, name, M)
            if M is not None:
                dims.add(M.shape[0])
        if len(dims) > 1:
            raise ValueError(f"`Q`, `K`, `V` must share one dimension d, got sizes {sorted(dims)}.")

    @property
    def dim(self) -> int | None:
        """The ambient dimension d fixed by the matrices, or None if all are identities."""
        for M in (self.Q, self.K, self.V):
            if M is not None:
                return M.shape[0]
        return None

    @property
    def heads(self) -> tuple:
        """``(self,)``: a single head (see :class:`MultiHeadAttention` for sums of heads)."""
        return (self,)

    def matrices(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Q, K, V) as d×d arrays (the identity where ``None``)."""
        eye = np.eye(d)
        return tuple(eye if M is None else M for M in (self.Q, self.K, self.V))

    def A(self, d: int) -> np.ndarray:
        """A = KᵀQ, so that ⟨Qx, Ky⟩ = ⟨Ax, y⟩."""
        Q, K, _ = self.matrices(d)
        return K.T @ Q

    def check_dim(self, d: int) -> None:
        """``ValueError`` if the matrices do not act on R^d."""
        if self.dim is not None and self.dim != d:
            raise ValueError(f"the model's matrices are {self.dim}×{self.dim} but the points live in R^{d}.")


def heads(model) -> tuple:
    """The heads of a model: its own tuple for multi-head, ``(model,)`` for one head."""
    h = getattr(model, "heads", None)
    if not isinstance(h, tuple) or not all(isinstance(x, Head) for x in h):
        raise TypeError(f"`model` must be an attention model from meanfield.models, got {type(model).__name__}.")
    return h


def check_weights(weights, points) -> np.ndarray:
    """One finite weight per point."""
    weights = np.asarray(weights, dtype=float)
    if weights.shape != points.shape[:-1]:
        raise ValueError(f"`weights` must have shape {points.shape[:-1]} (one per point), got {weights.shape}.")
    if not np.all(np.isfinite(weights)):
        raise ValueError("`weights` contains non-finite values (NaN or inf).")
    return weights


def row_chunks(m: int, n: int) -> list[slice]:
    """Slices of the m query rows such that a chunk of rows × n points has at most :data:`CHUNK` entries."""
    step = max(1, CHUNK // max(n, 1))
    return [slice(i, min(m, i + step)) for i in range(0, m, step)]


def identity_multiple(M: np.ndarray | None) -> float | None:
    """c if ``M`` is c·I (``None`` counts as I), else None."""
    if M is None:
        return 1.0
    c = M[0, 0]
    return float(c) if np.array_equal(M, c * np.eye(M.shape[0])) else None


def tilted_moments(logits, weights, points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""log Z, E[y] and E[y yᵀ] under the laws π_i(dy) ∝ Σ_j w_j e^{logits_ij} δ_{y_j}, one per row.

    Parameters
    ----------
    logits : ndarray, shape (m, n)
    weights : ndarray, shape (n,)
    points : ndarray, shape (n, d)

    Returns
    -------
    log_z : ndarray, shape (m,)
        log Σ_j w_j e^{logits_ij} (exponents shifted by their row maximum).
    mean : ndarray, shape (m, d)
    second : ndarray, shape (m, d, d)
        The second moments; the covariance is ``second − mean ⊗ mean``.
    """
    m, n = logits.shape
    d = points.shape[-1]
    outer = (points[:, :, None] * points[:, None, :]).reshape(n, d * d)
    cols = np.concatenate([points, outer], axis=1)
    log_z = np.empty(m)
    mom = np.empty((m, d + d * d))
    for sl in row_chunks(m, n):
        s = logits[sl]
        smax = np.max(s, axis=-1, keepdims=True)
        e = np.exp(s - smax) * weights
        Z = np.sum(e, axis=-1, keepdims=True)
        if np.any(Z <= 0):
            raise ValueError("the softmax normaliser is not positive: the weights must describe a positive measure.")
        mom[sl] = (e @ cols) / Z
        log_z[sl] = np.log(Z[:, 0]) + smax[:, 0]
    return log_z, mom[:, :d], mom[:, d:].reshape(m, d, d)


def _logits(A, scale, points, queries, offsets):
    logits = scale * (queries @ A.T) @ points.T
    if offsets is not None:
        logits += offsets[None, :]
    return logits


def softmax_jacobian(A, V, scale, points, weights, queries, offsets=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Γ = E_π[Vy] and DΓ = scale·V C_x A under π_x ∝ w_j e^{scale⟨Ax, y_j⟩ + offset_j} (C_x its covariance).

    The average of every normalised kernel of the project (SA on the sphere, softmax, L2 and Sinkhorn
    in R^d) and its whole Jacobian in x, shape (m, d, d); unbatched.
    """
    _, mean, second = tilted_moments(_logits(A, scale, points, queries, offsets), weights, points)
    cov = second - mean[:, :, None] * mean[:, None, :]
    return mean @ V.T, scale * (V @ cov @ A)


def log_kernel_excess(A, scale, radius, points, weights, queries, offsets=None) -> np.ndarray:
    r"""log(sup_{|y| <= R} e^{scale⟨Ax,y⟩} / Z_μ(x)) with Z_μ(x) = Σ_j w_j e^{scale⟨Ax,y_j⟩ + offset_j}, shape (m,).

    The supremum of the logits over |y| <= R is scale·R|Ax| (offsets <= 0 are dropped from it: an upper
    bound); R = 1 on the sphere. The factor by which the a posteriori L_μ(x) exceeds v(1 + 2a_μ)
    (:mod:`meanfield.models.bounds`).
    """
    log_z, _, _ = tilted_moments(_logits(A, scale, points, queries, offsets), weights, points)
    return scale * float(radius) * np.linalg.norm(queries @ A.T, axis=-1) - log_z
