"""iid points from a density of cell averages in R^d: a cell by its mass, then a uniform point in it."""

from __future__ import annotations

import numpy as np

__all__ = ["sample"]


def sample(density, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Points of shape ``shape + (d,)``, exact for the piecewise-constant density of cell averages."""
    g = density.grid
    p = np.clip((density.values * g.weights).ravel(), 0.0, None)
    cells = rng.choice(p.size, size=int(np.prod(shape)), p=p / p.sum())
    idx = np.stack(np.unravel_index(cells, g.shape), axis=-1)
    lower = g.bounds[:, 0] + idx * g.widths
    x = lower + rng.uniform(size=lower.shape) * g.widths
    return x.reshape(shape + (g.dim,))
