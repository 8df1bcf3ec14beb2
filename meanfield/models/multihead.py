"""Multi-head attention: the sum over heads of their fields (GLPR (2.7); CACP for R^d)."""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Sequence

import numpy as np

from ..core import checks
from .base import Head

__all__ = ["MultiHeadAttention"]


@dataclass(frozen=True, eq=False)
class MultiHeadAttention:
    """Multi-head attention: the sum over heads of their fields (GLPR (2.7); CACP for R^d).

    Parameters
    ----------
    heads : sequence of SelfAttention, or of R^d models (Softmax, L2, ...)
        At least one head, all on the sphere or all in R^d; each carries its
        own parameters (and no noise: the noise belongs to the dynamics).
    noise : float, default 0
        D >= 0, the noise of the dynamics (docs/MATH.md §7), as for one head.
    """

    heads: tuple = dc_field(default_factory=tuple)
    noise: float = 0.0

    kind = "multi-head"
    exp_kernel = False  # a sum of heads: its heads answer (``heads``)
    compiled_rows = None
    has_blocks = False
    layer_map = None

    def gaussian_closure(self, mean, cov) -> tuple[np.ndarray, np.ndarray]:
        """The sum of the heads' affine fields (M, c) on N(mean, cov) (:meth:`Head.gaussian_closure`)."""
        d = np.size(mean)
        M, c = np.zeros((d, d)), np.zeros(d)
        for h in self.heads:
            Mh, ch = h.gaussian_closure(mean, cov)
            M, c = M + Mh, c + ch
        return M, c

    translation_kernel = None  # several heads: no one kernel (:class:`~.base.Head`)
    tilt_matrix = None

    def __post_init__(self):
        heads = tuple(self.heads) if isinstance(self.heads, Sequence) else self.heads
        if not isinstance(heads, tuple) or len(heads) == 0:
            raise ValueError(f"`heads` must be a non-empty sequence of SelfAttention, got {self.heads!r}.")
        for i, h in enumerate(heads):
            if not isinstance(h, Head):
                raise TypeError(f"`heads[{i}]` must be an attention model, got {type(h).__name__}.")
        if len({h.manifold for h in heads}) > 1:
            raise ValueError(f"`heads` mix tokens of different domains: {sorted({h.manifold for h in heads})} (sphere: "
                             "SelfAttention, sequence: causal SelfAttention, euclidean: the R^d heads).")
        dims = {h.dim for h in heads if h.dim is not None}
        if len(dims) > 1:
            raise ValueError(f"the heads live in different dimensions: {sorted(dims)}.")
        for i, h in enumerate(heads):
            if h.noise:
                raise ValueError(f"`heads[{i}]` has noise = {h.noise:g}: the noise belongs to the dynamics, not to a "
                                 "head; give it as MultiHeadAttention(heads, noise=...).")
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "noise", checks.noise(self.noise))

    @property
    def dim(self) -> int | None:
        for h in self.heads:
            if h.dim is not None:
                return h.dim
        return None

    @property
    def zonal(self) -> None:
        """Multi-head models always use the generic (quadrature) path."""
        return None

    energy_kernel = None  # E_β of several heads is not one zonal kernel's

    @property
    def manifold(self) -> str:
        return self.heads[0].manifold

    @property
    def time_dependent(self) -> bool:
        return any(h.time_dependent for h in self.heads)

    def at(self, t: float, layer_time: float | None = None):
        """The heads of time t (itself where none depends on time); ``layer_time`` as in the heads' ``at``."""
        if not self.time_dependent:
            return self
        heads = tuple(h.at(t, layer_time) for h in self.heads)
        cache = self.__dict__.setdefault("_at", {})
        key = tuple(id(h) for h in heads)  # the heads' own caches make one layer one object
        if key not in cache:
            if len(cache) > 64:
                cache.clear()
            cache[key] = MultiHeadAttention(heads, noise=self.noise)
        return cache[key]

    def breakpoints(self, t0: float, t1: float) -> np.ndarray:
        b = [h.breakpoints(t0, t1) for h in self.heads]
        return np.unique(np.concatenate(b)) if b else np.empty(0)

    def field(self, points, weights, queries) -> np.ndarray:
        """Σ_h X_h[μ](queries), shape (..., m, d); see :meth:`SelfAttention.field`."""
        return type(self.heads[0]).sum_of_fields(self.heads, points, weights, queries)

    def field_and_divergence(self, points, weights, queries) -> tuple[np.ndarray, np.ndarray]:
        """Σ_h X_h[μ] and its divergence Σ_h div X_h[μ] (the divergence is linear; MATH.md §6)."""
        return type(self.heads[0]).sum_of_fields(self.heads, points, weights, queries, divergence=True)

    def average_and_jacobian(self, points, weights, queries) -> tuple[np.ndarray, np.ndarray]:
        """Σ_h u_h and Σ_h Du_h at ``queries`` (the ambient averages on the sphere, Γ in R^d); unbatched."""
        parts = [h.average_and_jacobian(points, weights, queries) for h in self.heads]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
