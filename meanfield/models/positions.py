r"""Position-dependent causal attention: the decay (ALiBi-type) mask and RoPE phases (docs/MATH.md §13).

Causal attention on [0, 1] × S^{d-1} (MATH.md §7): a token (s, x) attends to the tokens (τ, y) with τ <= s. Its
logits gain two position terms, parameters of the head (:class:`~meanfield.models.SelfAttention` ``decay`` = λ and
``rope`` = ω), read by the head's own field:

.. math::

    \ell(s, x; \tau, y) = \beta\langle R(\omega s) Q x, R(\omega\tau) K y\rangle - \lambda (s - \tau),
    \qquad \tau \le s,

the decay mask e^{−λ(s − τ)} (λ = 0: today's causal model) and the rotary phases R(ωs): a rotation by the angle ω_p s
in each plane p = (x_{2p}, x_{2p+1}), p = 0 … ⌊d/2⌋ − 1 (the last coordinate of an odd d unturned): one frequency ω
for all planes, or one per plane — given as an array (ω_0, …, ω_{⌊d/2⌋−1}), or as RoPE's geometric ladder
ω_p = ω b^{−2p/d} of a base b (``rope_base``; Su et al. 2021 use b = 10⁴ per token). R(a)ᵀR(b) = R(b − a) plane by
plane, so the RoPE term is β⟨Qx, R(ω(τ − s))Ky⟩: it depends on positions only through s − τ.

n tokens in their array order sit at s_i = (i + ½)/n (:func:`meanfield.domains.sequence.with_positions`), so the
weights ∝ e^{−(λ/n)(i − j)} and the angles (ω/n)(i − j) of a sequence of n tokens (Duerinckx, Geshkovski & Rossi,
arXiv 2605.09213; RoPE: Su et al. 2021) are λ and ω per unit of position here.

The decay factor is separable, e^{−λ(s − τ)} = e^{−λs} e^{λτ}: a weight e^{λτ_j} on each key and a row factor e^{−λs}
(which SA's normaliser cancels) — how the compiled pairwise sums apply it (:meth:`SelfAttention.position_terms`).
"""

from __future__ import annotations

import numpy as np

from ..core import checks

__all__ = ["rotate_planes", "rope_turn", "rope_frequencies", "check_rope", "check_position_rate",
           "COMPILED_DECAY_MAX"]

#: |λ| up to which the compiled sums apply the decay as key weights e^{λτ_j − max λτ} >= e^{−|λ|} (positions in
#: [0, 1]): beyond it the early keys' weights would fall towards float64's underflow (e^{−745}) and the model's own
#: sums, which add −λ(s − τ) to the logits before their row shift, are used.
COMPILED_DECAY_MAX = 200.0


def check_position_rate(value, name: str) -> float:
    """λ or ω: a real number (not a string or a bool: ``TypeError``), finite (``ValueError`` naming it)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be a real number, got {value!r} (bool).")
    v = checks.real(value, name)
    if not np.isfinite(v):
        raise ValueError(f"`{name}` must be finite, got {value!r}: the position weight e^(−λ(s − τ)) and the RoPE "
                         "angle ω(s − τ) are defined for finite rates only.")
    return v


def rotate_planes(v, angle, per_plane: bool = False) -> np.ndarray:
    r"""R(angle) v: vectors v (..., d) turned by ``angle`` (broadcast against v[..., 0]) in each plane (v_0, v_1),
    (v_2, v_3), …; the last coordinate of an odd d is left as it is (docs/MATH.md §13, RoPE). ``per_plane``: ``angle``
    has a last axis of one angle per plane (⌊d/2⌋), plane p turned by angle[..., p]."""
    v = np.asarray(v, dtype=float)
    a = np.asarray(angle, dtype=float) if per_plane else np.asarray(angle, dtype=float)[..., None]
    c, s = np.cos(a), np.sin(a)
    p = v.shape[-1] // 2 * 2
    out = v.copy()
    x, y = v[..., 0:p:2], v[..., 1:p:2]
    out[..., 0:p:2] = c * x - s * y
    out[..., 1:p:2] = s * x + c * y
    return out


def check_rope(value):
    """RoPE's ω: one real number for every plane (:func:`check_position_rate`), or one per plane (a non-empty 1-D
    array of finite reals, returned read-only; ``ValueError`` naming ``rope`` otherwise)."""
    if np.ndim(value) == 0:
        return check_position_rate(value, "rope")
    try:
        w = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"`rope` must be a real number or an array of them (one per plane), got {value!r}.") from None
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"`rope` must be a number or a 1-D array of frequencies, one per plane (x_2p, x_2p+1), got "
                         f"shape {w.shape}.")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"`rope` must be finite, got {value!r}: the RoPE angles ω_p(s − τ) are defined for finite "
                         "frequencies only.")
    w.flags.writeable = False
    return w


def rope_frequencies(rope, base, d: int):
    r"""The frequencies a head's RoPE turns its d-dimensional queries and keys by: ``rope`` itself where it is one
    number for all planes and ``base`` is None (today's scalar, unchanged); ω_p = ω b^{−2p/d}, p = 0 … ⌊d/2⌋ − 1, for
    a ``base`` b (RoPE's ladder, Su et al. 2021 (15)); a given array of one frequency per plane, checked to hold
    ⌊d/2⌋ of them (``ValueError`` naming ``rope``)."""
    planes = d // 2
    if base is not None:
        return rope * float(base) ** (-2.0 * np.arange(planes) / d)
    if np.ndim(rope) == 0:
        return rope
    if rope.size != planes:
        raise ValueError(f"`rope` holds {rope.size} frequencies but tokens in R^{d} have {planes} plane(s) "
                         f"(x_2p, x_2p+1): give one frequency per plane, or one number for all.")
    return rope


def rope_turn(v, positions, frequencies) -> np.ndarray:
    r"""R(ω s) v for vectors v (..., d) at positions s (broadcast against v[..., 0]): every plane turned by ω s where
    ``frequencies`` is one number ω (:func:`rotate_planes` of the angle ω s, bit for bit today's), plane p by ω_p s where
    it is one frequency per plane (:func:`rope_frequencies`). An array of equal frequencies gives the scalar's result
    bit for bit: the angles are the same products ω·s."""
    if np.ndim(frequencies) == 0:
        return rotate_planes(v, frequencies * positions)
    return rotate_planes(v, np.asarray(positions, dtype=float)[..., None] * frequencies, per_plane=True)
