r"""Observed orders of accuracy from a sequence of resolutions.

Two estimates, used by the regression tests and the convergence studies:

- against a reference: errors e_i at resolutions h_i, order p from the
  least-squares slope of log e against log h (:func:`observed_order`);
- self-convergence: solutions u_h, u_{h/r}, u_{h/r²} with no exact solution,
  p = log(‖u_h − u_{h/r}‖ / ‖u_{h/r} − u_{h/r²}‖) / log r
  (:func:`self_convergence_order`).

Reference: Roache, *Verification and Validation in Computational Science and
Engineering* (1998), §5.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["OrderFit", "observed_order", "self_convergence_order"]


@dataclass(frozen=True)
class OrderFit:
    """A fitted power law e ≈ C h^p.

    Attributes
    ----------
    order : float
        The slope p of log e against log h.
    order_stderr : float
        Its standard error (0 for two points).
    constant : float
        C.
    local_orders : ndarray
        log(e_i/e_{i+1}) / log(h_i/h_{i+1}) between consecutive resolutions.
    """

    order: float
    order_stderr: float
    constant: float
    local_orders: np.ndarray


def _positive_1d(x, name):
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"`{name}` must be 1-dimensional with at least 2 entries, got shape {x.shape}.")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(f"`{name}` must hold positive finite numbers, got {x!r}.")
    return x


def observed_order(h, errors) -> OrderFit:
    """Fit e ≈ C h^p to errors at resolutions h (step sizes or 1/n).

    Parameters
    ----------
    h : array_like, shape (k,)
        Resolutions (positive, distinct).
    errors : array_like, shape (k,)
        Positive errors at those resolutions.
    """
    h, e = _positive_1d(h, "h"), _positive_1d(errors, "errors")
    if h.shape != e.shape:
        raise ValueError(f"`h` and `errors` must have the same length, got {h.size} and {e.size}.")
    if np.unique(h).size != h.size:
        raise ValueError("`h` must hold distinct resolutions.")
    lh, le = np.log(h), np.log(e)
    local = np.diff(le) / np.diff(lh)
    if h.size == 2:
        return OrderFit(float(local[0]), 0.0, float(np.exp(le[0] - local[0] * lh[0])), local)
    fit = stats.linregress(lh, le)
    return OrderFit(float(fit.slope), float(fit.stderr), float(np.exp(fit.intercept)), local)


def self_convergence_order(coarse, medium, fine, ratio: float = 2.0, norm=None) -> float:
    """Order p from three solutions at resolutions h, h/r, h/r² (same shape arrays).

    ``norm`` maps a difference to a number (default: max |·|).
    """
    norm = (lambda a: float(np.max(np.abs(a)))) if norm is None else norm
    a, b, c = (np.asarray(u, dtype=float) for u in (coarse, medium, fine))
    if not (a.shape == b.shape == c.shape):
        raise ValueError(f"the three solutions must share a shape, got {a.shape}, {b.shape}, {c.shape}.")
    if not ratio > 1:
        raise ValueError(f"`ratio` must be > 1, got {ratio!r}.")
    d1, d2 = norm(a - b), norm(b - c)
    if d1 <= 0 or d2 <= 0:
        raise ValueError("successive differences must be positive to define an order.")
    return float(np.log(d1 / d2) / np.log(ratio))
