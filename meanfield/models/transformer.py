r"""A whole Transformer layer: attention and feed-forward blocks, summed or split per layer (GLPR §2.3.2, (2.8)).

The continuous-depth limit of a layer x ↦ FF(Att(x)) adds the two velocity fields,

    ẋ = a X_att[μ](x) + b Σ_j X_ff,j(x)        (``splitting="sum"``; a = b = 1 unless weighted),

while a network of layers of depth h composes their flows. That composition is a splitting of the summed flow:

- ``"lie"`` (GLPR (2.8)): each layer [t_k, t_k + h) runs attention alone at twice the speed on its first half, then
  the feed-forward blocks alone at twice the speed on its second half — the flows of both for time h in turn;
  first order in h against the summed model.
- ``"strang"``: attention at twice the speed on [t_k, t_k + h/4), feed-forward on [t_k + h/4, t_k + 3h/4),
  attention on [t_k + 3h/4, t_k + h): A(h/2) ∘ F(h) ∘ A(h/2), second order in h.

Where the tokens are normalised is the Transformer's ``normalization`` (:mod:`.normalization`; docs/MATH.md §10):
post-LN (the default, the model above), pre-LN, peri-LN, Mix-LN or nGPT, each a velocity of the tokens x = rθ built
from the heads' average A at the directions θ. The variants other than post-LN take attention alone (MATH.md §10
states them for the attention block) and run as particles; the density solvers refuse them.

Every sub-interval is a breakpoint of the model (``breakpoints``), so every integrator of the library steps through
the composition exactly; ``at(t, layer_time)`` is the active part of the time (a summed :class:`Transformer`
with its weights a, b). The layers are those of ``depth`` (one h, or one depth per layer), else those of the
schedules in the blocks' weights (:func:`meanfield.models.layers`).
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field

import numpy as np

from ..core import checks
from ..domains.sphere.geometry import check_on_sphere
from .base import Head, check_weights
from .feedforward import FeedForward
from .multihead import MultiHeadAttention
from .normalization import as_normalization, average, density_refusal
from .schedule import Layers

__all__ = ["Transformer", "add", "as_model", "attention_of", "SPLITTINGS", "SUBSTEPS"]

SPLITTINGS = ("sum", "lie", "strang")
#: (start, end, attention rate, feed-forward rate) of the sub-intervals of a layer, as fractions of its depth
SUBSTEPS = {"lie": ((0.0, 0.5, 2.0, 0.0), (0.5, 1.0, 0.0, 2.0)),
             "strang": ((0.0, 0.25, 2.0, 0.0), (0.25, 0.75, 0.0, 2.0), (0.75, 1.0, 2.0, 0.0))}


def _is_attention(model) -> bool:
    return isinstance(model, (Head, MultiHeadAttention))


@dataclass(frozen=True, eq=False)
class Transformer:
    r"""Attention plus feed-forward blocks (module docstring): ẋ = a X_att[μ](x) + b Σ_j X_ff,j(x), or its Lie /
    Strang splitting per layer.

    Parameters
    ----------
    attention : SelfAttention, MultiHeadAttention, an R^d attention model, or None
        The attention block (None: feed-forward only, a non-interacting transport).
    feedforward : FeedForward or sequence of FeedForward
        The feed-forward blocks (summed), on the attention's manifold.
    splitting : {"sum", "lie", "strang"}
        Summed fields, or the composition of the blocks' flows per layer.
    depth : float or sequence of float, optional
        The layers of the splitting: one depth h for all (from t = 0), or one per layer (the last repeated beyond).
        Default: the layers of the schedules among the weights (required for a splitting without them).
    weights : (float, float)
        (a, b), the rates of attention and feed-forward in the sum (default (1, 1)).
    normalization : {"post", "pre", "peri"} or Normalization
        Where the tokens are normalised (:mod:`.normalization`, docs/MATH.md §10): post-LN (default, today's model),
        pre-LN, peri-LN, or ``Normalization("mix", switch=t0)``, ``Normalization("ngpt", alpha=α)`` (any variant
        registered in ``meanfield.models.normalization.VARIANTS``, by name where it takes no parameter). Other than
        post-LN: attention alone on the sphere (no feed-forward blocks, not causal, weights (1, 1)).
    """

    attention: object = None
    feedforward: tuple = dc_field(default_factory=tuple)
    splitting: str = "sum"
    depth: object = None
    weights: tuple = (1.0, 1.0)
    normalization: object = "post"

    kind = "transformer"
    zonal = None
    exp_kernel = False
    compiled_rows = None
    has_blocks = True  # attention, feedforward, weights, normalization, drift (:class:`~.base.Head`)
    translation_kernel = tilt_matrix = None  # the grids' fast sums are the attention's
    layer_map = None

    def __post_init__(self):
        ff = (self.feedforward,) if isinstance(self.feedforward, FeedForward) else tuple(self.feedforward)
        for i, f in enumerate(ff):
            if not isinstance(f, FeedForward):
                raise TypeError(f"`feedforward[{i}]` must be a FeedForward block, got {type(f).__name__}.")
        object.__setattr__(self, "feedforward", ff)
        if self.attention is not None and not _is_attention(self.attention):
            raise TypeError(f"`attention` must be an attention model (SelfAttention, MultiHeadAttention, an R^d model) "
                            f"or None, got {type(self.attention).__name__}.")
        if self.attention is None and not ff:
            raise ValueError("a Transformer needs an attention block or at least one feed-forward block.")
        manifolds = {p.manifold for p in self.parts}
        if ff and getattr(self.attention, "causal", False):
            raise ValueError("feed-forward blocks beside causal attention are not implemented (a block acting on "
                             "the token x of rows (s, x) is not written); run the causal attention alone.")
        if len(manifolds) > 1:
            raise ValueError("the blocks live on different manifolds (sphere and R^d): give the feed-forward blocks "
                             f"the attention's (FeedForward(..., manifold={self.parts[0].manifold!r})).")
        dims = {p.dim for p in self.parts if p.dim is not None}
        if len(dims) > 1:
            raise ValueError(f"the blocks act on different dimensions: {sorted(dims)}.")
        if self.splitting not in SPLITTINGS:
            raise ValueError(f"`splitting` must be one of {SPLITTINGS}, got {self.splitting!r}.")
        a, b = (checks.real(w, "weights") for w in self.weights)
        object.__setattr__(self, "weights", (a, b))
        if self.depth is not None:
            d = np.atleast_1d(np.asarray(self.depth, dtype=float))
            if d.ndim != 1 or d.size == 0 or not np.all(np.isfinite(d)) or np.any(d <= 0):
                raise ValueError(f"`depth` must be positive and finite (one, or one per layer), got {self.depth!r}.")
            object.__setattr__(self, "_edges", np.concatenate([[0.0], np.cumsum(d)]))
        elif self.splitting != "sum":
            edges = [v.edges for p in self.parts for v in (getattr(p, n, None) for n in p.time_fields)
                     if isinstance(v, Layers)]
            if not edges:
                raise ValueError(f"splitting={self.splitting!r} needs the depth of a layer: give `depth`, or weights "
                                 "that are schedules of layers (meanfield.models.layers).")
            object.__setattr__(self, "_edges", np.unique(np.concatenate(edges)))
        if self.splitting != "sum" and (self.attention is None or not ff):
            raise ValueError(f"splitting={self.splitting!r} alternates attention and feed-forward: give both.")
        norm = as_normalization(self.normalization)
        object.__setattr__(self, "normalization", norm)
        if not norm.heads_field:
            if self.attention is None or self.attention.manifold != "sphere":
                raise ValueError(f"normalization {norm!r} normalises attention on the sphere's tokens: give a "
                                 f"SelfAttention (non-causal) or heads of them, got {self.attention!r}.")
            if ff:
                raise ValueError(f"normalization {norm!r} with feed-forward blocks is not implemented (MATH.md §10 "
                                 "states the variants for the attention block); give the attention alone.")
            if (a, b) != (1.0, 1.0):
                raise ValueError(f"normalization {norm!r} takes weights (1, 1), got {self.weights!r}.")

    # ------------------------------------------------------------------ structure
    @property
    def parts(self) -> tuple:
        return ((self.attention,) if self.attention is not None else ()) + self.feedforward

    @property
    def manifold(self) -> str:
        return self.parts[0].manifold

    @property
    def noise(self) -> float:
        return float(self.attention.noise) if self.attention is not None else 0.0

    @property
    def dim(self) -> int | None:
        return next((p.dim for p in self.parts if p.dim is not None), None)

    @property
    def heads(self) -> tuple:
        """The attention heads (none for feed-forward only)."""
        return self.attention.heads if self.attention is not None else ()

    @property
    def normalized(self) -> bool:
        return bool(getattr(self.attention, "normalized", True))

    @property
    def energy_kernel(self):
        """The attention's zonal kernel, whose E_β(μ) the solvers record along this model (None without a zonal
        attention, or where the weights depend on time), with ``c`` the direction in which the flow moves E_β:

        - post-LN attention alone, ẋ = a P_x A: a·c (E_β is the attention's Lyapunov functional, GLPR Lemma 3.7);
        - nGPT, θ̇ = α P_θA/|A|: c. With K_β*μ's gradient ∫e^{β⟨x,y⟩}y dμ = Z(x)A(x)/c (V = cI, SA), dE_β/dt =
          ∫⟨Z A/c, αP_θA/|A|⟩dμ = (α/c)∫Z|P_θA|²/|A| dμ, of the sign of c (α > 0);
        - feed-forward blocks beside attention: 0 (E_β is recorded, but the drift W σ(Ax + b) moves it either way).
        """
        z = getattr(self.attention, "zonal", None)
        if z is None or self.time_dependent or not self.normalization.lyapunov:
            return None
        if self.feedforward:
            return type(z)(z.beta, 0.0)
        return type(z)(z.beta, z.c * (self.weights[0] if self.normalization.heads_field else 1.0))

    # ------------------------------------------------------------------ time: the blocks' weights and the splitting
    @property
    def time_dependent(self) -> bool:
        return (self.splitting != "sum" or any(p.time_dependent for p in self.parts)
                or self.normalization.time_dependent)

    def _layer(self, t: float) -> tuple[float, float]:
        """(start, depth) of the layer of the splitting at time t (the last depth repeated beyond the given ones;
        those layers start at e_last + k h, computed so in :meth:`breakpoints` too)."""
        e = self._edges
        if t < e[0]:
            raise ValueError(f"t = {t:g} is before the first layer of the splitting (at {e[0]:g}).")
        if t < e[-1]:
            k = int(np.searchsorted(e, t, side="right") - 1)
            return float(e[k]), float(e[k + 1] - e[k])
        h = float(e[-1] - e[-2])
        k = int(np.floor((t - e[-1]) / h))
        while e[-1] + (k + 1) * h <= t:  # the floor's rounding, both ways
            k += 1
        while k > 0 and e[-1] + k * h > t:
            k -= 1
        return float(e[-1] + k * h), h

    def _substep(self, t: float) -> tuple[float, float]:
        """(attention rate, feed-forward rate) of the sub-interval holding t (its ends as :meth:`breakpoints`)."""
        start, h = self._layer(t)
        rates = SUBSTEPS[self.splitting][0][2:]
        for lo, _, a, b in SUBSTEPS[self.splitting]:
            if t >= start + lo * h:
                rates = (a, b)
        return rates

    def at(self, t: float, layer_time: float | None = None) -> "Transformer":
        """The summed model of time t: the blocks' weights of that time and, for a splitting, the active block at its
        rate (its other rate zero). ``layer_time`` (the integrator's step start) picks layers and sub-steps."""
        if not self.time_dependent:
            return self
        lt = float(t) if layer_time is None else float(layer_time)
        a, b = self.weights
        if self.splitting != "sum":
            sa, sb = self._substep(lt)
            a, b = a * sa, b * sb
        norm = self.normalization.at(lt)  # Mix-LN's variant of the layer
        key = (tuple(id(p.at(t, lt)) for p in self.parts), a, b, norm)
        cache = self.__dict__.setdefault("_at", {})
        if key not in cache:
            if len(cache) > 64:
                cache.clear()
            att = None if self.attention is None else self.attention.at(t, lt)
            cache[key] = Transformer(att, tuple(f.at(t, lt) for f in self.feedforward), "sum", None, (a, b), norm)
            if norm is not self.normalization:  # a stretch of Mix-LN: the density solvers, which read the model of
                # each time, refuse it from its post-LN stretch on (the law takes a radius at t_0)
                object.__setattr__(cache[key], "stretch_of", self.normalization)
        return cache[key]

    def _layers(self, t1: float) -> list:
        """(start, depth) of the splitting's layers up to t1, as :meth:`_layer` has them."""
        e = self._edges
        h = float(e[-1] - e[-2])
        out = list(zip(e[:-1], np.diff(e)))
        if t1 > e[-1]:
            out += [(e[-1] + k * h, h) for k in range(int(np.ceil((t1 - e[-1]) / h)) + 1)]
        return out

    def layer_starts(self, t0: float, t1: float) -> np.ndarray:
        """The starts of the splitting's layers inside (t0, t1) (not its sub-steps)."""
        s = np.array([start for start, _ in self._layers(t1)])
        return s[(s > t0) & (s < t1)]

    def breakpoints(self, t0: float, t1: float) -> np.ndarray:
        """The blocks' layer boundaries and, for a splitting, every sub-interval's ends inside (t0, t1)."""
        out = [p.breakpoints(t0, t1) for p in self.parts] + [self.normalization.breakpoints(t0, t1)]
        if self.splitting != "sum":
            out.append(np.array([start + lo * depth for start, depth in self._layers(t1)
                                 for lo, *_ in SUBSTEPS[self.splitting]]))
        b = np.unique(np.concatenate(out)) if out else np.empty(0)
        return b[(b > t0) & (b < t1)]

    # ------------------------------------------------------------------ the field (constant models)
    def _constant(self) -> None:
        if self.time_dependent:
            raise TypeError("the Transformer depends on time (its weights or its splitting): evaluate the model of a "
                            "time, model.at(t), then its field.")

    def drift(self, queries) -> np.ndarray:
        """b Σ_j X_ff,j(queries): the feed-forward part (zero without blocks)."""
        self._constant()
        q = np.asarray(queries, dtype=float)
        out = np.zeros(q.shape)
        for f in self.feedforward:
            out += f.velocity(q)
        return self.weights[1] * out

    def _post_only(self, what: str) -> None:
        if not self.normalization.heads_field:
            raise ValueError(f"{what} is post-LN's (a field on S^(d-1) of unit tokens); normalization "
                             f"{self.normalization!r} moves tokens x = rθ by Normalization.velocity(x, A): run its "
                             "particles (particles.simulate).")

    def field(self, points, weights, queries) -> np.ndarray:
        """a X_att[μ](queries) + b Σ_j X_ff,j(queries); nGPT's α P_x A/|A| (docs/MATH.md §10) for
        normalization 'ngpt' (the queries unit vectors); pre/peri/mix-LN move tokens with a radius: no field on the
        sphere (``ValueError``)."""
        self._constant()
        if not (self.normalization.heads_field or self.normalization.radial):  # nGPT's: a function of A on S^(d-1)
            points, queries = check_on_sphere(points, "points"), check_on_sphere(queries, "queries")
            weights = check_weights(weights, points)
            self.check_dim(points.shape[-1])
            return self.normalization.velocity(queries, average(self.attention, points, weights, queries))
        self._post_only("the field X[μ]")
        out = self.drift(queries)
        a = self.weights[0]
        if self.attention is not None and a:
            out = out + a * self.attention.field(points, weights, queries)
        return out

    def velocity_from_average(self, queries, A) -> np.ndarray:
        """The velocity of unit tokens ``queries`` from the attention's average ``A`` there (before any projection;
        docs/MATH.md §10): P_θA (post-LN), α P_θA/|A| (nGPT). The density solvers that sum A themselves (the S²
        moments) hand it over here; pre/peri/mix-LN move tokens with a radius (``ValueError``)."""
        if self.normalization.radial:
            self._post_only("the velocity of unit tokens")
        return self.normalization.velocity(queries, A)

    def field_and_divergence(self, points, weights, queries):
        """The field and its divergence (both linear in the blocks)."""
        self._constant()
        self._post_only("the field's divergence")
        q = np.asarray(queries, dtype=float)
        X, div = np.zeros(q.shape), np.zeros(q.shape[:-1])
        b = self.weights[1]
        for f in self.feedforward:
            Xf, df = f.velocity_and_divergence(q)
            X, div = X + b * Xf, div + b * df
        a = self.weights[0]
        if self.attention is not None and a:
            Xa, da = self.attention.field_and_divergence(points, weights, queries)
            X, div = X + a * Xa, div + a * da
        return X, div

    def average_and_jacobian(self, points, weights, queries) -> tuple[np.ndarray, np.ndarray]:
        """a (u, Du) of the attention plus b Σ_j of the blocks' ambient fields and Jacobians at ``queries`` (m, d)
        (X = P_x u on the sphere, X = u in R^d); unbatched."""
        a, b = self.weights
        q = np.asarray(queries, dtype=float)
        m, d = q.shape
        u, Du = np.zeros((m, d)), np.zeros((m, d, d))
        if self.attention is not None and a:
            ua, Dua = self.attention.average_and_jacobian(points, weights, queries)
            u, Du = u + a * ua, Du + a * Dua
        for f in self.feedforward:
            uf, Duf = f.ambient_and_jacobian(q)
            u, Du = u + b * uf, Du + b * Duf
        return u, Du

    def gaussian_closure(self, mean, cov) -> tuple[np.ndarray, np.ndarray]:
        """a Γ_att + b Σ_j W_j(A_j x + b_j): (M, c) of the attention's closure and of affine blocks (activation
        'identity'); ``TypeError`` for another activation (no closure: :mod:`meanfield.analysis.gaussian`)."""
        d = np.size(mean)
        a, b = self.weights
        M, c = self.attention.gaussian_closure(mean, cov) if self.attention is not None and a else (0.0, 0.0)
        M, c = a * M + np.zeros((d, d)), a * c + np.zeros(d)
        for f in self.feedforward:
            if f.activation != "identity":
                raise TypeError(f"no Gaussian closure with a feed-forward block of activation {f.activation!r}: the "
                                "flow keeps Gaussians Gaussian only for affine fields (activation='identity').")
            M = M + b * f.W @ f.A
            c = c + b * (f.W @ f.b if f.b is not None else 0.0)
        return M, c

    def check_dim(self, d: int) -> None:
        for p in self.parts:
            p.check_dim(d) if not isinstance(p, MultiHeadAttention) else [h.check_dim(d) for h in p.heads]

    def describe(self) -> str:
        """The model in words, short, for a figure's title (figures read this, never the repr): '3-layer
        Transformer (SA with per-layer Q, K, V, β; a GELU feed-forward block)', 'Transformer (SA, β = 4; 2 ReLU
        feed-forward blocks; Lie splitting)', 'Transformer (pre-LN; SA, β = 1)'. The attention is its own
        ``describe()`` where it has one (else its kind); the layers are those of the splitting's depth or of the
        weights' schedules."""
        if getattr(self, "_edges", None) is not None:
            layers = len(self._edges) - 1
        else:
            units = [h for p in self.parts for h in (p.heads if isinstance(p, MultiHeadAttention) else (p,))]
            layers = max([len(v.values) for p in units for v in (getattr(p, n, None)
                                                                  for n in getattr(p, "time_fields", ()))
                          if isinstance(v, Layers)], default=1)
        inside = []
        if not self.normalization.heads_field:
            inside.append(self.normalization.words or self.normalization.name)
        blocks = []
        if self.attention is not None:
            describe = getattr(self.attention, "describe", None)
            blocks.append(describe() if describe is not None else f"{self.attention.kind} attention")
        activations = sorted({f.activation for f in self.feedforward})
        if self.feedforward:
            n = len(self.feedforward)
            names = "/".join("ReLU" if a == "relu" else a.upper() if a == "gelu" else a for a in activations)
            blocks.append(f"{'a' if n == 1 else n} {names} feed-forward block{'s' if n > 1 else ''}")
        inside.append("; ".join(blocks))
        if self.splitting != "sum":
            inside.append(f"{self.splitting.capitalize()} splitting")
        if self.weights != (1.0, 1.0):
            inside.append(f"weights a = {self.weights[0]:g}, b = {self.weights[1]:g}")
        return f"{f'{layers}-layer ' if layers > 1 else ''}Transformer ({'; '.join(inside)})"

    def __repr__(self) -> str:
        parts = ([repr(self.attention)] if self.attention is not None else []) + [repr(f) for f in self.feedforward]
        extra = "" if self.splitting == "sum" else f", splitting={self.splitting!r}"
        if self.weights != (1.0, 1.0):
            extra += f", weights={self.weights}"
        if not self.normalization.heads_field:
            extra += f", normalization={self.normalization!r}"
        return f"Transformer({' + '.join(parts)}{extra})"


def add(x, y):
    """x + y for models: attention + attention is multi-head attention (GLPR (2.7)); anything with a feed-forward
    block is a summed :class:`Transformer`."""
    if _is_attention(x) and _is_attention(y):
        hx, hy = x.heads, y.heads
        noise = [m.noise for m in (x, y) if m.noise]
        if noise:
            raise ValueError("adding models with noise is ambiguous (the noise belongs to the dynamics, not to a head): "
                             "give it once, MultiHeadAttention(heads, noise=D).")
        return MultiHeadAttention(hx + hy)
    for m in (x, y):
        if isinstance(m, Transformer) and not m.normalization.heads_field:
            raise ValueError(f"adding to a Transformer with normalization {m.normalization!r}: add the heads first, "
                             "then normalise (Transformer(heads, normalization=...)).")
    if isinstance(x, Transformer) and x.splitting != "sum" or isinstance(y, Transformer) and y.splitting != "sum":
        raise ValueError("a split Transformer is one layer's composition: build the sum first, then split it "
                         "(Transformer(attention, feedforward, splitting=...)).")
    att, ff = [], []
    for m in (x, y):
        if isinstance(m, Transformer):
            if m.weights != (1.0, 1.0):
                raise ValueError("adding a weighted Transformer: combine the blocks in one Transformer(weights=...).")
            if m.attention is not None:
                att.append(m.attention)
            ff.extend(m.feedforward)
        elif isinstance(m, FeedForward):
            ff.append(m)
        elif _is_attention(m):
            att.append(m)
        else:
            return NotImplemented
    attention = att[0] if len(att) == 1 else (add(att[0], att[1]) if att else None)
    return Transformer(attention, tuple(ff))


def as_model(model):
    """A feed-forward block alone as the Transformer it is (no attention); any other model as it is."""
    return Transformer(None, (model,)) if isinstance(model, FeedForward) else model


def attention_of(model):
    """The attention part of a model (None for feed-forward only), as the density solvers and their strategies read
    it: ``ValueError`` for a model they cannot take (:func:`.normalization.density_refusal`: a normalisation other
    than post-LN, hardmax attention), whose attention's sums would otherwise be summed as post-LN's."""
    why = density_refusal(model)
    if why is not None:
        raise ValueError(f"{model!r}: {why}.")
    if isinstance(model, Transformer):
        return model.attention
    return None if isinstance(model, FeedForward) else model


def _radd(self, other):
    return add(other, self)


# ``+`` on every model, defined here where all the kinds are known (the classes cannot import this module)
for _kind in (Head, MultiHeadAttention, FeedForward, Transformer):
    _kind.__add__, _kind.__radd__ = add, _radd
