r"""Self-attention on the sphere S^{d-1}: the velocity field X[μ] shared by particles and grids.

A model is an immutable object with one job: given a weighted point set
(an empirical measure, or grid nodes with density × quadrature weight) it
evaluates the velocity field at arbitrary query points,

.. math::

    X[\mu](x) = P_x^\perp u_\mu(x),\qquad
    u_\mu(x) = \frac{1}{Z_\mu(x)}\int e^{\beta\langle Qx, Ky\rangle}\,Vy\,d\mu(y),
    \qquad Z_\mu(x) = \int e^{\beta\langle Qx, Ky\rangle}\,d\mu(y)\ \ (\text{SA}),
    \quad Z_\mu \equiv 1\ \ (\text{USA}),

(GLPR (2.3), (USA) and (3.4); MATH.md §1–2). For an empirical measure with
weights 1/n this is exactly the particle system of GLPR; the USA convention
``Z ≡ 1`` with weights 1/n is the paper's ``Z_i = n``.

This is the single definition of the dynamics on spheres (the reference
strategy ``quadrature``); the fast strategies of the grids and the particles
are optimisations of it and are tested against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field

import numpy as np

from ..core import checks
from ..domains.sphere.geometry import check_on_sphere, project_tangent, surface_divergence
from ..core.numerics import EXP_MAX
from ..core.tokens import transposed
from .base import (
    Head, Zonal, check_weights, identity_multiple, log_kernel_excess, row_chunks, softmax_jacobian, tilted_moments,
)
from .bounds import HeadConstants, exp_or_inf, head_norms
from .context import ContextScaling, parse_scaling
from .positions import COMPILED_DECAY_MAX, check_position_rate, check_rope, rope_frequencies, rope_turn
from .registry import NOISE, ModelKind, Parameter, register
from .schedule import Layers, is_time_dependent

__all__ = ["SelfAttention", "check_measure", "check_sequence", "divergence_from_average", "number_words", "matrix_words"]


def _repulsive_beta(value, name):
    """β: any finite real on the sphere (β < 0 repels, MATH.md §13: the field's formula holds for every real β; the
    density solvers that need β >= 0 refuse it, :attr:`meanfield.domains.Domain.repulsion_refusal`)."""
    return checks.beta(value, name, repulsive=True)


def check_measure(points, weights, queries):
    """Unit vectors ``points`` (..., n, d) with one finite weight each, and unit-vector ``queries`` (..., m, d)."""
    points = check_on_sphere(points, "points")
    queries = check_on_sphere(queries, "queries")
    if points.ndim < 2 or queries.ndim < 2:
        raise ValueError(
            f"`points` and `queries` must have shape (..., n, d); got {points.shape} and {queries.shape}."
        )
    if points.shape[-1] != queries.shape[-1]:
        raise ValueError(
            f"`points` and `queries` live in different dimensions: d = {points.shape[-1]} and {queries.shape[-1]}."
        )
    return points, check_weights(weights, points), queries


def check_sequence(points, weights, queries):
    r"""Tokens with positions: ``points`` (..., n, 1 + d) rows (τ_j, y_j), τ_j a finite position and y_j a unit
    vector, one finite weight each, and ``queries`` (..., m, 1 + d) rows (s_i, x_i) likewise (docs/MATH.md §8.4)."""
    out = []
    for name, a in (("points", points), ("queries", queries)):
        a = np.asarray(a, dtype=float)
        if a.ndim < 2 or a.shape[-1] < 3:
            raise ValueError(f"`{name}` of causal attention are tokens with positions, rows (s, x) with x on "
                             f"S^{{d-1}} (d >= 2), shape (..., n, 1 + d); got {a.shape}.")
        if not np.all(np.isfinite(a[..., 0])):
            raise ValueError(f"`{name}`: the positions (first column) must be finite.")
        out.append(np.concatenate([a[..., :1], check_on_sphere(a[..., 1:], name)], axis=-1))
    points, queries = out
    if points.shape[-1] != queries.shape[-1]:
        raise ValueError(
            f"`points` and `queries` live in different dimensions: d = {points.shape[-1]} and {queries.shape[-1]}."
        )
    return points, check_weights(weights, points), queries


def _masked(s, positions, sl, decay: float = 0.0):
    """The logits ``s`` of query rows ``sl`` with −inf where a point's position exceeds the query's (the causal
    mask τ_j <= s_i), and the row shifts: the maxima over the points each row sees (0 for a row that sees none).
    ``decay`` = λ: the logits first gain −λ(s_i − τ_j), the decay mask e^{−λ(s − τ)} (docs/MATH.md §13; λ = 0 adds
    nothing, not even a zero)."""
    if positions is not None:
        tau, q = positions
        if decay:
            s = s - decay * (q[..., sl, None] - tau[..., None, :])
        s = np.where(tau[..., None, :] <= q[..., sl, None], s, -np.inf)
    smax = np.max(s, axis=-1, keepdims=True)
    return s, np.where(np.isfinite(smax), smax, 0.0) if positions is not None else smax


def _normaliser(e, weights, masked: bool = False):
    """Z = Σ_j w_j e_ij (shape (..., m, 1)); ``ValueError`` where it is not positive (``masked``: 1 where a row sees
    no point, whose sums are then 0: a causal query before every point)."""
    Z = e @ weights[..., :, None]
    if masked:
        Z = np.where(np.any(e > 0, axis=-1, keepdims=True), Z, 1.0)
    if np.any(Z <= 0):
        raise ValueError(
            "the softmax normaliser Z_μ(x) is not positive: the weights must "
            "describe a non-negative measure of positive mass."
        )
    return Z


def _check_usa_exponent(smax):
    """``OverflowError`` where the row maxima of β⟨Qx,Ky⟩ make the unscaled USA kernel overflow."""
    if np.max(smax) > EXP_MAX:
        raise OverflowError(
            f"USA field overflows float64: β⟨Qx,Ky⟩ reaches {np.max(smax):.1f} > "
            f"{EXP_MAX:.1f}; USA keeps the unscaled kernel e^(β⟨Qx,Ky⟩) (MATH.md §2.1), "
            "so use a smaller β or the normalised model (SA)."
        )


def divergence_from_average(queries, u, strain):
    r"""div_S(P_x u) = tr(P_x Du) − (d − 1)⟨x, u⟩ on S^{d-1}, from u and ``strain`` = tr(P_x Du) (MATH.md §6):
    the domain's :func:`~meanfield.domains.sphere.geometry.surface_divergence`."""
    return surface_divergence(queries, u, strain)


def number_words(v) -> str:
    """A number as a title writes it: '4', '0.5', '−1' (a minus sign, not a hyphen)."""
    return f"{float(v):g}".replace("-", "−")


def matrix_words(M) -> str:
    """A constant matrix in words: 'I' (None or the identity), 'qI', '[a, b; c, d]' up to 3 rows, else 'general
    d×d'."""
    if M is None:
        return "I"
    a = np.atleast_2d(np.asarray(M, dtype=float))
    if a.size == 1 or np.allclose(a, a[0, 0] * np.eye(a.shape[0])):
        q = a.flat[0]
        return "I" if q == 1.0 else "−I" if q == -1.0 else f"{number_words(q)}I"
    if a.shape[0] <= 3:
        return "[" + "; ".join(", ".join(number_words(v) for v in row) for row in a) + "]"
    return f"general {a.shape[0]}×{a.shape[1]}"


@dataclass(frozen=True, eq=False)
class SelfAttention(Head):
    r"""Self-attention dynamics on the sphere S^{d-1} (GLPR (2.3) and (USA)).

    Parameters
    ----------
    beta : float or ContextScaling
        Inverse temperature β, or β_n = γ log n, γ n^a, a callable of the number of tokens n
        (:class:`~meanfield.models.context.ContextScaling`, MATH.md §13: resolved by the particles and discrete
        layers with their n, :func:`~meanfield.models.context.at_context`; refused by the density solvers). Any finite
        real: β < 0 is repulsive attention (far tokens weigh more, V = I still
        attracts; MATH.md §13), taken by the particles on S^{d-1} and the circle's density, refused with the reason
        by the density solvers of the other domains (:attr:`meanfield.domains.Domain.repulsion_refusal`).
    Q, K, V : array_like, shape (d, d), optional
        Query, key and value matrices; ``None`` means the identity (of any d).
    normalized : bool, default True
        ``True`` for SA (softmax normalisation by Z_μ(x)), ``False`` for USA
        (Z ≡ 1, i.e. Z_i = n for n particles of weight 1/n).
    noise : float, default 0, keyword-only
        D >= 0: particles follow dX = X[μ](X) dt + √(2D) dB (Brownian motion on S^{d-1}), densities
        ∂_t ρ + div(ρX[ρ]) = DΔρ (docs/MATH.md §7). The field itself does not depend on it.
    causal : bool, default False, keyword-only
        Causal (masked) attention (CACP; docs/MATH.md §8.4): tokens carry a position, points are rows
        (τ, y) ∈ R × S^{d-1} (the domain [0, 1] × S^{d-1}, ``manifold`` "sequence"), and the field at (s, x) is
        (0, P_x u(s, x)) with u the average above over the points with τ <= s only: positions never move, a token
        sees those before it (and itself). ``particles.simulate(..., causal=True)`` runs plain unit vectors in
        their array order.
    decay : float, default 0, keyword-only
        λ, finite: the decay (ALiBi-type) mask of causal attention, the kernel times e^{−λ(s − τ)} for τ <= s
        (docs/MATH.md §13; n tokens in their order: weights ∝ e^{−(λ/n)(i − j)}). λ = 0 is the causal model above,
        bit for bit. Requires ``causal``.
    rope : float or array_like, default 0, keyword-only
        ω, finite: rotary phases, Qx and Ky turned by R(ωs) and R(ωτ) (a rotation by the angle ωs in each plane
        (x_0, x_1), (x_2, x_3), …; :mod:`meanfield.models.positions`), so the logits are β⟨Qx, R(ω(τ − s))Ky⟩.
        One number for every plane, or one frequency ω_p per plane (an array of ⌊d/2⌋; equal ones give the number's
        run bit for bit). Requires ``causal``.
    rope_base : float, optional, keyword-only
        b > 0: RoPE's ladder of frequencies ω_p = ω b^{−2p/d}, p = 0 … ⌊d/2⌋ − 1, with ω = ``rope`` the first plane's
        (Su et al. 2021; on S¹ one plane: ω itself). Needs a number ``rope`` ≠ 0.

    Notes
    -----
    With Q = K = I and V = ±I the field is a gradient (MATH.md §2.1):
    USA: X = (1/β)∇(K_β*μ); SA: X = (1/β)∇ log(K_β*μ), with
    K_β*μ(x) = ∫ e^{β⟨x,y⟩} dμ(y). The interaction energy
    E_β(μ) = (1/2β)∬ e^{β⟨x,y⟩} dμ dμ is then non-decreasing for V = I
    and non-increasing for V = -I (GLPR Lemma 3.7).
    """

    beta: float
    Q: np.ndarray | None = None
    K: np.ndarray | None = None
    V: np.ndarray | None = None
    normalized: bool = True
    noise: float = dc_field(default=0.0, kw_only=True)
    causal: bool = dc_field(default=False, kw_only=True)
    decay: float = dc_field(default=0.0, kw_only=True)
    rope: float = dc_field(default=0.0, kw_only=True)
    rope_base: float | None = dc_field(default=None, kw_only=True)

    kind = "self-attention"
    exp_kernel = True  # the compiled pairwise sums, the fused RK4, the span reduction, the S² moments (:class:`Head`)

    def __post_init__(self):
        self._check_scalar("beta", _repulsive_beta)
        self._check_matrices()
        self._check_noise()
        if not isinstance(self.normalized, (bool, np.bool_)):
            raise TypeError(f"`normalized` must be a bool, got {self.normalized!r}.")
        if not isinstance(self.causal, (bool, np.bool_)):
            raise TypeError(f"`causal` must be a bool, got {self.causal!r}.")
        object.__setattr__(self, "decay", check_position_rate(self.decay, "decay"))
        object.__setattr__(self, "rope", check_rope(self.rope))
        if self.rope_base is not None:
            base = check_position_rate(self.rope_base, "rope_base")
            if not base > 0:
                raise ValueError(f"`rope_base` must be > 0 (the frequencies ω b^(−2p/d)), got {self.rope_base!r}.")
            if np.ndim(self.rope) or not self.rope:
                raise ValueError(f"`rope_base` = {base:g} sets the ladder ω_p = ω b^(−2p/d) of one frequency `rope` = ω "
                                 f"≠ 0; got rope = {self.rope!r} (give the per-plane frequencies or the base, not both)")
            object.__setattr__(self, "rope_base", base)
        for name in ("decay", "rope"):
            value = getattr(self, name)
            if np.any(value) and not self.causal:
                raise ValueError(f"`{name}` = {value!r} weighs the tokens by their positions in the sequence, which "
                                 "only causal attention has (tokens (s, x) with s in [0, 1]): pass causal=True, or "
                                 f"{name}=0 for attention without positions.")

    @property
    def weighs_positions(self) -> bool:
        """Whether the logits depend on the positions beyond the causal mask (a decay λ ≠ 0 or RoPE ω ≠ 0)."""
        return bool(self.decay) or self.rotary

    @property
    def rotary(self) -> bool:
        """Whether the head turns its queries and keys by RoPE phases (some ω_p ≠ 0)."""
        return bool(np.any(self.rope))

    def rope_frequencies(self, d: int):
        """The frequencies its RoPE turns tokens of R^d by: the number ω for all planes, or one per plane
        (:func:`meanfield.models.positions.rope_frequencies`: the given array, or the ladder of ``rope_base``)."""
        return rope_frequencies(self.rope, self.rope_base, d)

    @property
    def compiled_refusal(self) -> str | None:
        """Why the compiled pairwise sums do not take this head, or None (:func:`meanfield.kernels.pairwise_refusal`):
        a decay |λ| beyond :data:`~meanfield.models.positions.COMPILED_DECAY_MAX` (the key weights e^{λτ} would
        underflow)."""
        if abs(self.decay) > COMPILED_DECAY_MAX:
            return (f"the compiled sums apply the decay as key weights e^(λτ), which underflow for |λ| > "
                    f"{COMPILED_DECAY_MAX:g}; got decay λ = {self.decay:g} (the model's own sums take any λ)")
        return None

    @property
    def sparse_refusal(self) -> str | None:
        """Why :meth:`average` does not take the points (keys) as a 2-D scipy.sparse array, or None: it does for
        non-causal attention with Q = K = V = I (``None``), whose keys enter only through the products K q and
        Kᵀ p. A d×d matrix times sparse keys is dense (and exists only for d small enough to be dense anyway); the
        causal rows (τ, y) carry positions."""
        if self.causal:
            return ("causal attention's tokens are rows (τ, y) with positions, its mask and phases per pair: dense "
                    "points only")
        given = [name for name in ("Q", "K", "V") if getattr(self, name) is not None]
        if given:
            return (f"{', '.join(given)} given as d×d matrices: the keys times a matrix are dense (sparse keys take "
                    "Q = K = V = I, i.e. None)")
        return None

    @property
    def manifold(self) -> str:
        """Where its tokens live: "sphere" (S^{d-1}), or "sequence" ([0, 1] × S^{d-1}, tokens with positions) for
        causal attention."""
        return "sequence" if self.causal else "sphere"

    @property
    def dim(self) -> int | None:
        """d fixed by the matrices (:class:`Head`), 1 + d for causal attention (a position and a point of R^d)."""
        d = Head.dim.fget(self)
        return d + 1 if self.causal and d is not None else d

    # ------------------------------------------------------------------ info
    @property
    def zonal(self) -> Zonal | None:
        """``Zonal(beta=β_eff, c)`` when Q = qI, K = kI, V = cI with qk >= 0, else None.

        Then ⟨Qx, Ky⟩ = qk⟨x, y⟩, the kernel is zonal with inverse temperature
        β_eff = β q k, and the field is c times the Q = K = V = I field with
        β_eff. This is when the fast spectral strategies apply.
        """
        if self.time_dependent or self.rotary or isinstance(self.beta, ContextScaling):  # that of at(t) / at_context(n);
            # RoPE turns the kernel with the positions
            return None
        q, k, c = (identity_multiple(M) for M in (self.Q, self.K, self.V))
        if q is None or k is None or c is None or q * k < 0:
            return None
        return Zonal(self.beta * q * k, c)

    # ------------------------------------------------------------------ bounds (:mod:`.bounds` derives them)
    def constants(self, radius: float | None = None) -> HeadConstants:
        """The bounds of this head on S^{d-1} (R = 1): SA L_x = v(2 + a), L_μ = v(1 + 2a)e^{2a}; USA with s = e^a."""
        if radius not in (None, 1, 1.0):
            raise ValueError(f"`radius` is 1 on the sphere, got {radius!r}.")
        a, v = head_norms(self)
        if self.normalized:
            return HeadConstants(v, v * (2.0 + a), v * (1.0 + 2.0 * a) * exp_or_inf(2.0 * a), a, a,
                                 v * (1.0 + 5.0 * a + 2.0 * a * a))
        v = v * self._usa_decay_factor()
        s = exp_or_inf(a)
        return HeadConstants(v, v * s * (2.0 + a), v * s * (1.0 + a), None, a, v * s * (1.0 + 5.0 * a + a * a))

    def speed_bound(self) -> float:
        """v(1 + a)s >= sup|u| + sup|Du| for any probability measure (``inf`` where USA's e^a overflows)."""
        a, v = head_norms(self)
        if self.normalized:
            return v * (1.0 + a)
        v = v * self._usa_decay_factor()
        if a + np.log1p(a) + np.log(max(v, 1e-300)) > EXP_MAX:
            return float("inf")
        return v * (1.0 + a) * np.exp(a)

    def _usa_decay_factor(self) -> float:
        """sup e^{−λ(s − τ)} over 0 <= τ <= s <= 1: 1 for λ >= 0, e^{−λ} for λ < 0 (USA's sums grow by it)."""
        return float(exp_or_inf(max(0.0, -self.decay)))

    def describe(self) -> str:
        """The model in words and symbols, short, for a figure's title (figures read this, never the repr).

        'SA, β = 4'; 'USA, β = 3, noise D = 0.5'; 'causal SA, β = 2'; 'SA, β = 1, Q = [0.5, 0.2; 0, 0.3]';
        'SA with per-layer Q, K, V, β'. Q = K = V = I (the default) is not written; a multiple of I is written
        qI, a matrix of more than 3 rows 'general d×d', a function of time 'Q(t)', a schedule of layers
        (:func:`meanfield.models.layers`) 'per-layer'.
        """
        words = [("causal " if self.causal else "") + ("SA" if self.normalized else "USA")]
        per_layer = [n for n in ("Q", "K", "V", "beta") if isinstance(getattr(self, n), Layers)]
        if "beta" not in per_layer:
            words.append("β(t)" if is_time_dependent(self.beta) else f"β = {self.beta.words}"
                         if isinstance(self.beta, ContextScaling) else f"β = {number_words(self.beta)}")
        if self.noise:
            words.append(f"noise D = {number_words(self.noise)}")
        if self.decay:
            words.append(f"decay λ = {number_words(self.decay)}")
        if self.rotary:
            words.append(f"RoPE ω = {number_words(self.rope)}" if np.ndim(self.rope) == 0 and self.rope_base is None
                         else f"RoPE ω = {number_words(self.rope)}, base {number_words(self.rope_base)}"
                         if self.rope_base is not None else
                         f"RoPE ω = ({', '.join(number_words(w) for w in self.rope)})")
        groups: dict[str, list] = {}
        for name in ("Q", "K", "V"):
            M = getattr(self, name)
            if name not in per_layer:
                groups.setdefault(f"{name}(t)" if is_time_dependent(M) else matrix_words(M), []).append(name)
        for text, names in groups.items():
            if text == "I":
                continue
            words.append(text if text.endswith("(t)") else f"{' = '.join(names)} = {text}")
        per = ", ".join("β" if n == "beta" else n for n in per_layer)
        return ", ".join(words) + (f" with per-layer {per}" if per else "")

    def __repr__(self) -> str:
        def show(M):
            return "I" if M is None else (repr(M) if is_time_dependent(M) else np.array2string(M, precision=3))

        mats = ", ".join(f"{n}={show(M)}" for n, M in (("Q", self.Q), ("K", self.K), ("V", self.V)))
        kind = ("SA" if self.normalized else "USA") + (", causal" if self.causal else "")
        noise = f", noise={self.noise:g}" if self.noise else ""
        rope = (f"{self.rope:g}" if np.ndim(self.rope) == 0 else np.array2string(self.rope, precision=3)) + \
            ("" if self.rope_base is None else f", rope_base={self.rope_base:g}")
        noise += (f", decay={self.decay:g}" if self.decay else "") + (f", rope={rope}" if self.rotary else "")
        beta = repr(self.beta) if is_time_dependent(self.beta) or isinstance(self.beta, ContextScaling) else \
            f"{self.beta:g}"
        return f"SelfAttention({kind}, beta={beta}, {mats}{noise})"

    # ------------------------------------------------------------------ field
    def average(self, points, weights, queries, positions=None) -> np.ndarray:
        r"""u_μ(x) = ∫ e^{β⟨Qx,Ky⟩} V y dμ(y) / Z_μ(x), before the tangent projection, shape (..., m, d).

        No input checks (:meth:`field` checks); exponents are shifted by their
        row maximum, so SA is safe for any β; USA raises ``OverflowError``
        where e^{β⟨Qx,Ky⟩} overflows. ``positions`` = (τ (..., n), s (..., m)): the causal mask, each row summing
        over the points with τ_j <= s_i only (0 where there are none). ``points`` may be a 2-D scipy.sparse
        array (CSR) where :attr:`sparse_refusal` is None: the same code then costs O(m · nnz) (the logits
        ``queries @ pointsᵀ`` and ``e @ (w points)`` are sparse products; :mod:`meanfield.core.tokens`).
        """
        Kx = points if self.K is None else points @ self.K.T
        Qx = queries if self.Q is None else queries @ self.Q.T
        if self.rotary and positions is not None:  # RoPE: R(ωs)Qx against R(ωτ)Ky
            w = self.rope_frequencies(Kx.shape[-1])
            Kx, Qx = rope_turn(Kx, positions[0], w), rope_turn(Qx, positions[1], w)
        Vx = points if self.V is None else points @ self.V.T
        wV = weights[..., :, None] * Vx
        m, n = queries.shape[-2], points.shape[-2]
        out = np.empty(np.broadcast_shapes(queries.shape[:-2], points.shape[:-2]) + (m, Vx.shape[-1]))
        for sl in row_chunks(m, n):
            s, smax = _masked(self.beta * (Qx[..., sl, :] @ transposed(Kx)), positions, sl,
                              self.decay)  # (..., mc, n); K q by one product also for sparse keys
            e = np.exp(s - smax)
            num = e @ wV
            if self.normalized:
                Z = _normaliser(e, weights, positions is not None)
                out[..., sl, :] = num / Z
            else:
                _check_usa_exponent(smax)
                out[..., sl, :] = num * np.exp(smax)
        return out

    def field(self, points, weights, queries) -> np.ndarray:
        r"""Velocity field X[μ] at ``queries`` for μ = Σ_j w_j δ_{points_j}.

        Parameters
        ----------
        points : array_like, shape (..., n, d)
            Unit vectors carrying the measure.
        weights : array_like, shape (..., n)
            Their weights (1/n for particles; density × quadrature weight for grids).
        queries : array_like, shape (..., m, d)
            Unit vectors where the field is evaluated.

        Returns
        -------
        ndarray, shape (..., m, d)
            Tangent vectors X[μ](queries) (MATH.md §2). For SA the exponents are
            shifted by their maximum, so any β is safe; for USA an
            ``OverflowError`` is raised where e^{β⟨Qx,Ky⟩} overflows.
        """
        if self.causal:  # tokens with positions: the masked sums (one place for one head and several)
            return self.sum_of_fields((self,), points, weights, queries)
        points, weights, queries = check_measure(points, weights, queries)
        self.check_dim(points.shape[-1])
        return project_tangent(queries, self.average(points, weights, queries))

    def average_and_strain(self, points, weights, queries, positions=None) -> tuple[np.ndarray, np.ndarray]:
        r"""u_μ(x) (as :meth:`average`) and tr(P_x Du_μ(x)), the tangential trace of its Jacobian in x.

        With a(y) = β QᵀK y and the softmax law π_x(dy) ∝ e^{⟨x, a(y)⟩} μ(dy),
        Du = Cov_{π_x}(Vy, a(y)) = β V C_x A (SA; A = KᵀQ, C_x the covariance of y under π_x), so

        .. math::

            \operatorname{tr}(P_x Du) = \beta\big(E_{\pi_x}[\langle Ky, QP_xVy\rangle]
                - \langle Km, QP_xVm\rangle\big),\qquad m = E_{\pi_x}[y],

        with ⟨Ky, QP_xVy⟩ = ⟨Ky, QVy⟩ − ⟨Qx, Ky⟩⟨x, Vy⟩: besides the field's
        sums, one sum of the per-point constant ⟨Ky, QVy⟩ and one of
        ⟨Qx, Ky⟩⟨x, Vy⟩ (docs/MATH.md §6). USA: Du = β Σ_j w_j e_j Vy_j (Aᵀy_j)ᵀ, no
        covariance. No input checks; exponents shifted by their row maximum. ``positions``: the causal mask, as in
        :meth:`average` (the decay mask too: it does not depend on x; RoPE refused: its query matrix R(ωs)Q changes
        with the row and its keys R(ωτ)K with the point, which the per-point constants below do not allow).
        """
        if self.rotary and positions is not None:
            raise ValueError(f"the divergence of the field with RoPE phases is not written (the Lagrangian measure's "
                             f"log-Jacobian); the field itself is (`field`); got {self!r}.")
        d = points.shape[-1]
        Q, K, V = self.matrices(d)
        Ky = points @ K.T
        Qx = queries @ Q.T
        Vy = points @ V.T
        c = np.sum(Ky * (Vy @ Q.T), axis=-1)  # ⟨Ky, QVy⟩
        wV = weights[..., :, None] * Vy
        wy = weights[..., :, None] * points
        wc = weights * c
        m, n = queries.shape[-2], points.shape[-2]
        batch = np.broadcast_shapes(queries.shape[:-2], points.shape[:-2])
        u = np.empty(batch + (m, d))
        strain = np.empty(batch + (m,))
        for sl in row_chunks(m, n):
            x = queries[..., sl, :]
            g = Qx[..., sl, :] @ np.swapaxes(Ky, -1, -2)  # ⟨Qx, Ky⟩, (..., mc, n)
            s, smax = _masked(self.beta * g, positions, sl, self.decay)
            e = np.exp(s - smax)
            num = e @ wV  # Σ w e Vy
            ec = e @ wc  # Σ w e ⟨Ky, QVy⟩
            exv = np.sum(((e * g) @ wV) * x, axis=-1)  # Σ w e ⟨Qx,Ky⟩⟨x,Vy⟩
            if self.normalized:
                Z = _normaliser(e, weights, positions is not None)
                uu = num / Z
                my = (e @ wy) / Z  # E_π[y]
                Km, QVm = my @ K.T, uu @ Q.T
                mean = np.sum(Km * QVm, -1) - np.sum(Km * (x @ Q.T), -1) * np.sum(x * uu, -1)
                tr = self.beta * ((ec - exv) / Z[..., 0] - mean)
            else:
                _check_usa_exponent(smax)
                scale = np.exp(smax)
                uu = num * scale
                tr = self.beta * (ec - exv) * scale[..., 0]
            u[..., sl, :] = uu
            strain[..., sl] = tr
        return u, strain

    def field_and_divergence(self, points, weights, queries) -> tuple[np.ndarray, np.ndarray]:
        r"""X[μ] at ``queries`` and its surface divergence div_S X[μ] there.

        For X = P_x u with u the ambient average (:meth:`average_and_strain`),
        div_S X = tr(P_x Du) − (d − 1)⟨x, u⟩ (docs/MATH.md §6): the Lagrangian
        measure's log-Jacobian rate. Same inputs and checks as :meth:`field`.

        Returns
        -------
        field : ndarray, shape (..., m, d)
        divergence : ndarray, shape (..., m)
        """
        if self.causal:
            return self.sum_of_fields((self,), points, weights, queries, divergence=True)
        points, weights, queries = check_measure(points, weights, queries)
        self.check_dim(points.shape[-1])
        u, tr = self.average_and_strain(points, weights, queries)
        return project_tangent(queries, u), divergence_from_average(queries, u, tr)

    @staticmethod
    def sum_of_fields(heads, points, weights, queries, divergence: bool = False):
        """Σ_h X_h[μ] (and Σ_h div X_h[μ]) of sphere heads: the averages u_h summed, then projected once (causal
        heads: the averages under the mask, the positions' component 0)."""
        causal = heads[0].causal
        points, weights, queries = (check_sequence if causal else check_measure)(points, weights, queries)
        for h in heads:
            h.check_dim(points.shape[-1])
        y, x, positions = (points[..., 1:], queries[..., 1:], (points[..., 0], queries[..., 0])) if causal else \
            (points, queries, None)
        if divergence:
            parts = [h.average_and_strain(y, weights, x, positions) for h in heads]
            u, strain = sum(p[0] for p in parts), sum(p[1] for p in parts)
            X, div = project_tangent(x, u), divergence_from_average(x, u, strain)
        else:
            X = project_tangent(x, sum(h.average(y, weights, x, positions) for h in heads))
        if causal:
            X = np.concatenate([np.zeros(X.shape[:-1] + (1,)), X], axis=-1)
        return (X, div) if divergence else X

    def average_and_jacobian(self, points, weights, queries) -> tuple[np.ndarray, np.ndarray]:
        r"""u_μ(x) (as :meth:`average`) and its whole Jacobian Du_μ(x) in the ambient R^d, shape (m, d, d).

        SA: Du = β V C_x A with A = KᵀQ and C_x the covariance of y under the
        softmax law π_x ∝ e^{β⟨Ax, y⟩} μ; USA: Du = β V (Σ_j w_j e^{β⟨Ax,y_j⟩} y_j y_jᵀ) A.
        For the stability estimates (:mod:`validation.stability`); unbatched:
        ``points`` (n, d), ``weights`` (n,), ``queries`` (m, d).
        """
        self._not_causal("the Jacobian of the field (stability estimates)")
        points, weights, queries = check_measure(points, weights, queries)
        d = points.shape[-1]
        self.check_dim(d)
        _, _, V = self.matrices(d)
        A = self.A(d)
        if self.normalized:
            return softmax_jacobian(A, V, self.beta, points, weights, queries)
        log_z, mean, second = tilted_moments(self.beta * (queries @ A.T) @ points.T, weights, points)
        _check_usa_exponent(log_z)
        z = np.exp(log_z)
        return z[:, None] * (mean @ V.T), self.beta * z[:, None, None] * (V @ second @ A)

    def log_kernel_excess(self, points, weights, queries, radius: float = 1.0) -> np.ndarray:
        r"""log K_μ(x) = log(sup_{y ∈ S^{d-1}} e^{β⟨Ax, y⟩} / Z_μ(x)) = β|Ax| − log Z_μ(x), shape (m,).

        The factor by which the a posteriori L_μ(x) of SA exceeds v(1 + 2a)
        (:mod:`meanfield.models.bounds`); ``radius`` is 1 on the sphere.
        """
        self._not_causal("the a posteriori stability constants")
        points, weights, queries = check_measure(points, weights, queries)
        return log_kernel_excess(self.A(points.shape[-1]), self.beta, radius, points, weights, queries)

    # ------------------------------------------------------------------ energy
    def _not_causal(self, what: str) -> None:
        if self.causal:
            raise ValueError(f"{what} of causal attention are not defined here: the masked field is not the gradient "
                             f"of an energy and its Jacobian jumps across positions; got {self!r}.")

    def _energy_beta(self) -> float:
        self._not_causal("the interaction energy E_β and its monitor")
        z = self.zonal
        if z is None:
            raise ValueError(
                "the interaction energy E_β is defined here for zonal kernels only "
                f"(Q = qI, K = kI with qk >= 0); this model is {self!r}."
            )
        return z[0]

    def scaled_energy(self, points, weights) -> float:
        r"""e^{-β} E_β(μ), finite for every β (see :meth:`energy`)."""
        points = check_on_sphere(points, "points")
        weights = np.asarray(weights, dtype=float)
        if weights.shape != points.shape[:-1] or points.ndim != 2:
            raise ValueError(
                f"`points` must have shape (n, d) and `weights` shape (n,), got {points.shape} and {weights.shape}."
            )
        self.check_dim(points.shape[-1])
        beta = self._energy_beta()
        if beta == 0.0:
            m = weights @ points
            return 0.5 * float(m @ m)
        G = points @ points.T
        return float(weights @ np.exp(beta * (G - 1.0)) @ weights) / (2.0 * beta)

    def energy(self, points, weights) -> float:
        r"""Interaction energy E_β(μ) = (1/2β) ∬ e^{β⟨x,y⟩} dμ(x) dμ(y) (GLPR §3.2).

        Defined for zonal kernels (Q = qI, K = kI, β_eff = βqk; V plays no role).
        At β = 0 this returns ½|∫x dμ|², the limit of E_β − μ(S)²/(2β), which is
        the Lyapunov function of the β = 0 dynamics. ``OverflowError`` where
        e^β overflows (β > 709); use :meth:`scaled_energy` there.
        """
        s = self.scaled_energy(points, weights)
        beta = self._energy_beta()
        if beta > EXP_MAX:
            raise OverflowError(f"E_β overflows float64 for β = {beta:g}; use `scaled_energy`.")
        return s * np.exp(beta)


def _context_parameters(parameters: dict) -> dict:
    """A study's ``beta_scaling`` text as the model's β (:func:`~.context.parse_scaling`), replacing ``beta``."""
    text = parameters.pop("beta_scaling", None)
    if text is not None:
        parameters["beta"] = parse_scaling(text)
    return parameters


register(ModelKind("self-attention", SelfAttention, "sphere", (
    Parameter("beta", "float", 1.0, "inverse temperature β, any finite real: β < 0 is repulsive attention "
              "(MATH.md §13), taken by the particles on spheres and by the circle's density (SA, USA), refused with "
              "the reason by the other domains' density solvers and by [stationary]"),
    Parameter("beta_scaling", "str", None, "β_n as a function of the number of tokens n, 'γ*log(n)' or 'γ*n^a' "
              "(MATH.md §13; replaces beta; resolved for each [particles] n, refused by the density solvers)"),
    Parameter("normalized", "bool", True, "SA (true) or USA (false)"), NOISE,
    Parameter("causal", "bool", False, "causal (masked) attention: tokens carry positions s in [0, 1] and see those "
              "at s' <= s; the study runs on [0, 1] × the domain (densities on [0, 1] × S¹)"),
    Parameter("decay", "float", 0.0, "decay (ALiBi) mask of causal attention: the kernel times e^(−λ(s − s')) "
              "(n tokens: e^(−(λ/n)(i − j))); needs causal = true"),
    Parameter("rope", "float", 0.0, "RoPE phases of causal attention: Qx and Ky turned by the angles ωs and ωs' in "
              "each coordinate plane (with rope_base: ω_p = ω b^(−2p/d) in plane p); needs causal = true "
              "(densities: every pair of rows, m²M² a rate)"),
    Parameter("rope_base", "float", None, "RoPE's base b: plane p = (x_2p, x_2p+1) of the d-dimensional tokens turned "
              "at the frequency ω_p = ω b^(−2p/d), ω = rope (Su et al. 2021); absent: ω in every plane; on S¹ one "
              "plane, ω itself", positive=True),
), doc="SA/USA on the sphere S^{d-1} (GLPR (2.3), (USA)); any Q, K, V; causal",
    words=lambda m: "SA" if m.get("normalized", True) else "USA", convert=_context_parameters))
