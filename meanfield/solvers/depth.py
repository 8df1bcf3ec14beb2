r"""Discrete depth: the Transformer's layer map itself, beside the continuous flow it discretises (GLPR §2.1–2.2;
docs/MATH.md §8.3).

A layer of depth h moves every token by the field of the current tokens and normalises:

    sphere:  T_k(x) = (x + h X_k[μ_k](x)) / |x + h X_k[μ_k](x)|,     μ_{k+1} = (T_k)_# μ_k,
    RMS:     T_k(x) = √d (x + h X_k[μ_k](x)) / |x + h X_k[μ_k](x)|   (x / RMS(x), RMS(x) = |x|/√d),
    none:    T_k(x) = x + h X_k[μ_k](x)                              (R^d, the residual stream alone),

X_k the model of the layer's start t_k = t_0 + k h (a schedule's layer k; a callable's value at t_k). A
:class:`~meanfield.models.Transformer` split by Lie (GLPR (2.8)) or Strang pushes its blocks in turn, each
normalised; summed, one push with the summed field.

That is post-LN. A Transformer's ``normalization`` other than post-LN (docs/MATH.md §10;
:mod:`meanfield.models.normalization`, the one place that states them) sets the layer itself, from the heads'
average A at the directions θ = x/|x|: pre-LN x ↦ x + hA, peri-LN x ↦ x + h A/|A|, nGPT θ ↦ N(θ + hα(A/|A| − θ)),
Mix-LN post-LN's layers while t_k < t_0 and pre-LN's from there (the argument ``projection`` is then "auto"). Each
is the explicit Euler step of its flow up to O(h²): first order in h. Hardmax attention (β = ∞,
:class:`~meanfield.models.Hardmax`) takes the map of Alcalde, Fantuzzi & Zuazua, x ↦ x + γ(u − x) (normalised on the
sphere) with γ = h <= 1 (docs/MATH.md §11).

On the sphere the layer is the explicit Euler step followed by the retraction: since X is tangent,
|x + hX|² = 1 + h²|X|², and T_k(x) = x + hX − (h²/2)|X|² x + O(h³) matches the exact flow's normal
acceleration ⟨x, ẍ⟩ = −|ẋ|² to second order. Its local error is (h²/2) P_x ẍ + O(h³), so after K = T/h layers
the tokens differ from the continuous-depth solution by h e(T) + O(h²), e the solution of

    ė = DF(y(t)) e − ½ P ÿ(t),   e(0) = 0,

F the (interacting) velocity of all the tokens, ÿ = DF(y) F(y) (Hairer, Nørsett & Wanner, *Solving ODEs I*,
§II.8: the global error's asymptotic expansion): first order, with that constant.

The Lagrangian measure's layer pushes its points by T_k and its log-density by the Jacobian of the map:
log ρ_{k+1}(T_k x) = log ρ_k(x) − log |det DT_k(x)|, the determinant between orthonormal bases of the tangent
spaces at x and T_k x (the whole d×d one in R^d). DT_k = DN(y)(I + h DX), DN(y) = (I − ŷŷᵀ)/|y| on the sphere,
and DX the field's Jacobian at fixed μ (the heads' ``average_and_jacobian``; for a feed-forward block
W diag σ'(Ax + b) A), projected: D(P_x u) v = Du v − (⟨v, u⟩ + ⟨x, Du v⟩) x − ⟨x, u⟩ v.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.tokens import as_tokens, check_rows, directions, is_sparse, rows
from ..density import Frame
from ..domains import of_model
from ..lagrangian import LagrangianMeasure
from ..models import Transformer, as_model, at_context, context_refusal
from ..models.normalization import average, normalization_of
from ..models.transformer import SUBSTEPS

__all__ = ["layer_map", "steps", "push", "blocks", "check_depth", "PROJECTIONS", "Projection", "default_projection"]


@dataclass(frozen=True)
class Projection:
    """The projection after a discrete layer (module docstring): y ↦ y/|y| ("sphere"), √d y/|y| ("rms"), y ("none").

    Attributes
    ----------
    name : str
    normalises : bool
        It divides by |y| (sphere, rms).
    unit : bool
        Onto the unit sphere: the sphere models' projection (a tangent field, tangent bases for the Jacobian).
    density : bool
        A density follows the layer (its Jacobian is defined): not for "rms", whose image is a sphere inside R^d.
    """

    name: str
    normalises: bool
    unit: bool
    density: bool

    def __repr__(self) -> str:
        return repr(self.name)


_PROJECTION = {p.name: p for p in (Projection("sphere", True, True, True), Projection("rms", True, False, False),
                                   Projection("none", False, False, True))}
#: the projections after a discrete layer, by name (``projection=``; a Transformer's normalisation variant is
#: :data:`meanfield.models.NORMALIZATIONS`)
PROJECTIONS = tuple(_PROJECTION)


def default_projection(model) -> str:
    """"sphere" for models on S^{d-1} (and causal ones on [0, 1] × S^{d-1}), "none" in R^d."""
    return "sphere" if of_model(as_model(model)).on_sphere else "none"


def renamed(where: str, old: dict) -> None:
    """``TypeError`` for a keyword ``where`` does not take, in one line naming the new spelling of a renamed one."""
    if "normalization" in old:
        raise TypeError(f"{where}: `normalization=` is now `projection=` (the projection after a layer: 'auto' or "
                        f"one of {PROJECTIONS}); a Transformer's normalisation is Transformer(..., normalization=...).")
    if old:
        raise TypeError(f"{where}() got an unexpected keyword argument {next(iter(old))!r}.")


def _check_projection(model, name: str) -> Projection:
    norm = normalization_of(model)
    hardmax = getattr(as_model(model), "layer_map", None) is not None  # its own layer (hardmax's AFZ map)
    if (not norm.heads_field or hardmax) and name != "auto":
        what = f"normalization {norm!r}" if not norm.heads_field else "hardmax attention's AFZ map"
        raise ValueError(f"`projection` {name!r}: the layer of {model!r} is its {what} (docs/MATH.md "
                         "§10-11); pass 'auto'.")
    if name == "auto":
        return _PROJECTION[default_projection(model)]
    after = _PROJECTION.get(name) if isinstance(name, str) else None
    if after is None:
        raise ValueError(f"`projection` must be 'auto' or one of {PROJECTIONS}, got {name!r}.")
    sphere = of_model(as_model(model)).on_sphere
    if sphere != after.unit:
        raise ValueError(f"`projection` {name!r} does not fit {model!r}: tokens on S^(d-1) are projected "
                         "by 'sphere'; R^d models take 'none' (the residual stream) or 'rms'.")
    return after


def blocks(model, t: float):
    """The pushes of the layer starting at t: [(model, fraction of h)], a split Transformer's blocks in turn."""
    model = as_model(model)
    if getattr(model, "splitting", "sum") == "sum":  # attention alone, or summed blocks: one push
        return [(model.at(t, t), 1.0)]
    wa, wb = model.weights
    attention = Transformer(model.attention.at(t, t), (), weights=(wa, 0.0))
    feedforward = Transformer(None, tuple(f.at(t, t) for f in model.feedforward), weights=(0.0, wb))
    return [(attention, (hi - lo) * a) if a else (feedforward, (hi - lo) * b)
            for lo, hi, a, b in SUBSTEPS[model.splitting]]


def _average_and_jacobian(model, points, weights, queries):
    """(u, Du) with X = P_x u on the sphere, X = u in R^d, at the queries (the points or some of them); Du of shape
    (m, d, d)."""
    return as_model(model).average_and_jacobian(points, weights, queries)  # a Transformer's: its blocks' sum


def _tangent_basis(x):
    """Orthonormal bases of the tangent spaces at the unit vectors x: shape (n, d, d − 1)."""
    n, d = x.shape
    if d == 2:
        return np.stack([-x[:, 1], x[:, 0]], axis=-1)[:, :, None]
    frame = np.concatenate([x[:, :, None], np.broadcast_to(np.eye(d), (n, d, d))], axis=2)
    q, _ = np.linalg.qr(frame)
    return q[:, :, 1:d]


def layer_map(model, points, weights, h: float, projection: str = "auto", jacobian: bool = False, at=None,
              **old):
    r"""One layer T(x) = N(x + h X[μ](x)) at the points of μ = Σ w_j δ_{x_j} (module docstring).

    Parameters
    ----------
    model : a constant model (``model.at(t)`` for a time-dependent one), summed (no splitting)
    points : ndarray, shape (n, d), or a 2-D scipy.sparse array (n, d)
        The tokens; μ is all of them (and a β_n = γ log n is resolved with this n, whatever ``at``). Sparse tokens
        (keys with few non-zeros: n equiangular tokens need d = n + 1, MATH.md §13) are taken where the layer is
        computed from the heads' average A alone, T(x) = layer(x, A(x/|x|)) — a Transformer normalised otherwise
        than post-LN (pre, peri, nGPT) whose heads take sparse keys (their ``sparse_refusal``: SA with
        Q = K = V = I) — without ``jacobian``; ``ValueError`` saying why elsewhere. A costs O(m · nnz) at m queries
        (:mod:`meanfield.core.tokens`), so pass ``at``: the output is dense, (m, d).
    weights : ndarray, shape (n,)
    h : float
        The layer's depth.
    projection : {"auto", "sphere", "rms", "none"}
        After the layer (:data:`PROJECTIONS`; "auto": the model's, and the only one a normalisation variant or
        hardmax attention takes, whose layers are their own).
    jacobian : bool
        Also return log |det DT| at the points (tangent spaces on the sphere; not for "rms", whose image is a
        sphere inside R^d: no density there).
    at : array_like of int, optional
        The indices of the points at which T is evaluated, m of them (all n by default): T(x_i), i in ``at``, with
        the field of all n points. The output of token i needs no other output, so a few pairs ⟨T x_i, T x_j⟩
        cost O(m n d) (O(m · nnz) for sparse points) instead of the whole layer's O(n² d).

    Returns
    -------
    ndarray, shape (m, d) (m = n without ``at``), and with ``jacobian`` the log-determinants, shape (m,)
    """
    renamed("layer_map", old)
    x = as_tokens(points)
    model = at_context(model, x.shape[-2])  # β_n for these n tokens (MATH.md §13): all of them, not the queries
    after = _check_projection(model, projection)
    w = np.asarray(weights, dtype=float)
    idx = None if at is None else check_rows(at, x.shape[-2])
    q = rows(x, idx)  # the queries: x itself without ``at``
    norm, m = normalization_of(model), as_model(model)
    if is_sparse(x) and (jacobian or norm.heads_field or getattr(m, "layer_map", None) is not None):
        raise ValueError(f"`points` are a sparse {x.shape[0]}×{x.shape[1]} array: the layer map takes sparse keys "
                         "where its layer is computed from the heads' average alone (a Transformer normalised "
                         "otherwise than post-LN, e.g. Transformer(SelfAttention(β), normalization=Normalization("
                         "'ngpt', alpha=1)), no Jacobian); "
                         + ("the Jacobian (a density's push) is dense" if jacobian else
                            f"the layer of {model!r} sums its field (post-LN) or is its own: pass dense points"
                            ) + ".")
    if not norm.heads_field or getattr(m, "layer_map", None) is not None:
        if jacobian:
            raise ValueError(f"{model!r}: the Lagrangian measure's push is post-LN's (a density on S^(d-1)); push "
                             "particles through this layer (particles.discrete_depth).")
        if norm.heads_field:  # hardmax: AFZ's x ↦ x + γ(u − x), γ = h (with ``at``: every point's, then those asked)
            y = m.layer_map(x, w, h)
            return y if idx is None else y[idx]
        if norm.time_dependent:
            raise ValueError(f"{model!r}: Mix-LN's layer depends on its depth; take the model of the layer, "
                             "model.at(t) (``steps`` does).")
        theta = directions(x)
        return norm.layer(q, average(m.attention, theta, w, theta if q is x else directions(q)), h)
    if of_model(as_model(model)).has_positions:  # rows (s, x): the position is carried, x moves and is normalised
        if jacobian:
            raise ValueError(f"{model!r} is causal: the Lagrangian measure does not apply (no density follows "
                             "the layer map on [0, 1] × S^(d-1) here); push particles.")
        y = q + h * as_model(model).field(x, w, q)
        y[:, 1:] /= np.linalg.norm(y[:, 1:], axis=1, keepdims=True)
        return y
    if not jacobian:
        y = q + h * as_model(model).field(x, w, q)
    else:
        if not after.density:
            raise ValueError("the RMS layer maps R^d onto a sphere of radius √d: no density follows it (use "
                             "projection='none', or a sphere model).")
        u, Du = _average_and_jacobian(model, x, w, q)
        if after.unit:
            xu = np.sum(q * u, axis=1)
            X = u - xu[:, None] * q
            xDu = np.einsum("ni,nij->nj", q, Du)  # ⟨x, Du v⟩ = (xᵀDu) v
            DX = Du - q[:, :, None] * (u + xDu)[:, None, :] - xu[:, None, None] * np.eye(q.shape[1])
        else:
            X, DX = u, Du
        y = q + h * X
        J = np.eye(q.shape[1]) + h * DX
    if not after.normalises:
        return (y, np.linalg.slogdet(J)[1]) if jacobian else y
    r = np.linalg.norm(y, axis=1, keepdims=True)
    if not after.unit:
        return np.sqrt(q.shape[1]) * y / r
    Ty = y / r
    if not jacobian:
        return Ty
    DN = (np.eye(q.shape[1]) - Ty[:, :, None] * Ty[:, None, :]) / r[:, :, None]
    DT = DN @ J
    Ex, Ey = _tangent_basis(q), _tangent_basis(Ty)
    return Ty, np.linalg.slogdet(np.swapaxes(Ey, 1, 2) @ DT @ Ex)[1]


def steps(model, x, weights, h: float, projection: str, t: float, jacobian: bool = False):
    """The layer starting at t: the pushes of its blocks in turn (module docstring); with ``jacobian`` the summed
    log-determinants."""
    logdet = np.zeros(x.shape[0]) if jacobian else None
    for block, fraction in blocks(model, t):
        if jacobian:
            x, ld = layer_map(block, x, weights, fraction * h, projection, jacobian=True)
            logdet = logdet + ld
        else:
            x = layer_map(block, x, weights, fraction * h, projection)
    return (x, logdet) if jacobian else x


def push(model, measure: LagrangianMeasure, depth: float, layers: int, projection: str = "auto", **old):
    """The Lagrangian measure through ``layers`` layers of depth ``depth``: one push per layer (per block for a
    split Transformer), the field from the current measure, log ρ by the map's Jacobian (module docstring).

    Returns
    -------
    list of LagrangianMeasure
        The measure after each layer, ``layers + 1`` frames from the given one (times t_0 + k·depth).
    """
    if not (isinstance(measure, Frame) and measure.lagrangian):  # log ρ carried by the points, pushed with them
        raise TypeError(f"`measure` must be a LagrangianMeasure, got {type(measure).__name__}.")
    renamed("push", old)
    why = context_refusal(model)
    if why is not None:
        raise ValueError(f"{model!r}: {why}.")
    depth, layers = check_depth(depth, layers)
    after = _check_projection(model, projection)
    if not normalization_of(model).heads_field or getattr(as_model(model), "layer_map", None) is not None:
        raise ValueError(f"{model!r}: the Lagrangian measure's push is post-LN softmax attention's (a density on "
                         "S^(d-1)); push particles through these layers (particles.discrete_depth).")
    if not after.density:
        raise ValueError("the RMS layer maps R^d onto a sphere of radius √d: no density follows it.")
    chart, frames = measure.domain.chart, [measure]
    x, logrho = chart.to_points(measure.state), np.array(measure.log_density)
    for k in range(layers):
        t = measure.t + k * depth
        x, logdet = steps(model, x, measure.weights, depth, projection, t, jacobian=True)
        logrho = logrho - logdet
        frames.append(LagrangianMeasure(chart.to_state(x), measure.weights, logrho, measure.domain, measure.mesh,
                                        t + depth, check=False))
    return frames


def check_depth(depth, layers):
    depth = float(depth)
    if not np.isfinite(depth) or depth <= 0:
        raise ValueError(f"`depth` must be positive and finite, got {depth!r}.")
    if int(layers) != layers or layers < 1:
        raise ValueError(f"`layers` must be a positive integer, got {layers!r}.")
    return depth, int(layers)
