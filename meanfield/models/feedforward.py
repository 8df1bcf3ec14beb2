r"""The feed-forward (MLP) block of a Transformer layer (GLPR §2.3.2; docs/MATH.md §8.2).

Its velocity does not depend on the measure: each token moves on its own,

    on S^{d-1}:  X(x) = P_x W σ(A x + b),     in R^d:  X(x) = W σ(A x + b),

W ∈ R^{d×m}, A ∈ R^{m×d}, b ∈ R^m, σ applied entrywise. With F(x) = W σ(Ax + b) and its Jacobian
DF = W diag(σ'(Ax + b)) A, the divergences the Lagrangian measure and the characteristics need are

    in R^d:  div X = tr DF = Σ_k σ'_k (A W)_kk,
    on S^{d-1}:  div_S(P_x F) = tr DF − ⟨x, DF x⟩ − (d − 1)⟨x, F⟩

(the tangential part of DF traced over the tangent space, minus the mean curvature d − 1 of the unit sphere
times the normal component): the projection and the divergence are the domain's (``Domain.project``,
``Domain.divergence``), of the domain the block's ``manifold`` names in R^d. ReLU makes X only Lipschitz: its divergence jumps where a unit switches on
(docs/MATH.md §8.2 says what order the grids keep there).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.special import erf

from ..domains import for_manifold
from .schedule import Layers, breakpoints, is_time_dependent

__all__ = ["FeedForward", "ACTIVATIONS", "DEFAULT_ACTIVATION"]

_SQRT2 = np.sqrt(2.0)
_INV_SQRT2PI = 1.0 / np.sqrt(2.0 * np.pi)


def _relu(z):
    return np.maximum(z, 0.0)


def _relu_prime(z):
    return (z > 0).astype(float)


def _gelu(z):  # z Φ(z), the exact (erf) form
    return 0.5 * z * (1.0 + erf(z / _SQRT2))


def _gelu_prime(z):  # Φ(z) + z φ(z)
    return 0.5 * (1.0 + erf(z / _SQRT2)) + z * _INV_SQRT2PI * np.exp(-0.5 * z * z)


def _tanh_prime(z):
    t = np.tanh(z)
    return 1.0 - t * t


#: σ and σ' of each activation.
ACTIVATIONS = {
    "relu": (_relu, _relu_prime),
    "gelu": (_gelu, _gelu_prime),
    "tanh": (np.tanh, _tanh_prime),
    "identity": (lambda z: z, np.ones_like),
}

#: The activation of a block that names none, here and in study files ([model] activation): GELU, the σ of the
#: GPT and BERT networks whose trained weights studies load, and C¹ where ReLU is not (docs/MATH.md: ReLU).
DEFAULT_ACTIVATION = "gelu"

#: sup |σ'| (GELU: Φ(√2) + √2 φ(√2) = 1.1289...)
LIPSCHITZ = {"relu": 1.0, "gelu": float(_gelu_prime(np.sqrt(2.0))), "tanh": 1.0, "identity": 1.0}

MANIFOLDS = ("sphere", "euclidean")


def _matrix(value, name: str) -> np.ndarray:
    M = np.array(value, dtype=float)
    if M.ndim != 2 or 0 in M.shape:
        raise ValueError(f"`{name}` must be a non-empty 2-D array, got shape {M.shape}.")
    if not np.all(np.isfinite(M)):
        raise ValueError(f"`{name}` has non-finite entries.")
    M.setflags(write=False)
    return M


def _vector(value, name: str) -> np.ndarray:
    v = np.array(value, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"`{name}` must be a non-empty 1-D array, got shape {v.shape}.")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"`{name}` has non-finite entries.")
    v.setflags(write=False)
    return v


_CHECKS = {"W": _matrix, "A": _matrix, "b": _vector}


@dataclass(frozen=True, eq=False)
class FeedForward:
    r"""A feed-forward block X(x) = P_x W σ(Ax + b) on S^{d-1}, W σ(Ax + b) in R^d (GLPR §2.3.2; module docstring).

    Parameters
    ----------
    W : array_like, shape (d, m)
    A : array_like, shape (m, d)
    b : array_like, shape (m,), optional
        Zero by default.
    activation : {"gelu", "relu", "tanh", "identity"}
        σ, entrywise (GELU in its exact form z Φ(z)); :data:`DEFAULT_ACTIVATION` ("gelu") by default, as in study
        files.
    manifold : {"sphere", "euclidean"}
        Where the tokens live: S^{d-1} (the velocity projected on the tangent space) or R^d.

    ``W``, ``A`` and ``b`` may each be a callable of t or a schedule of layers
    (:func:`meanfield.models.layers`), like the weights of attention: ``at(t)`` is the block of time t. Add it to
    an attention model (``SelfAttention(...) + FeedForward(...)``) for a whole layer (:class:`Transformer`).
    """

    W: object
    A: object
    b: object = None
    activation: str = DEFAULT_ACTIVATION
    manifold: str = "sphere"

    kind = "feedforward"
    exp_kernel = False
    compiled_rows = None
    has_blocks = False  # alone; ``as_model`` makes it the Transformer it is
    translation_kernel = tilt_matrix = None
    layer_map = None
    time_fields = ("W", "A", "b")
    noise = 0.0  # the noise belongs to the dynamics: give it to the attention part
    zonal = None
    energy_kernel = None

    def __post_init__(self):
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"`activation` must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}.")
        if self.manifold not in MANIFOLDS:
            raise ValueError(f"`manifold` must be one of {MANIFOLDS}, got {self.manifold!r}.")
        for name in self.time_fields:
            value = getattr(self, name)
            if name == "b" and value is None:
                continue
            if isinstance(value, Layers):
                object.__setattr__(self, name, Layers(tuple(_CHECKS[name](v, f"{name} (layer {k})")
                                                            for k, v in enumerate(value.values)), value.edges))
            elif not is_time_dependent(value):
                object.__setattr__(self, name, _CHECKS[name](value, name))
        if not self.time_dependent:
            self._check_shapes()
        else:  # every layer of the schedules with the constants: the shapes of one layer at a time
            for t in np.unique(np.concatenate([v.edges[:-1] for v in (getattr(self, n) for n in self.time_fields)
                                               if isinstance(v, Layers)] or [np.zeros(1)])):
                if not any(is_time_dependent(getattr(self, n)) and not isinstance(getattr(self, n), Layers)
                           for n in self.time_fields):
                    self.at(t)

    def _check_shapes(self) -> None:
        W, A, b = self.W, self.A, self.b
        if W.shape[1] != A.shape[0]:
            raise ValueError(f"`W` is {W.shape[0]}×{W.shape[1]} and `A` is {A.shape[0]}×{A.shape[1]}: W's columns "
                             f"({W.shape[1]}) must equal A's rows ({A.shape[0]}), the hidden width m.")
        if A.shape[1] != W.shape[0]:
            raise ValueError(f"`A` has {A.shape[1]} columns but `W` has {W.shape[0]} rows: both must be the token "
                             "dimension d (A: R^d → R^m, W: R^m → R^d).")
        if b is not None and b.size != A.shape[0]:
            raise ValueError(f"`b` has {b.size} entries but `A` has {A.shape[0]} rows (the hidden width m).")
        if self.manifold == "sphere" and W.shape[0] < 2:
            raise ValueError(f"on the sphere the token dimension d must be >= 2, got W of shape {W.shape}.")

    # ------------------------------------------------------------------ time dependence (:mod:`.schedule`)
    @property
    def time_dependent(self) -> bool:
        return any(is_time_dependent(getattr(self, n)) for n in self.time_fields)

    def at(self, t: float, layer_time: float | None = None) -> "FeedForward":
        """The constant block of time t (itself where nothing depends on time); ``layer_time`` picks the layer of the
        schedules (as for attention: the integrators pass the step's start)."""
        if not self.time_dependent:
            return self
        lt = float(t) if layer_time is None else float(layer_time)
        dependent = [n for n in self.time_fields if is_time_dependent(getattr(self, n))]
        key = tuple(getattr(self, n).index(lt) if isinstance(getattr(self, n), Layers) else float(t) for n in dependent)
        cache = self.__dict__.setdefault("_at", {})
        if key in cache:
            return cache[key]
        values = {n: getattr(self, n)(lt if isinstance(getattr(self, n), Layers) else t) for n in dependent}
        try:
            block = dataclasses.replace(self, **values)
        except ValueError as exc:
            raise ValueError(f"{exc} (the value at t = {t:g} of the time-dependent weight "
                             f"{', '.join(f'`{n}`' for n in values)})") from None
        if len(cache) > 64:
            cache.clear()
        cache[key] = block
        return block

    def breakpoints(self, t0: float, t1: float) -> np.ndarray:
        return breakpoints([getattr(self, n) for n in self.time_fields], t0, t1)

    def _constant(self) -> None:
        if self.time_dependent:
            raise TypeError("FeedForward has time-dependent weights: evaluate the block of a time, block.at(t), "
                            "then its field.")

    @property
    def dim(self) -> int | None:
        """The token dimension d (W's rows; None while W is a callable)."""
        W = self.W
        if isinstance(W, Layers):
            W = W.values[0]
        return None if is_time_dependent(W) else W.shape[0]

    @property
    def heads(self) -> tuple:
        return ()

    def scaled(self, c: float) -> "FeedForward":
        """The block with velocity c X (W ↦ cW)."""
        self._constant()
        return dataclasses.replace(self, W=c * self.W)

    def speed_bound(self) -> float:
        """A bound on sup|X| + sup|∇X| on the unit sphere (what the solvers' default steps scale by): with
        L = sup|σ'| and σ(0) = 0, |F| <= ‖W‖L(‖A‖ + |b|), |DF| <= ‖W‖L‖A‖, and the projection adds |F| to the
        tangential derivative: ‖W‖L(3‖A‖ + 2|b|) (R^d: the same number bounds them on the unit ball)."""
        self._constant()
        b = 0.0 if self.b is None else float(np.linalg.norm(self.b))
        return float(np.linalg.norm(self.W, 2) * LIPSCHITZ[self.activation] * (3.0 * np.linalg.norm(self.A, 2) + 2.0 * b))

    # ------------------------------------------------------------------ the field
    def _pre(self, x):
        z = x @ self.A.T
        return z if self.b is None else z + self.b

    def check_dim(self, d: int) -> None:
        self._constant()
        if self.dim != d:
            raise ValueError(f"the feed-forward block acts on R^{self.dim} (W is {self.W.shape[0]}×{self.W.shape[1]}) "
                             f"but the points live in R^{d}.")

    def ambient(self, x) -> np.ndarray:
        """F(x) = W σ(Ax + b), shape (..., d)."""
        x = np.asarray(x, dtype=float)
        self.check_dim(x.shape[-1])
        return ACTIVATIONS[self.activation][0](self._pre(x)) @ self.W.T

    def ambient_and_jacobian(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(F(x), DF(x)) with DF = W diag(σ'(Ax + b)) A, shapes (..., d) and (..., d, d) (X = P_x F on the sphere)."""
        x = np.asarray(x, dtype=float)
        self.check_dim(x.shape[-1])
        sigma, sigma_prime = ACTIVATIONS[self.activation]
        z = self._pre(x)
        return sigma(z) @ self.W.T, np.einsum("ik,...k,kj->...ij", self.W, sigma_prime(z), self.A)

    def velocity(self, x) -> np.ndarray:
        """X(x): F(x) in R^d, its tangential part P_x F(x) = F − ⟨x, F⟩x on the sphere (the domain's
        ``project``); shape (..., d)."""
        F = self.ambient(x)
        return for_manifold(self.manifold, F.shape[-1]).project(x, F)

    def velocity_and_divergence(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(X(x), div X(x)) (module docstring; the surface divergence on the sphere)."""
        x = np.asarray(x, dtype=float)
        self.check_dim(x.shape[-1])
        sigma, sigma_prime = ACTIVATIONS[self.activation]
        z = self._pre(x)
        F = sigma(z) @ self.W.T
        s = sigma_prime(z)  # (..., m)
        trace = s @ np.einsum("kj,jk->k", self.A, self.W)  # tr DF = tr(W diag(s) A) = Σ_k s_k (AW)_kk

        def normal():  # ⟨x, DF x⟩ = Σ_k s_k (Ax)_k (Wᵀx)_k, where the domain asks for it (the sphere)
            return np.sum(s * (x @ self.A.T) * (x @ self.W), axis=-1)

        domain = for_manifold(self.manifold, x.shape[-1])
        return domain.project(x, F), domain.divergence(x, F, trace, normal)

    def field(self, points, weights, queries) -> np.ndarray:
        """X at ``queries``: the measure (points, weights) plays no part (the signature of attention's field)."""
        return self.velocity(queries)

    def field_and_divergence(self, points, weights, queries):
        return self.velocity_and_divergence(queries)

    def __repr__(self) -> str:
        if self.time_dependent:
            return f"FeedForward(time-dependent, activation={self.activation!r}, manifold={self.manifold!r})"
        return (f"FeedForward(d={self.W.shape[0]}, m={self.W.shape[1]}, activation={self.activation!r}, "
                f"manifold={self.manifold!r})")
