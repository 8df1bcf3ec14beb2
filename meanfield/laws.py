r"""Initial laws on S^{d-1}: the von Mises–Fisher mixture (density and exact samples), and the perturbed uniform
and Poisson-kernel laws of study files, on any domain that defines them.

f(x) = Σ_j w_j C_d(κ_j) e^{κ_j⟨x, c_j⟩},  C_d(κ) = κ^{d/2−1} / ((2π)^{d/2} I_{d/2−1}(κ))

against surface measure (Mardia & Jupp, *Directional Statistics*, (9.3.4)); C_d(0) = 1/|S^{d-1}|.
On the circle (d = 2) it is the von Mises law e^{κ cos(θ − θ_j)}/(2π I_0(κ)).

:func:`uniform_noise`, :func:`poisson` and :func:`sample_poisson` are the study files' ``uniform-noise``
and ``poisson`` laws (:mod:`meanfield.study.build`): thin wrappers over the domain's own
:meth:`~meanfield.domains.Domain.uniform_noise`, :meth:`~meanfield.domains.Domain.poisson` and
:meth:`~meanfield.domains.Domain.sample_poisson`, so a domain that defines them (its ``initial_laws``) is
all they need. :func:`along_positions` makes any of them a law of tokens with positions (causal attention),
turned along the sequence.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from .core import checks
from . import domains
from .domains.sequence import along_positions

__all__ = ["von_mises_fisher", "sample_von_mises_fisher", "uniform_noise", "poisson", "sample_poisson",
           "along_positions"]


def _domain(where, name: str):
    """The domain of ``where``: a grid's, or a Domain or its name (``TypeError``/``ValueError`` otherwise)."""
    if isinstance(where, domains.Grid):
        return where.domain
    if isinstance(where, (domains.Domain, str)):
        return domains.get(where)
    raise TypeError(f"`{name}` must be a Domain, a domain's name or a Grid, got {type(where).__name__}.")


def uniform_noise(domain, amplitude: float, modes: int, rng=None, *, twist: float = 0.0):
    r"""The uniform law perturbed by ``modes`` random smooth modes, unnormalised, as a function of points.

    .. math::

        f(θ) = 1 + \sum_{k=1}^{m} a_k \cos(kθ + φ_k),\quad φ_k \sim U(0, 2π),\ a_k \sim U(A/2, A)
        \qquad\text{(circle)},

        f(x) = 1 + A \sum_{j=1}^{m} a_j e^{2(⟨x, u_j⟩ − 1)},\quad u_j \text{ uniform on } S^2,\ a_j \sim U(1/2, 1)
        \qquad\text{(sphere)},

    with A = ``amplitude`` and m = ``modes``; A < 1 keeps the circle's f positive, the sphere's is positive
    for every A >= 0. Normalise it on a grid with
    ``Density.from_function(grid, f).unit_mass()``.

    Parameters
    ----------
    domain : Domain, str or Grid
        Where the law lives (a grid stands for its domain).
    amplitude : float
        A >= 0.
    modes : int
        m >= 1: Fourier modes on the circle, bumps on the sphere.
    rng : numpy.random.Generator, int or None
        The random phases/centres and amplitudes, drawn in this order when the function is made (a Generator
        is used as it is, so the draws continue its stream).
    twist : float, keyword-only
        On tokens with positions ([0, 1] × S¹, the domain "sequence"): the law at position s is the circle's
        turned by 2π·twist·s (:meth:`meanfield.domains.sequence.Sequence.uniform_noise`); other domains take 0 only.

    Returns
    -------
    callable
        ``f(x)`` for points ``x`` of shape (..., d), values of shape (...).

    Raises
    ------
    ValueError
        The domain does not define the law (it is in the domain's ``initial_laws`` where it does), or
        ``amplitude``/``modes`` are out of range.
    """
    dom = _domain(domain, "domain")
    if not (np.isfinite(amplitude) and amplitude >= 0):
        raise ValueError(f"`amplitude` must be finite and >= 0, got {amplitude!r}.")
    if isinstance(modes, bool) or int(modes) != modes or modes < 1:
        raise ValueError(f"`modes` must be a positive integer, got {modes!r}.")
    if not np.isfinite(twist):
        raise ValueError(f"`twist` must be finite, got {twist!r}.")
    if not twist:
        return dom.uniform_noise(amplitude, int(modes), checks.generator(rng))
    if not dom.has_positions:
        raise ValueError(f"`twist` turns the law along the tokens' positions; points of the {dom.name} have none.")
    return dom.uniform_noise(amplitude, int(modes), checks.generator(rng), twist=float(twist))


def poisson(domain, a):
    r"""The Poisson-kernel (Möbius) law of the point ``a`` of the open unit ball, as a density of points.

    .. math::

        f_a(θ) = \frac{1}{2π}\frac{1 - |a|^2}{|e^{iθ} - a|^2}\quad\text{(circle, } a = a_1 + i a_2),
        \qquad
        f_a(x) = \frac{1}{|S^{D-1}|}\Big(\frac{1 - |a|^2}{|x - a|^2}\Big)^{D-1}\quad\text{(sphere)},

    normalised against arc length and surface area. They are the images of the uniform law under the Möbius
    maps, and at β = 0 the dynamics stay in the family (Ott–Antonsen on the circle, the Möbius-invariant
    family on S²; MATH.md §3, :mod:`meanfield.analysis.exact`).

    Parameters
    ----------
    domain : Domain, str or Grid
    a : array_like, shape (d,)
        A point with |a| < 1, d the dimension of the domain's points.

    Returns
    -------
    callable
        ``f(x)`` for points ``x`` of shape (..., d).

    Raises
    ------
    ValueError
        The domain does not define the law, or |a| >= 1.
    """
    return _domain(domain, "domain").poisson(a)


def sample_poisson(domain, a, shape, rng=None) -> np.ndarray:
    """Exact iid draws from :func:`poisson` of ``a``: uniform draws pushed by the Möbius map that carries the
    uniform law to it (MATH.md §3), shape ``shape + (d,)``; no grid involved.

    Parameters
    ----------
    domain : Domain, str or Grid
    a : array_like, shape (d,)
    shape : tuple of int
        The batch shape, e.g. (repeats, n).
    rng : numpy.random.Generator, int or None
    """
    return _domain(domain, "domain").sample_poisson(a, tuple(shape), checks.generator(rng))


def _mixture(centres, kappa, weights):
    c = np.atleast_2d(np.asarray(centres, dtype=float))
    if c.ndim != 2 or c.shape[1] < 2:
        raise ValueError(f"`centres` must have shape (m, d) with d >= 2, got {np.shape(centres)}.")
    norms = np.linalg.norm(c, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-12):
        raise ValueError(f"`centres` must be unit vectors; their norms are {norms}.")
    k = np.broadcast_to(np.asarray(kappa, dtype=float), (c.shape[0],))
    if not np.all(np.isfinite(k)) or np.any(k < 0):
        raise ValueError(f"`kappa` must be finite and >= 0, got {kappa!r}.")
    w = np.ones(c.shape[0]) if weights is None else np.broadcast_to(np.asarray(weights, dtype=float), (c.shape[0],))
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"`weights` must be finite, >= 0 and not all 0, got {weights!r}.")
    return c, k, w / w.sum()


def von_mises_fisher(x, centres, kappa, weights=None) -> np.ndarray:
    r"""The von Mises–Fisher mixture's density at unit vectors ``x`` (..., d), against surface measure.

    Parameters
    ----------
    x : array_like, shape (..., d)
    centres : array_like, shape (m, d)
        Unit mean directions c_j.
    kappa : float or array_like, shape (m,)
        Concentrations κ_j >= 0 (0: the uniform law).
    weights : array_like, shape (m,), optional
        Mixture weights (normalised to sum 1; default equal).

    Notes
    -----
    Evaluated as e^{κ(⟨x,c⟩−1)} κ^ν / ((2π)^{d/2} I_ν^e(κ)), ν = d/2 − 1, with the exponentially scaled
    Bessel function I^e: no overflow for large κ.
    """
    c, k, w = _mixture(centres, kappa, weights)
    x = np.asarray(x, dtype=float)
    d = x.shape[-1]
    if d != c.shape[1]:
        raise ValueError(f"`x` has dimension {d} but `centres` {c.shape[1]}.")
    nu = d / 2.0 - 1.0
    area = 2.0 * math.pi ** (d / 2.0) / math.gamma(d / 2.0)
    out = np.zeros(x.shape[:-1])
    for cj, kj, wj in zip(c, k, w):
        if kj == 0.0:
            out += wj / area
        else:
            norm = kj**nu / ((2.0 * math.pi) ** (d / 2.0) * special.ive(nu, kj))
            out += wj * norm * np.exp(kj * (x @ cj - 1.0))
    return out


def sample_von_mises_fisher(n: int, centres, kappa, weights=None, *, rng, batch: int | None = None) -> np.ndarray:
    """Exact iid samples of the mixture: a component by its weight, then scipy's sampler (Wood 1994).

    Parameters
    ----------
    n : int
        Points per sample.
    centres, kappa, weights
        As :func:`von_mises_fisher`.
    rng : numpy.random.Generator or int
        The seed, passed explicitly.
    batch : int, optional
        Independent samples: shape (batch, n, d) instead of (n, d).
    """
    c, k, w = _mixture(centres, kappa, weights)
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"`n` must be a positive integer, got {n!r}.")
    rng = checks.generator(rng)
    shape = (int(n),) if batch is None else (int(batch), int(n))
    d = c.shape[1]
    comp = rng.choice(c.shape[0], size=shape, p=w)
    out = np.empty(shape + (d,))
    for j in range(c.shape[0]):
        mask = comp == j
        m = int(mask.sum())
        if m == 0:
            continue
        if k[j] == 0.0:
            g = rng.normal(size=(m, d))
            out[mask] = g / np.linalg.norm(g, axis=1, keepdims=True)
        else:
            out[mask] = stats.vonmises_fisher(c[j], k[j]).rvs(m, random_state=rng).reshape(m, d)
    return out

