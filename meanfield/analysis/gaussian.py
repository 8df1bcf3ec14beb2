r"""Exact Gaussian closures in R^d (MATH.md §3; CACP).

For attention whose field is affine on Gaussian data, N(α, Σ) stays Gaussian
and its mean and covariance solve ODEs. With A = KᵀQ (β folded into A) and
an affine field Γ(x) = M x + c, α̇ = Mα + c and Σ̇ = MΣ + ΣMᵀ:

- softmax: the tilt e^{⟨Ax,y⟩} N(α, Σ) ∝ N(α + ΣAx, Σ), so Γ(x) = V(α + ΣAx),
  α̇ = V(α + ΣAα), Σ̇ = VΣAΣ + ΣAᵀΣVᵀ (with V = I, Σ(t) = (Σ_0⁻¹ − (A + Aᵀ)t)⁻¹);
- L2, kernel e^{−|Qx−Ky|²/(2τ)}: Σ̃ = (Σ⁻¹ + KᵀK/τ)⁻¹, Γ(x) = VΣ̃(Σ⁻¹α + Ax/τ);
- Sinkhorn, cost −⟨Ax, y⟩/τ: Ã = Σ^{1/2}(A/τ)Σ^{1/2}, C̃ = 2Ã(I + (I + 4ÃᵀÃ)^{1/2})⁻¹,
  C = Σ^{1/2}C̃Σ^{1/2}, Γ(x) = V(α + CΣ⁻¹(x − α)), so α̇ = Vα, Σ̇ = VC + CᵀVᵀ;
- multi-head softmax: the sum of the heads' affine fields;
- a Transformer with affine feed-forward blocks (σ = identity, docs/MATH.md §8.2): a Γ_att + b Σ_j W_j(A_j x + b_j),
  affine, so M += b W_j A_j and c += b W_j b_j (other activations have no closure: a TypeError);
- time-dependent weights (CACP): the same ODEs with the model of each time, integrated piecewise between the
  layer boundaries of schedules.

With noise D (docs/MATH.md §7) the particles follow dX = (Mx + c) dt + √(2D) dB with M, c fixed by the law's mean
and covariance, a linear SDE whose Gaussian initial law stays Gaussian: α̇ is unchanged and
Σ̇ = MΣ + ΣMᵀ + 2D I. There is no flow map of points then (``flow`` is refused). Sigmoid and masked attention
have no closure, with or without noise (a TypeError saying why): σ(⟨Ax, y⟩ + b) is no exponential tilt, so the
sigmoid field is not affine on N(m, Σ); the mask couples the positions (docs/MATH.md §7).

The conventions are those of :mod:`meanfield.models` (Softmax with its β, L2
and Sinkhorn with τ), so the closures and the particle systems describe the
same dynamics; the tests check them against Gauss–Hermite weighted particles.
Finite-time blow-up (Σ leaving every bounded set, as for softmax when A + Aᵀ
has a positive direction) is detected and reported with its time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from ..domains import EUCLIDEAN
from ..models import as_model

__all__ = ["GaussianSolution", "affine_field", "solve_gaussian", "gaussian_pdf", "gaussian_density", "gauss_hermite"]


def _check_gaussian(mean, cov):
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    cov = np.atleast_2d(np.asarray(cov, dtype=float))
    d = mean.size
    if mean.ndim != 1:
        raise ValueError(f"`mean` must be a vector, got shape {mean.shape}.")
    if cov.shape != (d, d):
        raise ValueError(f"`cov` must be {d}×{d} to match the mean, got {cov.shape}.")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
        raise ValueError("`mean` and `cov` must be finite.")
    if not np.allclose(cov, cov.T, rtol=0, atol=1e-12 * max(1.0, np.abs(cov).max())):
        raise ValueError("`cov` must be symmetric.")
    if np.linalg.eigvalsh(cov).min() <= 0:
        raise ValueError("`cov` must be positive definite (a singular covariance has no density).")
    return mean, cov


def affine_field(model, mean, cov):
    """(M, c) with Γ(x) = M x + c for the Gaussian N(mean, cov) (module docstring): the model's own
    ``gaussian_closure`` (each kind its closure, or a ``TypeError`` saying why it has none); a time-dependent model is
    evaluated first (``model.at(t)``)."""
    return as_model(model).gaussian_closure(mean, cov)


@dataclass(frozen=True)
class GaussianSolution:
    """Mean and covariance over time.

    Attributes
    ----------
    t : ndarray, shape (T,)
    mean : ndarray, shape (T, d)
    cov : ndarray, shape (T, d, d)
    blowup_time : float or None
        Where Σ left every bounded set (its norm exceeded ``blowup`` × ‖Σ_0‖,
        or the integrator's step collapsed while Σ had grown over 10³-fold),
        the time (the last output before it); the arrays stop there. None if
        it did not happen.
    flow : ndarray, shape (T, d, d), or None
        With ``flow=True``: F(t) of the affine flow map x ↦ mean(t) + F(t)(x − mean(t_0)), Ḟ = M F, F(t_0) = I
        (Γ = Mx + c), which carries every point of N(mean_0, cov_0) along its characteristic (so
        cov(t) = F cov_0 Fᵀ) — the exact image of a Gauss–Hermite rule.
    """

    t: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    blowup_time: float | None
    flow: np.ndarray | None = None


def solve_gaussian(model, mean0, cov0, t_eval, rtol: float = 1e-12, atol: float = 1e-14,
                   blowup: float = 1e8, flow: bool = False) -> GaussianSolution:
    """Integrate the mean/covariance ODEs (DOP853) from N(mean0, cov0) at ``t_eval`` (increasing, from t_0), with
    the noise's 2D I in Σ̇ (module docstring); with ``flow`` (no noise) also the flow map's matrix F
    (:class:`GaussianSolution`)."""
    mean0, cov0 = _check_gaussian(mean0, cov0)
    model = as_model(model)
    if not EUCLIDEAN.moved_by(model):
        raise ValueError(f"the Gaussian closures are for R^d models, got {model!r} (on the {model.manifold}).")
    noise = float(model.noise)
    if noise and flow:
        raise ValueError(f"`flow`: with noise (D = {noise:g}) the points do not follow a flow map; only the law's mean "
                         "and covariance are exact.")
    t_eval = np.asarray(t_eval, dtype=float)
    if t_eval.ndim != 1 or t_eval.size < 2 or np.any(np.diff(t_eval) <= 0):
        raise ValueError("`t_eval` must be strictly increasing with at least two times.")
    affine_field(model.at(t_eval[0]), mean0, cov0)  # a model without a closure: its TypeError before integrating
    d = mean0.size
    limit = blowup * np.linalg.norm(cov0, 2)

    n = d + d * d

    def rhs(t, y, layer_time=None):
        m, S = y[:d], y[d:n].reshape(d, d)
        S = 0.5 * (S + S.T)
        M, c = affine_field(model.at(t, layer_time), m, S)
        dS = M @ S + S @ M.T
        if noise:
            dS = dS + 2.0 * noise * np.eye(d)
        parts = [M @ m + c, dS.ravel()]
        if flow:
            parts.append((M @ y[n:].reshape(d, d)).ravel())
        return np.concatenate(parts)

    def escape(_, y):
        return limit - np.linalg.norm(y[d:n].reshape(d, d), 2)

    escape.terminal = True
    y0 = [mean0, cov0.ravel()] + ([np.eye(d).ravel()] if flow else [])
    sol = _piecewise(rhs, t_eval, np.concatenate(y0), model.breakpoints(t_eval[0], t_eval[-1]), rtol, atol, escape)
    blow = float(sol.t_events[0][0]) if sol.t_events[0].size else None
    if sol.status == -1:
        last = np.linalg.norm(sol.y[d:n, -1].reshape(d, d), 2) if sol.y.size else 0.0
        growth = last / np.linalg.norm(cov0, 2)
        if growth < 1e3:
            raise RuntimeError(f"the Gaussian ODEs failed at t = {sol.t[-1] if sol.t.size else t_eval[0]:.6g}: {sol.message}")
        # the step size collapsed while Σ exploded between two outputs: a blow-up the event could not bracket
        blow = float(sol.t[-1])
    cov = sol.y[d:n].T.reshape(-1, d, d)
    return GaussianSolution(t=sol.t, mean=sol.y[:d].T, cov=0.5 * (cov + np.swapaxes(cov, 1, 2)), blowup_time=blow,
                            flow=sol.y[n:].T.reshape(-1, d, d) if flow else None)


def _piecewise(rhs, t_eval, y0, breaks, rtol, atol, escape):
    """solve_ivp (DOP853) over t_eval, restarted at every breakpoint (a schedule's layer boundary, where the rate
    jumps), ``rhs(t, y, layer_time)`` told the piece's start (its last stages, at the boundary, stay in its layer):
    one result with ``t``, ``y``, ``t_events``, ``status``, ``message`` as solve_ivp's."""
    from types import SimpleNamespace

    edges = np.concatenate([[t_eval[0]], np.asarray(breaks, dtype=float), [t_eval[-1]]])
    ts, ys, y = [], [], y0
    sol = None
    for k, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        inside = t_eval[(t_eval >= a) & (t_eval <= b)] if k == 0 else t_eval[(t_eval > a) & (t_eval <= b)]
        sol = solve_ivp(lambda t, z, a=a: rhs(t, z, a), (a, b), y, method="DOP853", t_eval=np.concatenate([inside, [b]]) if inside.size == 0
                        or inside[-1] != b else inside, rtol=rtol, atol=atol, events=escape)
        keep = np.isin(sol.t, inside)
        ts.append(sol.t[keep])
        ys.append(sol.y[:, keep])
        if sol.status != 0 or sol.t_events[0].size:
            break
        y = sol.y[:, -1]
    return SimpleNamespace(t=np.concatenate(ts), y=np.concatenate(ys, axis=1), t_events=sol.t_events,
                           status=sol.status, message=sol.message)


def gauss_hermite(mean, cov, points_per_dim: int = 12):
    """Tensor Gauss–Hermite rule for N(mean, cov): (nodes (n, d), weights (n,)), exact for polynomials of degree < 2k."""
    mean, cov = _check_gaussian(mean, cov)
    d = mean.size
    z, w = np.polynomial.hermite_e.hermegauss(points_per_dim)  # weight e^{-z²/2}
    w = w / w.sum()
    grids = np.meshgrid(*([z] * d), indexing="ij")
    Z = np.stack([g.ravel() for g in grids], axis=-1)
    W = np.prod(np.meshgrid(*([w] * d), indexing="ij"), axis=0).ravel()
    L = np.linalg.cholesky(cov)
    return mean + Z @ L.T, W


def gaussian_density(grid, mean, cov):
    """N(mean, cov) as a :class:`meanfield.Density` on an :class:`EuclideanGrid` (cell values, mass 1)."""
    from ..density import Density

    mean, cov = _check_gaussian(mean, cov)
    if not EUCLIDEAN.of_dim(mean.size).holds(grid):
        raise ValueError(f"`grid` must be an EuclideanGrid in R^{mean.size}, got {grid!r}.")
    return Density.from_function(grid, lambda x: gaussian_pdf(x, mean, cov))


def gaussian_pdf(points, mean, cov) -> np.ndarray:
    """The density of N(mean, cov) at points (..., d)."""
    mean, cov = _check_gaussian(mean, cov)
    x = np.asarray(points, dtype=float) - mean
    sol = np.linalg.solve(cov, np.moveaxis(x, -1, 0).reshape(mean.size, -1)).T.reshape(x.shape)
    norm = np.sqrt((2 * np.pi) ** mean.size * np.linalg.det(cov))
    return np.exp(-0.5 * np.sum(x * sol, axis=-1)) / norm
