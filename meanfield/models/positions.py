r"""Position-dependent causal attention: the decay (ALiBi-type) mask and RoPE phases (docs/MATH.md §13).

Causal attention on [0, 1] × S^{d-1} (MATH.md §7): a token (s, x) attends to the tokens (τ, y) with τ <= s. Its
logits gain two position terms, parameters of the head (:class:`~meanfield.models.SelfAttention` ``decay`` = λ and
``rope`` = ω), read by the head's own field:

.. math::

    \ell(s, x; \tau, y) = \beta\langle R(\omega s) Q x, R(\omega\tau) K y\rangle - \lambda (s - \tau),
    \qquad \tau \le s,

the decay mask e^{−λ(s − τ)} (λ = 0: today's causal model) and the rotary phases R(ωs): a rotation by the angle ωs in
each plane (x_0, x_1), (x_2, x_3), … (the last coordinate of an odd d unturned; one frequency for all planes).
R(a)ᵀR(b) = R(b − a), so the RoPE term is β⟨Qx, R(ω(τ − s))Ky⟩: it depends on positions only through s − τ.

n tokens in their array order sit at s_i = (i + ½)/n (:func:`meanfield.domains.sequence.with_positions`), so the
weights ∝ e^{−(λ/n)(i − j)} and the angles (ω/n)(i − j) of a sequence of n tokens (Duerinckx, Geshkovski & Rossi,
arXiv 2605.09213; RoPE: Su et al. 2021) are λ and ω per unit of position here.

The decay factor is separable, e^{−λ(s − τ)} = e^{−λs} e^{λτ}: a weight e^{λτ_j} on each key and a row factor e^{−λs}
(which SA's normaliser cancels) — how the compiled pairwise sums apply it (:meth:`SelfAttention.position_terms`).
"""

from __future__ import annotations

import numpy as np

from ..core import checks

__all__ = ["rotate_planes", "check_position_rate", "COMPILED_DECAY_MAX"]

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


def rotate_planes(v, angle) -> np.ndarray:
    r"""R(angle) v: vectors v (..., d) turned by ``angle`` (broadcast against v[..., 0]) in each plane (v_0, v_1),
    (v_2, v_3), …; the last coordinate of an odd d is left as it is (docs/MATH.md §13, RoPE)."""
    v = np.asarray(v, dtype=float)
    a = np.asarray(angle, dtype=float)[..., None]
    c, s = np.cos(a), np.sin(a)
    p = v.shape[-1] // 2 * 2
    out = v.copy()
    x, y = v[..., 0:p:2], v[..., 1:p:2]
    out[..., 0:p:2] = c * x - s * y
    out[..., 1:p:2] = s * x + c * y
    return out
