r"""The lifetime of metastable states against β: the fit log T ≈ cβ + b with its confidence interval.

Geshkovski, Koubbi, Polyanskiy & Rigollet (arXiv 2410.06833): clusters persist until log t ~ β. For two clusters
of masses m₁, m₂ near the antipodal saddle on S¹ the gap u = π − φ grows at the rate (m₁/m₂ + m₂/m₁)e^{−2β} (SA;
docs/MATH.md §13), so their lifetime is T₂ ≈ e^{2β} log(u_*/u₀)/(m₁/m₂ + m₂/m₁): c = 2, the data entering only
the intercept; two clusters at a gap φ < π merge after about e^{β(1 − cos φ)}, c = 1 − cos φ.
:func:`lifetime_fit` fits c by least squares over all (β, seed) pairs, with the Student-t interval of the slope.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["LifetimeFit", "lifetime_fit", "two_cluster_merge_time"]


@dataclass(frozen=True)
class LifetimeFit:
    """log T = c β + b fitted over (β, T) pairs.

    Attributes
    ----------
    c : float
        The slope.
    interval : (float, float)
        Its confidence interval at ``level``.
    intercept : float
        b.
    level : float
    n : int
        The number of (β, T) pairs used (finite, positive T).
    beta_range : (float, float)
    residual_sd : float
        The standard deviation of the residuals of log T (the seed-to-seed scatter).
    """

    c: float
    interval: tuple
    intercept: float
    level: float
    n: int
    beta_range: tuple
    residual_sd: float


def lifetime_fit(beta, lifetimes, level: float = 0.95) -> LifetimeFit:
    """Least-squares slope c of log T against β over all pairs, with its Student-t interval (n − 2 degrees of freedom).

    Parameters
    ----------
    beta : array_like, shape (m,)
    lifetimes : array_like, shape (m,) or (m, seeds)
        T for each β (a row of seeds per β); NaN entries (no merge seen) are left out.
    level : float
        In (0, 1).

    Returns
    -------
    LifetimeFit

    Raises
    ------
    ValueError
        Mismatched shapes, non-finite β, a non-positive lifetime, or fewer than three usable pairs over two βs.
    """
    b = np.asarray(beta, dtype=float)
    T = np.asarray(lifetimes, dtype=float)
    if b.ndim != 1 or T.shape[:1] != b.shape or T.ndim > 2:
        raise ValueError(f"`lifetimes` must have shape ({b.size},) or ({b.size}, seeds), got {T.shape}.")
    if not np.all(np.isfinite(b)):
        raise ValueError("`beta` must be finite.")
    if not 0 < level < 1:
        raise ValueError(f"`level` must lie in (0, 1), got {level!r}.")
    T = T.reshape(b.size, -1)
    if np.any(T[~np.isnan(T)] <= 0) or np.any(np.isinf(T)):
        raise ValueError("lifetimes must be positive and finite (NaN for none seen).")
    x = np.repeat(b, T.shape[1])
    y = T.ravel()
    ok = ~np.isnan(y)
    x, y = x[ok], np.log(y[ok])
    if x.size < 3 or np.unique(x).size < 2:
        raise ValueError(f"the fit needs at least three lifetimes over two values of beta, got {x.size} over "
                         f"{np.unique(x).size}.")
    fit = stats.linregress(x, y)
    q = stats.t.ppf(0.5 + level / 2.0, df=x.size - 2)
    resid = y - (fit.intercept + fit.slope * x)
    return LifetimeFit(float(fit.slope), (float(fit.slope - q * fit.stderr), float(fit.slope + q * fit.stderr)),
                       float(fit.intercept), float(level), int(x.size), (float(x.min()), float(x.max())),
                       float(np.std(resid, ddof=2)) if x.size > 2 else 0.0)


def two_cluster_merge_time(beta: float, m1: float, m2: float, gap: float, delta: float = 1e-4,
                           normalized: bool = True) -> float:
    r"""The time two point clusters of masses m₁, m₂ on S¹ at angular distance ``gap`` take to come within
    cos φ >= 1 − δ (the merge as :func:`particles.metastability.cluster_masses` sees it), under SA or USA
    (Q = K = V = I; the weighted two-point system, exact):

    .. math:: \dot φ = −e^{β\cos φ}\sin φ\,\Big[\frac{m_1}{m_2 e^{β} + m_1 e^{β\cos φ}}
              + \frac{m_2}{m_1 e^{β} + m_2 e^{β\cos φ}}\Big]\ \text{(SA)},\qquad
              \dot φ = −(m_1 + m_2) e^{β\cos φ}\sin φ\ \text{(USA)},

    T = ∫_{φ_δ}^{gap} dφ/|φ̇|, by adaptive quadrature. Near the antipodal saddle (gap → π) it grows like
    e^{2β} log(1/(π − gap))/(m₁/m₂ + m₂/m₁) (SA).

    Parameters
    ----------
    beta, m1, m2 : float
        β, and the masses (> 0).
    gap : float
        φ₀ in (φ_δ, π).
    delta : float
        The merge tolerance δ.
    normalized : bool
        SA (True) or USA.
    """
    from scipy.integrate import quad

    if not (m1 > 0 and m2 > 0):
        raise ValueError(f"the masses must be positive, got m1={m1!r}, m2={m2!r}.")
    end = float(np.arccos(1.0 - delta))
    if not end < gap < np.pi:
        raise ValueError(f"`gap` must lie in (arccos(1 - delta), pi) = ({end:.4g}, pi), got {gap!r}.")

    def rate(phi):  # |φ̇|, with e = e^{β(cos φ − 1)}: SA's denominators divided by e^{β}
        e = np.exp(beta * (np.cos(phi) - 1.0))
        if normalized:
            return e * np.sin(phi) * (m1 / (m2 + m1 * e) + m2 / (m1 + m2 * e))
        return (m1 + m2) * np.exp(beta) * e * np.sin(phi)

    val, _ = quad(lambda p: 1.0 / rate(p), end, gap, limit=400)
    return float(val)
