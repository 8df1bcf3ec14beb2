r"""Initial conditions for particle systems.

- :func:`uniform_sphere` — iid uniform on S^{d-1} (normalised Gaussians).
- :func:`orthogonal` — n <= d pairwise orthogonal unit vectors, uniformly
  rotated (the equiangular start of GLPR Theorem 6.8).
- :func:`sample` — iid points from a :class:`meanfield.Density`, drawn by its
  domain: on the circle by inversion of the exact CDF of its trigonometric
  interpolant (:func:`circle_cdf`), on S² by rejection against the
  addition-theorem bound, in R^d a cell by its mass then a uniform point in it.
"""

from __future__ import annotations

import numpy as np

from meanfield.core import checks
from meanfield.density import Density, Frame
from meanfield.domains.circle import cdf as circle_cdf

__all__ = ["uniform_sphere", "orthogonal", "sample", "circle_cdf"]


def _batch_shape(batch):
    if batch is None:
        return ()
    if isinstance(batch, (int, np.integer)):
        return (checks.count(batch, "batch"),)
    return tuple(checks.count(b, "batch") for b in batch)


def uniform_sphere(n: int, d: int, rng=None, batch=None) -> np.ndarray:
    """n iid points uniform on S^{d-1}, shape (*batch, n, d).

    Examples
    --------
    Normalised Gaussian vectors: unit length to round-off (a few units of 2⁻⁵³ from the norm and the division).

    >>> import numpy as np, particles as pt
    >>> x = pt.uniform_sphere(100, 3, rng=0, batch=2)
    >>> x.shape, bool(np.abs(np.linalg.norm(x, axis=-1) - 1).max() < 1e-14)
    ((2, 100, 3), True)
    """
    n, d = checks.count(n, "n"), checks.count(d, "d", 2)
    rng = checks.generator(rng)
    x = rng.standard_normal(_batch_shape(batch) + (n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def orthogonal(n: int, d: int, rng=None, batch=None) -> np.ndarray:
    """n pairwise orthogonal unit vectors in R^d (n <= d), uniformly rotated; shape (*batch, n, d)."""
    n, d = checks.count(n, "n"), checks.count(d, "d", 2)
    if n > d:
        raise ValueError(f"at most d = {d} vectors in R^{d} can be pairwise orthogonal, got n = {n}.")
    rng = checks.generator(rng)
    g = rng.standard_normal(_batch_shape(batch) + (d, n))
    q, r = np.linalg.qr(g)
    # fix the signs so that the law is Haar (Mezzadri 2007)
    q = q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    return np.swapaxes(q, -1, -2)


def sample(density: Density, n: int, rng=None, batch=None) -> np.ndarray:
    """n iid points from ``density``, drawn by its domain (module docstring).

    Parameters
    ----------
    density : meanfield.Density
        The law: a density on a ``CircleGrid``, ``SphereGrid`` or ``EuclideanGrid`` (its interpolant or expansion
        is sampled, not the nodal values; it need not have mass 1 — it is normalised).
    n : int >= 1
        Points per set.
    rng : int, numpy.random.Generator or None
        Seed or generator (``numpy.random.default_rng(rng)``); None draws fresh entropy.
    batch : int or tuple of int, optional
        Independent sets to draw at once (e.g. the realisations of a particle system): the leading shape.

    Returns
    -------
    ndarray, shape (*batch, n, d)
        Points of the domain in its ambient coordinates: unit vectors (cos θ, sin θ) on the circle, unit vectors
        in R³ on S², points of the box in R^d — what :func:`particles.simulate` takes as ``x0``.

    Raises
    ------
    TypeError
        ``density`` is not a :class:`meanfield.Density`.
    ValueError
        ``n`` or ``batch`` is not a positive integer, or the density dips below zero (it is then no law).

    Examples
    --------
    >>> import numpy as np, meanfield as mf, particles as pt
    >>> mu0 = mf.Density.from_function(mf.CircleGrid(128), lambda x: np.exp(2 * x[..., 0]))
    >>> pt.sample(mu0, 1000, rng=1, batch=4).shape
    (4, 1000, 2)
    """
    if not isinstance(density, Frame) or density.grid is None:  # a frame that is a density on a grid
        raise TypeError(f"`density` must be a meanfield.Density, got {type(density).__name__}.")
    n = checks.count(n, "n")
    rng = checks.generator(rng)
    return density.domain.sample(density, _batch_shape(batch) + (n,), rng)
