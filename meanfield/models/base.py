"""What every attention head shares: Q, K, V checked once, the measure checks, row chunks.

A *head* is an immutable dataclass with matrices Q, K, V (``None`` means the
identity of any dimension). Every model — one head or a sum of heads — has
``heads`` (a tuple of heads), ``dim`` (the d its matrices fix, or None),
``manifold`` (where its tokens live: "sphere", S^{d-1} with the circle included, or
"euclidean", R^d), ``kind`` (its name in study files, :mod:`.registry`), ``zonal``
(a :class:`Zonal` record or None) and ``field(points, weights, queries)``.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from ..core import checks
from .context import ContextScaling
from .schedule import Layers, breakpoints, is_time_dependent

__all__ = ["Head", "Zonal", "heads", "repulsive", "check_weights", "row_chunks", "identity_multiple", "tilted_moments",
           "softmax_jacobian", "log_kernel_excess", "CHUNK"]

#: Work arrays of the pairwise sums are chunked to at most this many entries.
CHUNK = 1 << 21

class Zonal(NamedTuple):
    """A zonal model's kernel: e^{β⟨Qx,Ky⟩} = e^{beta⟨x,y⟩} with ``beta`` = βqk, and V = ``c``·I (MATH.md §2.1;
    :data:`meanfield.domains.zonal.ZONAL_RULE`)."""

    beta: float
    c: float


class Head:
    """Mixin of the dataclass heads: validates ``Q``, ``K``, ``V`` in ``__post_init__``.

    ``min_dim`` is the smallest d allowed (2 on the sphere, 1 in R^d).
    """

    min_dim = 2
    manifold: str  # "sphere" (S^{d-1}) or "euclidean" (R^d): a class constant of each model
    Q: np.ndarray | None
    K: np.ndarray | None
    V: np.ndarray | None
    #: the weights that may depend on time (:mod:`.schedule`): a callable of t or a schedule of layers
    time_fields = ("Q", "K", "V", "beta")

    # ------------------------------------------------------------------ what a kind offers (its fast paths)
    #: True where the field is X = P_x u on the sphere with u the SA/USA average of Vy under e^{β⟨Qx,Ky⟩} (attributes
    #: ``beta``, ``Q``, ``K``, ``V``, ``normalized``, ``causal``, ``decay``, ``rope``): what the compiled pairwise sums
    #: (:mod:`meanfield.kernels`), the fused RK4 and the span reduction of the particles, the S² moments and E_β of
    #: point sets compute. A new kind is False and runs by its own ``field`` (strategy "quadrature").
    exp_kernel = False
    #: The key of the compiled rows of :mod:`meanfield.kernels.euclidean` that sum this R^d head's field (None: none,
    #: its own ``field`` only).
    compiled_rows = None
    #: A model with attention and feed-forward blocks, weights and a normalisation (a Transformer: ``attention``,
    #: ``feedforward``, ``weights``, ``normalization``, ``drift``); False for attention alone.
    has_blocks = False
    #: Its own discrete layer, a method ``layer_map(points, weights, gamma)`` (hardmax's AFZ map), or None: the layer
    #: is the step of its flow (:func:`meanfield.solvers.depth.layer_map`).
    layer_map = None
    #: Why this head has no Gaussian closure (:meth:`gaussian_closure`), or None where it has one.
    gaussian_refusal = None
    #: The position terms of causal attention (docs/MATH.md §13): the decay λ of the mask e^{−λ(s − τ)}, the RoPE
    #: frequency ω, and whether either is non-zero; a head without positions has none.
    decay = 0.0
    rope = 0.0
    weighs_positions = False
    #: Why the compiled pairwise sums do not take this head although its kind has them, or None.
    compiled_refusal = None

    @property
    def sparse_refusal(self) -> str | None:
        """Why this head's ``average`` does not take its points (keys) as a 2-D scipy.sparse array, or None where
        it does (:mod:`meanfield.core.tokens`; a kind that does says so by its own property)."""
        return f"{type(self).__name__}'s sums take dense points only"

    def gaussian_closure(self, mean, cov) -> tuple[np.ndarray, np.ndarray]:
        """(M, c) with Γ(x) = M x + c on the Gaussian N(mean, cov) (:mod:`meanfield.analysis.gaussian`): ``TypeError`` saying
        why for a kind without a closure (its :attr:`gaussian_refusal`)."""
        why = self.gaussian_refusal or (f"no Gaussian closure for {type(self).__name__}: the closures are those of "
                                        "softmax, L2 and Sinkhorn attention and their multi-head sums.")
        raise TypeError(why)

    #: k with kernel(x, y) = k(x − y) of a normalised R^d head Γ(x) = V ∫k y dμ / ∫k dμ, a function of offsets
    #: z (..., d) → (...), or None (what the finite volumes' FFT convolution needs; L2 with Q = K offers it).
    translation_kernel = None
    #: d ↦ B (d×d) of a normalised R^d head whose kernel is e^{⟨Bx, y⟩} alone, Γ(x) = V ∫e^{⟨Bx,y⟩} y dμ /
    #: ∫e^{⟨Bx,y⟩} dμ, or None (what the finite volumes' separable sums need; softmax offers it).
    tilt_matrix = None

    @property
    def energy_kernel(self) -> Zonal | None:
        """The zonal kernel e^{beta⟨x,y⟩} of the interaction energy E_β(μ) = (1/2β)∬e^{beta⟨x,y⟩}dμdμ the solvers record
        along this model, its ``c`` the direction in which the noiseless flow moves E_β (c > 0: non-decreasing,
        GLPR Lemma 3.7; c = 0: none known), or None where the kernel is not zonal: a head's own :attr:`zonal`."""
        return getattr(self, "zonal", None)

    def _check_noise(self) -> None:
        object.__setattr__(self, "noise", checks.noise(self.noise))

    def _check_matrices(self) -> None:
        dims = set()
        for name in ("Q", "K", "V"):
            value = getattr(self, name)
            if isinstance(value, Layers):  # every layer checked now
                mats = tuple(checks.square_matrix(M, f"{name} (layer {k})", self.min_dim)
                             for k, M in enumerate(value.values))
                sizes = [M.shape[0] for M in mats if M is not None]
                for k, M in enumerate(mats):
                    if M is not None and M.shape[0] != sizes[0]:
                        raise ValueError(f"`{name}` (layer {k}) is {M.shape[0]}×{M.shape[0]} but its earlier layers "
                                         f"are {sizes[0]}×{sizes[0]}: every layer acts on one R^d.")
                object.__setattr__(self, name, Layers(mats, value.edges))
                dims |= set(sizes)
                continue
            if is_time_dependent(value):  # checked where it is first evaluated (:meth:`at`)
                continue
            M = checks.square_matrix(value, name, self.min_dim)
            object.__setattr__(self, name, M)
            if M is not None:
                dims.add(M.shape[0])
        if len(dims) > 1:
            raise ValueError(f"`Q`, `K`, `V` must share one dimension d, got sizes {sorted(dims)}.")

    def _check_scalar(self, name: str, check) -> None:
        """A scalar weight: a constant checked by ``check``, each layer of a schedule likewise, a callable later."""
        value = getattr(self, name)
        if isinstance(value, ContextScaling):  # β_n: checked where n is known (:func:`.context.at_context`)
            return
        if isinstance(value, Layers):
            object.__setattr__(self, name, Layers(tuple(check(v, f"{name} (layer {k})")
                                                        for k, v in enumerate(value.values)), value.edges))
        elif not is_time_dependent(value):
            object.__setattr__(self, name, check(value, name))

    # ------------------------------------------------------------------ time dependence (:mod:`.schedule`)
    @property
    def time_dependent(self) -> bool:
        return any(is_time_dependent(getattr(self, n, None)) for n in self.time_fields)

    def at(self, t: float, layer_time: float | None = None):
        """The constant head of time t (itself where nothing depends on time); a callable's value is checked here
        (shape, finite entries), the error naming the weight and the time.

        ``layer_time`` picks the layer of the schedules (default t): an integration step ends exactly at a layer
        boundary t_k, and its last stages (at t_k) belong to the layer the step started in, not to the next —
        the integrators pass the step's start."""
        if not self.time_dependent:
            return self
        lt = float(t) if layer_time is None else float(layer_time)
        dependent = [n for n in self.time_fields if is_time_dependent(getattr(self, n, None))]
        # a schedule's layer is one model for all its times (its precomputations kept); a callable's, per time
        key = tuple(getattr(self, n).index(lt) if isinstance(getattr(self, n), Layers) else float(t)
                    for n in dependent)
        cache = self.__dict__.setdefault("_at", {})
        if key in cache:
            return cache[key]
        values = {n: getattr(self, n)(lt if isinstance(getattr(self, n), Layers) else t) for n in dependent}
        where = f"the value at t = {t:g} of the time-dependent weight {', '.join(f'`{n}`' for n in values)}"
        try:
            head = dataclasses.replace(self, **values)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"{exc} ({where})") from None
        # one dimension for all times: the constants' and first layers', else the first value's
        d = self.dim if self.dim is not None else self.__dict__.setdefault("_first_dim", head.dim)
        if head.dim is not None and d is not None and head.dim != d:
            raise ValueError(f"{where} is {head.dim}×{head.dim}, but the model's matrices are {d}×{d}.")
        if len(cache) > 64:
            cache.clear()
        cache[key] = head
        return head

    def breakpoints(self, t0: float, t1: float) -> np.ndarray:
        """The layer boundaries of its schedules inside (t0, t1): where the field jumps."""
        return breakpoints([getattr(self, n, None) for n in self.time_fields], t0, t1)

    def _constant(self) -> None:
        if self.time_dependent:
            raise TypeError(f"{type(self).__name__} has time-dependent weights: evaluate the model of a time, "
                            "model.at(t), then its field.")

    @property
    def dim(self) -> int | None:
        """The ambient dimension d fixed by the matrices (the first layer's for schedules), or None if all are
        identities or callables."""
        for M in (self.Q, self.K, self.V):
            if isinstance(M, Layers):
                M = next((m for m in M.values if m is not None), None)
            if M is not None and not is_time_dependent(M):
                return M.shape[0]
        return None

    @property
    def heads(self) -> tuple:
        """``(self,)``: a single head (see :class:`MultiHeadAttention` for sums of heads)."""
        return (self,)

    def matrices(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Q, K, V) as d×d arrays (the identity where ``None``)."""
        self._constant()
        eye = np.eye(d)
        return tuple(eye if M is None else M for M in (self.Q, self.K, self.V))

    def A(self, d: int) -> np.ndarray:
        """A = KᵀQ, so that ⟨Qx, Ky⟩ = ⟨Ax, y⟩."""
        Q, K, _ = self.matrices(d)
        return K.T @ Q

    def check_dim(self, d: int) -> None:
        """``ValueError`` if the matrices do not act on R^d (``TypeError`` for a time-dependent head: its field is
        that of ``at(t)``)."""
        self._constant()
        checks.matrices_act_on(self.dim, d)


def heads(model) -> tuple:
    """The heads of a model: its own tuple for multi-head, ``(model,)`` for one head."""
    h = getattr(model, "heads", None)
    if not isinstance(h, tuple) or not all(isinstance(x, Head) for x in h):
        raise TypeError(f"`model` must be an attention model from meanfield.models, got {type(model).__name__}.")
    return h


def repulsive(model) -> bool:
    """Whether a head of ``model`` (a Transformer's attention heads) has a constant β < 0, or a schedule with a
    layer of β < 0: repulsive attention (MATH.md §13), which only some solvers take
    (:attr:`meanfield.domains.Domain.repulsion_refusal`). A β(t) given as a callable is not evaluated here."""
    hs = getattr(model, "heads", None) or ()
    for h in hs:
        b = getattr(h, "beta", None)
        values = b.values if isinstance(b, Layers) else (b,)
        if any(isinstance(v, (int, float, np.floating)) and v < 0 for v in values):
            return True
    return False


def check_weights(weights, points) -> np.ndarray:
    """One finite weight per point."""
    weights = np.asarray(weights, dtype=float)
    if weights.shape != points.shape[:-1]:
        raise ValueError(f"`weights` must have shape {points.shape[:-1]} (one per point), got {weights.shape}.")
    if not np.all(np.isfinite(weights)):
        raise ValueError("`weights` contains non-finite values (NaN or inf).")
    return weights


def row_chunks(m: int, n: int) -> list[slice]:
    """Slices of the m query rows such that a chunk of rows × n points has at most :data:`CHUNK` entries."""
    step = max(1, CHUNK // max(n, 1))
    return [slice(i, min(m, i + step)) for i in range(0, m, step)]


def identity_multiple(M: np.ndarray | None) -> float | None:
    """c if ``M`` is c·I (``None`` counts as I), else None."""
    if M is None:
        return 1.0
    c = M[0, 0]
    return float(c) if np.array_equal(M, c * np.eye(M.shape[0])) else None


def tilted_moments(logits, weights, points) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""log Z, E[y] and E[y yᵀ] under the laws π_i(dy) ∝ Σ_j w_j e^{logits_ij} δ_{y_j}, one per row.

    Parameters
    ----------
    logits : ndarray, shape (m, n)
    weights : ndarray, shape (n,)
    points : ndarray, shape (n, d)

    Returns
    -------
    log_z : ndarray, shape (m,)
        log Σ_j w_j e^{logits_ij} (exponents shifted by their row maximum).
    mean : ndarray, shape (m, d)
    second : ndarray, shape (m, d, d)
        The second moments; the covariance is ``second − mean ⊗ mean``.
    """
    m, n = logits.shape
    d = points.shape[-1]
    outer = (points[:, :, None] * points[:, None, :]).reshape(n, d * d)
    cols = np.concatenate([points, outer], axis=1)
    log_z = np.empty(m)
    mom = np.empty((m, d + d * d))
    for sl in row_chunks(m, n):
        s = logits[sl]
        smax = np.max(s, axis=-1, keepdims=True)
        e = np.exp(s - smax) * weights
        Z = np.sum(e, axis=-1, keepdims=True)
        if np.any(Z <= 0):
            raise ValueError("the softmax normaliser is not positive: the weights must describe a positive measure.")
        mom[sl] = (e @ cols) / Z
        log_z[sl] = np.log(Z[:, 0]) + smax[:, 0]
    return log_z, mom[:, :d], mom[:, d:].reshape(m, d, d)


def _logits(A, scale, points, queries, offsets):
    logits = scale * (queries @ A.T) @ points.T
    if offsets is not None:
        logits += offsets[None, :]
    return logits


def softmax_jacobian(A, V, scale, points, weights, queries, offsets=None) -> tuple[np.ndarray, np.ndarray]:
    r"""Γ = E_π[Vy] and DΓ = scale·V C_x A under π_x ∝ w_j e^{scale⟨Ax, y_j⟩ + offset_j} (C_x its covariance).

    The average of every normalised kernel of the project (SA on the sphere, softmax, L2 and Sinkhorn
    in R^d) and its whole Jacobian in x, shape (m, d, d); unbatched.
    """
    _, mean, second = tilted_moments(_logits(A, scale, points, queries, offsets), weights, points)
    cov = second - mean[:, :, None] * mean[:, None, :]
    return mean @ V.T, scale * (V @ cov @ A)


def log_kernel_excess(A, scale, radius, points, weights, queries, offsets=None) -> np.ndarray:
    r"""log(sup_{|y| <= R} e^{scale⟨Ax,y⟩} / Z_μ(x)) with Z_μ(x) = Σ_j w_j e^{scale⟨Ax,y_j⟩ + offset_j}, shape (m,).

    The supremum of the logits over |y| <= R is scale·R|Ax| (offsets <= 0 are dropped from it: an upper
    bound); R = 1 on the sphere. The factor by which the a posteriori L_μ(x) exceeds v(1 + 2a_μ)
    (:mod:`meanfield.models.bounds`).
    """
    log_z, _, _ = tilted_moments(_logits(A, scale, points, queries, offsets), weights, points)
    return scale * float(radius) * np.linalg.norm(queries @ A.T, axis=-1) - log_z
