r"""Critical points of the interaction energy of n weighted points on S^{d-1}, and their Morse index.

The energy of Σ w_i δ_{x_i} (docs/MATH.md §2; GLPR §3.2) is

.. math:: E_β(x) = \frac{1}{2β} \sum_{i,j} w_i w_j e^{β⟨x_i, x_j⟩},

its Riemannian gradient on the product of spheres is g_i = P_{x_i}^⊥ w_i Σ_j w_j e^{β⟨x_i, x_j⟩} x_j (USA moves each
point along g_i/w_i, SA along g_i/(w_i Z_i): both ascend E_β and both have the critical points of E_β). The
Riemannian Hessian, in an orthonormal basis B_i of each tangent space x_i^⊥, has the blocks (i ≠ j)

.. math:: H_{ij} = w_i w_j e^{β s_{ij}} B_i^T (I + β x_j x_i^T) B_j,\qquad
          H_{ii} = β \sum_{j≠i} w_i w_j e^{β s_{ij}} (B_i^T x_j)(B_i^T x_j)^T − \sum_{j≠i} w_i w_j e^{β s_{ij}} s_{ij} I,

s_ij = ⟨x_i, x_j⟩ (the Euclidean Hessian projected, less the Weingarten term ⟨x_i, ∇_i E⟩ I; the self terms j = i
cancel). On S¹ in angles this is H_ij = −w_i w_j f''(θ_i − θ_j), H_ii = Σ_{j≠i} w_i w_j f''(θ_i − θ_j) with
f(φ) = e^{β cos φ}/β, as in the code of Geshkovski, Koubbi, Polyanskiy & Rigollet (arXiv 2410.06833).
Everything is computed with e^{β(s_ij − 1)} in place of e^{β s_ij}, i.e. for e^{−β} E_β: the signs, the critical
points and the index are those of E_β.

E_β is invariant under the rotations SO(d) acting on all points at once, so at a critical point the Hessian vanishes
on the orbit's tangent directions {(A x_i)_i : A skew}. :func:`critical_point` runs Newton's method on the gradient
in the orthogonal complement of those directions (the least-squares step where the Hessian is singular there too),
retracting onto the spheres after each step; it finds critical points of any index, saddles included, near its
start. The index is counted on that complement: ``index`` = the number of positive eigenvalues (the directions along
which E_β increases: the unstable directions of the flow, which ascends E_β — the Morse index of the potential −E_β
that the flow descends, i.e. its Hessian's negative eigenvalues), ``stable`` the negative ones, ``null`` those within
round-off of 0 (degeneracy beyond the rotations). A single cluster (the maximiser) has index 0; a metastable state
of k clusters sits near a saddle of index >= 1 (docs/MATH.md §13).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CriticalPoint", "critical_point", "hessian_index", "energy_gradient", "hessian"]

_EPS = np.finfo(float).eps


def _points(x, weights):
    """(x (n, d) unit vectors, w (n,)) from unit vectors or angles on S¹; ValueError naming what is wrong."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:  # angles on S¹
        x = np.stack([np.cos(x), np.sin(x)], axis=-1)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ValueError(f"`x` must be angles of shape (n,) or unit vectors of shape (n, d), d >= 2; got {x.shape}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("`x` contains non-finite values.")
    norms = np.linalg.norm(x, axis=1)
    if np.max(np.abs(norms - 1.0)) > 1e-8:
        raise ValueError(f"`x` must be unit vectors (to 1e-8), got norms off by {np.max(np.abs(norms - 1.0)):.3g}.")
    x = x / norms[:, None]
    n = x.shape[0]
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"`weights` must be {n} finite positive numbers, got {weights!r}.")
    return x, w


def _beta(beta) -> float:
    b = float(beta)
    if not np.isfinite(b):
        raise ValueError(f"`beta` must be finite, got {beta!r}.")
    return b


def _tangent_bases(x) -> np.ndarray:
    """(n, d, d−1): an orthonormal basis of each x_i^⊥ (the last d−1 columns of the Householder reflection sending
    x_i to ±e_1)."""
    n, d = x.shape
    s = np.where(x[:, 0] >= 0, 1.0, -1.0)
    v = x.copy()
    v[:, 0] += s  # v = x + sign(x_0) e_1, |v|² = 2(1 + |x_0|) >= 2
    H = np.eye(d)[None] - 2.0 * v[:, :, None] * v[:, None, :] / np.sum(v * v, axis=1)[:, None, None]
    return H[:, :, 1:]


def _kernel(x, w, beta):
    s = np.clip(x @ x.T, -1.0, 1.0)
    return s, np.outer(w, w) * np.exp(beta * (s - 1.0))


def energy_gradient(x, beta: float, weights=None):
    r"""(E_β, g): the energy and its Riemannian gradient g_i = P_{x_i}^⊥ w_i Σ_j w_j e^{β⟨x_i, x_j⟩} x_j, shape
    (n, d) (module docstring). E_β = ½|Σ w_i x_i|² at β = 0 (its limit less the constant (Σ w)²/2β). Both carry the
    factor e^{β} and overflow to inf above β ≈ 700; :func:`critical_point` and :func:`hessian` work with e^{−β}E_β."""
    x, w = _points(x, weights)
    beta = _beta(beta)
    s, a = _kernel(x, w, beta)
    G = a @ x
    g = G - np.sum(G * x, axis=1)[:, None] * x
    with np.errstate(over="ignore"):
        E = 0.5 * float(np.sum((w @ x) ** 2)) if beta == 0 else float(np.exp(beta) * np.sum(a) / (2.0 * beta))
    return E, g * np.exp(beta)


def _hessian(x, w, beta, B):
    """The Riemannian Hessian of e^{−β}E_β in the bases B, shape (n(d−1), n(d−1)) (module docstring)."""
    n, d = x.shape
    s, a = _kernel(x, w, beta)
    off = a.copy()
    np.fill_diagonal(off, 0.0)
    Bx = np.einsum("idk,jd->ijk", B, x)  # B_i^T x_j, (n, n, d−1)
    xB = np.swapaxes(Bx, 0, 1)  # x_i^T B_j at [i, j]
    BB = np.einsum("idk,jdl->ijkl", B, B)  # B_i^T B_j
    H = off[:, :, None, None] * (BB + beta * Bx[:, :, :, None] * xB[:, :, None, :])
    diag = beta * np.einsum("ij,ijk,ijl->ikl", off, Bx, Bx) - np.sum(off * s, axis=1)[:, None, None] * np.eye(d - 1)
    H[np.arange(n), np.arange(n)] = diag
    return H.transpose(0, 2, 1, 3).reshape(n * (d - 1), n * (d - 1))


def hessian(x, beta: float, weights=None):
    """(H, B): the Riemannian Hessian of e^{−β}E_β at ``x`` in the tangent bases B (n, d, d−1), H of shape
    (n(d−1), n(d−1)) with the blocks of the module docstring (point i's coordinates at rows i(d−1)…(i+1)(d−1)−1).
    At a critical point it is the derivative of the gradient e^{−β}g along geodesics, read in these bases."""
    x, w = _points(x, weights)
    B = _tangent_bases(x)
    return _hessian(x, w, _beta(beta), B), B


def _symmetry_complement(x, B) -> np.ndarray:
    """An orthonormal basis (columns) of the complement, in the tangent coordinates, of the rotation orbit's
    directions {(B_i^T A x_i)_i : A skew}."""
    n, d = x.shape
    gens = []
    for p in range(d):
        for q in range(p + 1, d):
            Ax = np.zeros_like(x)
            Ax[:, p], Ax[:, q] = -x[:, q], x[:, p]
            gens.append(np.einsum("idk,id->ik", B, Ax).ravel())
    G = np.array(gens).T  # (n(d−1), d(d−1)/2)
    U, sv, _ = np.linalg.svd(G, full_matrices=True)
    rank = int(np.sum(sv > 1e-10 * max(sv[0], 1.0))) if sv.size else 0
    return U[:, rank:]


@dataclass(frozen=True)
class CriticalPoint:
    """A critical point of E_β (module docstring).

    Attributes
    ----------
    x : ndarray, shape (n, d)
        The points (unit vectors).
    weights : ndarray, shape (n,)
    beta : float
    energy : float
        E_β(x).
    gradient_norm : float
        max_i |g_i|/w_i at x: the largest speed of the points under USA (e^{−β} times it is at round-off, about
        1e-16, at a converged point).
    eigenvalues : ndarray
        The Hessian's eigenvalues on the complement of the rotations, scaled by e^{−β}, increasing.
    index : int
        The number of positive eigenvalues: the directions along which E_β increases (the flow's unstable
        directions; the Morse index of −E_β). 0 at a local maximiser (one cluster), >= 1 at a saddle.
    stable : int
        The number of negative eigenvalues.
    null : int
        The number of eigenvalues within ``null_tol`` of 0: directions of degeneracy beyond the rotations.
    null_tol : float
        The threshold (scaled by e^{−β}, like ``eigenvalues``).
    iterations : int
        Newton steps taken (0 for :func:`hessian_index`).
    converged : bool
        Whether the gradient fell below the tolerance.
    """

    x: np.ndarray
    weights: np.ndarray
    beta: float
    energy: float
    gradient_norm: float
    eigenvalues: np.ndarray
    index: int
    stable: int
    null: int
    null_tol: float
    iterations: int
    converged: bool

    @property
    def angles(self) -> np.ndarray:
        """The points' angles in [0, 2π) (on S¹)."""
        return np.mod(np.arctan2(self.x[:, 1], self.x[:, 0]), 2.0 * np.pi)


def _analyse(x, w, beta, iterations, converged, null_tol):
    B = _tangent_bases(x)
    H = _hessian(x, w, beta, B)
    Q = _symmetry_complement(x, B)
    ev = np.linalg.eigvalsh(Q.T @ H @ Q) if Q.shape[1] else np.zeros(0)
    if null_tol is None:
        # each entry is a sum of n terms of size <= max w_i w_j, each with relative error a few eps: Weyl's bound
        # puts the eigenvalues' round-off below n(d−1) × n eps × max w²; 100× that
        null_tol = 100.0 * H.shape[0] * x.shape[0] * _EPS * float(np.max(w)) ** 2
    E, g = energy_gradient(x, beta, w)
    speed = float(np.max(np.linalg.norm(g, axis=1) / w))
    return CriticalPoint(x, w, beta, E, speed, ev, int(np.sum(ev > null_tol)), int(np.sum(ev < -null_tol)),
                         int(np.sum(np.abs(ev) <= null_tol)), float(null_tol), iterations, converged)


def hessian_index(x, beta: float, weights=None, *, null_tol: float | None = None) -> CriticalPoint:
    """The Hessian's eigenvalues and index at the configuration ``x`` as it is (no Newton step): meaningful where
    ``x`` is a critical point (check ``gradient_norm``). Arguments as for :func:`critical_point`."""
    x, w = _points(x, weights)
    beta = _beta(beta)
    _, g = energy_gradient(x, beta, w)
    speed = np.max(np.linalg.norm(g, axis=1) / w) * np.exp(-beta)
    return _analyse(x, w, beta, 0, bool(speed <= 1e3 * x.shape[0] * _EPS), null_tol)


def critical_point(x0, beta: float, weights=None, *, tol: float = 1e-13, maxiter: int = 100,
                   null_tol: float | None = None) -> CriticalPoint:
    r"""Newton's method on the Riemannian gradient of E_β from ``x0``: a critical point of E_β near it and its index
    (module docstring).

    Each step solves H v = −g on the complement of the rotation orbit (least squares where H is singular there), moves
    each point to (x_i + v_i)/|x_i + v_i|, and halves the step (up to 30 times) until the gradient's norm falls.

    Parameters
    ----------
    x0 : array_like, shape (n, d) or (n,)
        The start: unit vectors, or angles on S¹.
    beta : float
    weights : array_like, shape (n,), optional
        Positive weights (default 1/n each): a cluster of mass m is one point of weight m.
    tol : float
        Stop when e^{−β} max_i |g_i|/w_i <= tol (the round-off of the scaled gradient is about n × 1e-16).
    maxiter : int
    null_tol : float, optional
        Eigenvalues (scaled by e^{−β}) within this of 0 are counted as null (default: 100 × the round-off bound
        n(d−1) n ε max w²).

    Returns
    -------
    CriticalPoint
        ``converged`` False where the tolerance was not reached in ``maxiter`` steps.
    """
    x, w = _points(x0, weights)
    beta = _beta(beta)
    if not tol > 0:
        raise ValueError(f"`tol` must be positive, got {tol!r}.")
    if isinstance(maxiter, bool) or int(maxiter) != maxiter or maxiter < 0:
        raise ValueError(f"`maxiter` must be an integer >= 0, got {maxiter!r}.")
    n, d = x.shape

    def scaled_gradient(y):
        s, a = _kernel(y, w, beta)
        G = a @ y
        return G - np.sum(G * y, axis=1)[:, None] * y

    def size(g):
        return float(np.max(np.linalg.norm(g, axis=1) / w))

    g = scaled_gradient(x)
    it, converged = 0, size(g) <= tol
    while not converged and it < int(maxiter):
        B = _tangent_bases(x)
        Q = _symmetry_complement(x, B)
        gt = np.einsum("idk,id->ik", B, g).ravel()
        Hq = Q.T @ _hessian(x, w, beta, B) @ Q
        c = np.linalg.lstsq(Hq, -(Q.T @ gt), rcond=None)[0]
        v = np.einsum("idk,ik->id", B, (Q @ c).reshape(n, d - 1))
        step, g0 = 1.0, size(g)
        for _ in range(30):
            y = x + step * v
            y /= np.linalg.norm(y, axis=1)[:, None]
            gy = scaled_gradient(y)
            if size(gy) < g0:
                break
            step *= 0.5
        x, g = y, gy
        it += 1
        converged = size(g) <= tol
    return _analyse(x, w, beta, it, bool(converged), null_tol)
