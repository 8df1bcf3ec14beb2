r"""Where a Transformer normalises its tokens: post-LN, pre-LN, peri-LN, Mix-LN, nGPT (docs/MATH.md §10).

Karagodin, Ge, Polyanskiy & Rigollet (arXiv 2510.22026) and nGPT (Loshchilov et al., arXiv 2410.01131). A token is
x = rθ, r = |x| > 0, θ = N(x) = x/|x| ∈ S^{d-1}, and attention is computed on the normalised tokens:

.. math::

    A_i = \sum_j \operatorname{softmax}_j(\beta\langle Q\theta_i, K\theta_j\rangle)\, V\theta_j
    \qquad (\text{the heads' average, summed over heads, never projected}),

``average(model, θ, w, θ)`` below (one place for every head). With P_θ y = y − ⟨θ, y⟩θ:

==========  ===============================  ===================================  ================================
name        continuous depth                 radius and direction                 layer of depth h
==========  ===============================  ===================================  ================================
``post``    θ̇ = P_θ A                         r = 1                                x ↦ N(x + h P_x A)  (GLPR §2.1)
``pre``     ẋ = A                            ṙ = ⟨θ, A⟩, θ̇ = P_θ A / r             x ↦ x + h A(N(x))
``peri``    ẋ = A / |A|                      ṙ = ⟨θ, A⟩/|A|, θ̇ = P_θ A/(r|A|)      x ↦ x + h N(A(N(x)))
``mix``     post for t < t_0, pre after      r = 1 until t_0                      post's, then pre's
``ngpt``    θ̇ = α P_θ A / |A|  (α > 0)       r = 1                                θ ↦ N(θ + hα(N(A) − θ))
==========  ===============================  ===================================  ================================

Each layer map is the explicit Euler step of its flow followed by a normalisation that changes the step by O(h²):
first order in h. post-LN's layer is today's N(x + h P_x A) (MATH.md §10 writes N(x + hA); the two differ by
O(h²): N(x + hA) = N(x + h P_x A/(1 + h⟨x, A⟩))). Post-LN's residual stream holds unit vectors: a Mix-LN run that
starts before t_0 normalises its tokens first (the output of a post-LN layer is N(·) of something), then runs
post-LN to t_0 and pre-LN from there with r(t_0) = 1.

``post`` is the model of every density solver of the library (the default, bit for bit the field of the heads).
The others are refused by the density solvers (:func:`density_refusal`) and run as particles
(``particles.simulate``, ``particles.discrete_depth``), which read the normalisation here, from
:func:`normalization_of`, and the average A from :func:`average` or the compiled ``meanfield.kernels.average`` —
never the heads' projected field P_θ A, which is post-LN's alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks
from ..domains.sphere.geometry import project_tangent

__all__ = ["Normalization", "NORMALIZATIONS", "POST", "as_normalization", "normalization_of", "average", "norms_of",
           "density_refusal"]

#: the variants, by name (docs/MATH.md §10)
NORMALIZATIONS = ("post", "pre", "peri", "mix", "ngpt")


@dataclass(frozen=True)
class Normalization:
    r"""Where the tokens are normalised (module docstring; docs/MATH.md §10).

    Parameters
    ----------
    kind : {"post", "pre", "peri", "mix", "ngpt"}
        post-LN (the default: today's model, tokens on S^{d-1}); pre-LN (ẋ = A, the residual stream unnormalised);
        peri-LN (ẋ = A/|A|); Mix-LN (post-LN for depth t < ``switch``, pre-LN after); nGPT (θ̇ = α P_θ A/|A|).
    alpha : float, optional
        nGPT's α > 0 (its "eigen learning rate": the speed of the direction); only for "ngpt", where it is required.
    switch : float, optional
        Mix-LN's depth t_0 where post-LN hands over to pre-LN; only for "mix", where it is required.

    Attributes
    ----------
    radial : bool
        The tokens carry a radius (pre, peri, mix: points of R^d \ {0}); else they are unit vectors.
    time_dependent : bool
        Mix-LN: its variant depends on the depth (:meth:`at`), with a breakpoint at t_0.
    """

    kind: str = "post"
    alpha: float | None = None
    switch: float | None = None

    def __post_init__(self):
        if not isinstance(self.kind, str) or self.kind not in NORMALIZATIONS:
            raise ValueError(f"`normalization` must be one of {NORMALIZATIONS}, got {self.kind!r}.")
        if self.kind == "ngpt":
            if self.alpha is None:
                raise ValueError("normalization 'ngpt' needs its α > 0: Normalization('ngpt', alpha=...).")
            alpha = checks.real(self.alpha, "alpha")
            if not (np.isfinite(alpha) and alpha > 0):
                raise ValueError(f"`alpha` (nGPT's speed of the direction) must be finite and > 0, got {self.alpha!r}.")
            object.__setattr__(self, "alpha", alpha)
        elif self.alpha is not None:
            raise ValueError(f"`alpha` belongs to nGPT; normalization {self.kind!r} takes none, got {self.alpha!r}.")
        if self.kind == "mix":
            if self.switch is None:
                raise ValueError("normalization 'mix' needs the depth t_0 where post-LN hands over to pre-LN: "
                                 "Normalization('mix', switch=t0).")
            switch = checks.real(self.switch, "switch")
            if not np.isfinite(switch):
                raise ValueError(f"`switch` (Mix-LN's t_0) must be finite, got {self.switch!r}.")
            object.__setattr__(self, "switch", switch)
        elif self.switch is not None:
            raise ValueError(f"`switch` belongs to Mix-LN; normalization {self.kind!r} takes none, got "
                             f"{self.switch!r}.")

    # ------------------------------------------------------------------ structure
    @property
    def radial(self) -> bool:
        return self.kind in ("pre", "peri", "mix")

    @property
    def time_dependent(self) -> bool:
        return self.kind == "mix"

    def at(self, t: float) -> "Normalization":
        """The variant at depth t: Mix-LN's post-LN before t_0 and pre-LN from t_0 on; every other is itself."""
        if self.kind != "mix":
            return self
        return POST if float(t) < self.switch else PRE

    def breakpoints(self, t0: float, t1: float) -> np.ndarray:
        """Mix-LN's t_0 where it lies inside (t0, t1) (the velocity jumps there); nothing for the others."""
        if self.kind == "mix" and t0 < self.switch < t1:
            return np.array([self.switch])
        return np.empty(0)

    # ------------------------------------------------------------------ the dynamics of the tokens
    def velocity(self, x, A) -> np.ndarray:
        r"""ẋ for tokens x (..., n, d) (unit vectors for post and nGPT) and the average A (..., n, d) computed at
        their directions θ = x/|x| (module docstring's table). Mix-LN: give the variant of the time, :meth:`at`.

        Raises ``FloatingPointError`` where peri-LN or nGPT divides by |A| = 0 (a token whose average vanishes has
        no direction to go).
        """
        kind = self._constant_kind()
        if kind == "pre":
            return np.array(A, dtype=float, copy=True)
        if kind == "peri":
            return A / self._length(A)
        theta = x / np.linalg.norm(x, axis=-1, keepdims=True)
        if kind == "post":
            return project_tangent(theta, A)
        return self.alpha * project_tangent(theta, A) / self._length(A)  # ngpt

    def layer(self, x, A, h: float) -> np.ndarray:
        r"""One layer of depth h at tokens x with the average A at their directions (module docstring's table):
        post N(x + h P_θ A), pre x + hA, peri x + h A/|A|, nGPT N(θ + hα(A/|A| − θ))."""
        kind = self._constant_kind()
        if kind == "pre":
            return x + h * A
        if kind == "peri":
            return x + h * (A / self._length(A))
        theta = x / np.linalg.norm(x, axis=-1, keepdims=True)
        y = theta + h * project_tangent(theta, A) if kind == "post" else \
            theta + (h * self.alpha) * (A / self._length(A) - theta)
        return y / np.linalg.norm(y, axis=-1, keepdims=True)

    def _constant_kind(self) -> str:
        if self.kind == "mix":
            raise ValueError("Mix-LN's variant depends on the depth: take that of a time, normalization.at(t).")
        return self.kind

    def _length(self, A) -> np.ndarray:
        length = np.linalg.norm(A, axis=-1, keepdims=True)
        if np.any(length == 0.0):
            i = np.argwhere(length[..., 0] == 0.0)[0]
            raise FloatingPointError(f"normalization {self.kind!r} divides the average A by |A|, but A = 0 at token "
                                     f"{tuple(int(k) for k in i)}: its direction A/|A| is undefined there.")
        return length

    def __repr__(self) -> str:
        if self.kind == "ngpt":
            extra = f", alpha={self.alpha:g}"
        elif self.kind == "mix":
            extra = f", switch={self.switch:g}"
        else:
            extra = ""
        return f"Normalization({self.kind!r}{extra})"


POST = Normalization("post")
PRE = Normalization("pre")


def as_normalization(value) -> Normalization:
    """A :class:`Normalization` from itself or a name ("post", "pre", "peri"; "ngpt" and "mix" need their
    parameter: ``Normalization('ngpt', alpha=...)``, ``Normalization('mix', switch=...)``)."""
    if isinstance(value, Normalization):
        return value
    if not isinstance(value, str):
        raise TypeError(f"`normalization` must be one of {NORMALIZATIONS} or a Normalization, got "
                        f"{type(value).__name__}.")
    return Normalization(value)


def normalization_of(model) -> Normalization:
    """The normalisation of ``model``: a :class:`~meanfield.models.Transformer`'s own, post-LN for anything else
    (a head or heads alone are today's model)."""
    norm = getattr(model, "normalization", None)
    return norm if isinstance(norm, Normalization) else POST


def average(model, points, weights, queries) -> np.ndarray:
    r"""A = Σ_h u_h(queries), the heads' averages before any projection (module docstring), shape (..., m, d).

    The reference sum (NumPy, row chunks); ``meanfield.kernels.average`` is its compiled twin. No input checks: the
    callers pass unit vectors (the directions θ) and their weights.
    """
    from .base import heads

    hs = heads(model)
    for h in hs:
        if getattr(h, "causal", False):
            raise ValueError(f"{h!r} is causal: the normalisation variants take non-causal heads.")
    return sum(h.average(points, weights, queries) for h in hs)


def norms_of(x) -> np.ndarray:
    """|x| row by row, shape (..., n), with ``ValueError`` naming the first token of radius 0 (pre/peri/mix-LN
    tokens are x = rθ with r > 0: the direction of 0 is undefined)."""
    r = np.linalg.norm(x, axis=-1)
    if np.any(r == 0.0):
        i = tuple(int(k) for k in np.argwhere(r == 0.0)[0])
        raise ValueError(f"`x0`: token {i[-1] if len(i) == 1 else i} has radius r = |x| = 0; tokens are x = rθ with "
                         "r > 0 (the direction θ = x/|x| of the zero vector is undefined).")
    return r


def density_refusal(model, grids: bool = False) -> str | None:
    """Why the density solvers (grids, the Lagrangian measure) cannot take ``model``, or None: they solve post-LN
    attention with a finite β, whose field P_θA their sums give (spectral, separable, moments, the divergence the
    Lagrangian measure needs). Pre-, peri- and Mix-LN carry the radius (a law on S^{d-1} × (0, ∞); Mix-LN from its
    post-LN stretch on, ``Transformer.at(t)`` marking the stretch's model with ``stretch_of``, so that a solve is
    refused at its start, not at t_0); hardmax attention's field jumps across its cells. All of them run as particles.

    nGPT's α P_θA/|A| stays on the sphere; it needs |A|, the length of the average (its normal part ⟨θ, A⟩ too),
    which only the grids' quadrature sums give: with ``grids`` true (the question of a grid on the circle or S²,
    :attr:`meanfield.domains.Domain.quadrature_of_any_field`) it is taken, otherwise refused (the Lagrangian
    measure would need div(A/|A|), which no sum here gives)."""
    norm = getattr(model, "stretch_of", None) or normalization_of(model)  # Mix-LN's post-LN stretch is Mix-LN's
    run = "run its particles (particles.simulate, particles.discrete_depth)"
    if norm.radial:
        radial = ("; on the circle (d = 2), pre- and peri-LN densities of (direction, log r) are "
                  "meanfield.solve_radial's" if norm.kind in ("pre", "peri") else "")
        return (f"normalization {norm!r} carries the radius: its tokens x = rθ have a law on S^(d-1) × (0, ∞) "
                "(direction × radius; the direction turns at speed 1/r), which the sphere's density solvers do not "
                f"represent — they solve laws on S^(d-1) moved by post-LN's P_θA{radial}; or {run}")
    if norm.kind == "ngpt" and not grids:
        return (f"normalization {norm!r} stays on the sphere, but its field αP_θA/|A| divides by |A|, the length of "
                "the average (its normal part included): the fast sums (spectral, moments) give P_θA alone and the "
                "Lagrangian measure would need div(A/|A|); its densities are the grids' on the circle and S² "
                f"(representation='grid', strategy 'quadrature'), or {run}")
    from .base import heads

    try:
        hs = heads(model)
    except TypeError:
        return None
    if any(getattr(h, "kind", None) == "hardmax" for h in hs):
        return ("hardmax attention (β = ∞) has no density solver: a density's tokens attend to the maximisers of "
                "⟨Qx, Ky⟩ over its support, a null set, and the field jumps across the cells' boundaries, so the "
                "continuity equation with it is not the limit of the softmax ones (MATH.md §11); run particles "
                "(particles.simulate, particles.discrete_depth)")
    return None
