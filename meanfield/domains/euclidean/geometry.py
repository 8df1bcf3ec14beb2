"""Geometry of R^d: no projection, no retraction, the Euclidean distance."""

from __future__ import annotations

import numpy as np

__all__ = ["check_points", "distance", "one_sided_lipschitz"]


def check_points(x, name: str) -> np.ndarray:
    """``x`` as a float array of shape (..., d) with finite entries."""
    x = np.asarray(x, dtype=float)
    if x.ndim < 1:
        raise ValueError(f"`{name}` must have shape (..., d), got shape {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"`{name}` contains non-finite values (NaN or inf).")
    return x


def distance(xa, xb) -> np.ndarray:
    """|xa_i − xb_j|, shape (n, m)."""
    from scipy.spatial.distance import cdist

    return cdist(xa, xb)


def one_sided_lipschitz(x, u, Du) -> np.ndarray:
    r"""Λ(x) = λ_max(sym DΓ(x)) = max_{|w| = 1} ⟨w, DΓ w⟩, shape (m,): the rate at which the flow of Γ can
    separate two points, d/dt|x_t − y_t| <= max Λ |x_t − y_t| on a convex set (validation.stability)."""
    S = 0.5 * (Du + np.swapaxes(Du, -1, -2))
    return np.linalg.eigvalsh(S)[:, -1]
