r"""Time-dependent weights (CACP; MATH.md §7 of the shared notes, docs/MATH.md §8): Q(t), K(t), V(t), β(t).

A weight of a model is a constant, a callable ``t ↦ value`` (checked at its first evaluation: shape and finite
entries, the error naming the argument and the time), or a piecewise-constant schedule of layers
(:func:`layers`: layer k on [t_k, t_{k+1}), the weights of a real Transformer's k-th layer). A model with any
time-dependent weight answers ``model.at(t)`` — the constant model of that time — and ``breakpoints(t0, t1)``, the
layer boundaries inside (t0, t1), where every integrator of the library stops exactly (the field jumps there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import checks

__all__ = ["Layers", "layers", "is_time_dependent", "evaluate", "breakpoints", "piecewise_constant"]


@dataclass(frozen=True, eq=False)
class Layers:
    """A piecewise-constant schedule: ``values[k]`` on [``edges[k]``, ``edges[k + 1]``) (the last layer also at its
    right end and beyond, as the output after the last layer). Build it with :func:`layers`."""

    values: tuple
    edges: np.ndarray

    def __call__(self, t: float):
        k = int(np.searchsorted(self.edges, float(t), side="right") - 1)
        return self.values[min(max(k, 0), len(self.values) - 1)]

    def index(self, t: float) -> int:
        """The layer at time t."""
        return int(min(max(np.searchsorted(self.edges, float(t), side="right") - 1, 0), len(self.values) - 1))

    def breakpoints(self, t0: float, t1: float) -> np.ndarray:
        """The layer boundaries strictly inside (t0, t1)."""
        inner = self.edges[1:-1]
        return inner[(inner > t0) & (inner < t1)]

    @property
    def depth(self) -> float:
        return float(self.edges[-1] - self.edges[0])

    def __repr__(self) -> str:
        return f"layers({len(self.values)} layers on [{self.edges[0]:g}, {self.edges[-1]:g}])"


def layers(values, depths=1.0, start: float = 0.0) -> Layers:
    """A schedule of layers: ``values`` (a sequence of per-layer weights, e.g. an array of shape (layers, d, d) or
    a list of numbers), each held for its depth (``depths``: one positive number for all, or one per layer) from
    ``start``."""
    values = list(values)
    if not values:
        raise ValueError("`values` must hold at least one layer.")
    d = np.asarray(depths, dtype=float)
    if d.ndim > 1 or (d.ndim == 1 and d.size != len(values)):
        raise ValueError(f"`depths` must be one number or one per layer ({len(values)}), got {depths!r}.")
    d = np.broadcast_to(d, (len(values),))
    if not np.all(np.isfinite(d)) or np.any(d <= 0):
        raise ValueError(f"`depths` must be positive and finite (one, or one per layer), got {depths!r}.")
    start = checks.real(start, "start")
    return Layers(tuple(values), start + np.concatenate([[0.0], np.cumsum(d)]))


def is_time_dependent(value) -> bool:
    return isinstance(value, Layers) or (callable(value) and not isinstance(value, np.ndarray))


def evaluate(value, t: float):
    """The weight at time t (constants as they are)."""
    return value(t) if is_time_dependent(value) else value


def piecewise_constant(model) -> bool:
    """Whether every time-dependent weight of every head of ``model`` is a schedule of layers (constant between its
    breakpoints), so that precomputations can be kept for a whole layer."""
    parts = getattr(model, "parts", None)  # a Transformer: its blocks (its splitting is piecewise constant)
    if parts is not None:
        return all(piecewise_constant(p) for p in parts)
    units = getattr(model, "heads", None) or (model,)  # the heads; a feed-forward block (no heads) itself
    return all(isinstance(getattr(h, n, None), Layers) for h in units for n in h.time_fields
               if is_time_dependent(getattr(h, n, None)))


def breakpoints(values, t0: float, t1: float) -> np.ndarray:
    """The layer boundaries of every schedule among ``values`` inside (t0, t1), sorted, unique."""
    out = [v.breakpoints(t0, t1) for v in values if isinstance(v, Layers)]
    return np.unique(np.concatenate(out)) if out else np.empty(0)
