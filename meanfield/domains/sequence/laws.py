"""Laws of tokens with positions: a law of tokens turned along the sequence (public as
:func:`meanfield.laws.along_positions`)."""

from __future__ import annotations

import numpy as np

__all__ = ["turn", "along_positions"]



def turn(x, angle) -> np.ndarray:
    """Points x (..., d) turned by ``angle`` (broadcast against x[..., 0]) in the plane of their first two
    coordinates."""
    x = np.asarray(x, dtype=float)
    c, s = np.cos(angle), np.sin(angle)
    out = x.copy()
    out[..., 0], out[..., 1] = c * x[..., 0] - s * x[..., 1], s * x[..., 0] + c * x[..., 1]
    return out


def along_positions(law, twist: float = 0.0):
    r"""A law of tokens made a law of tokens with positions (rows (s, x) of [0, 1] × S^{d-1}): at position s, ``law``
    turned by the angle 2π·twist·s in the plane of the first two coordinates, f(s, x) = law(R_{−2π twist s} x)
    (against ds × surface measure: the positions are uniform). ``twist`` = 0: the same law at every position."""
    if not np.isfinite(twist):
        raise ValueError(f"`twist` must be finite, got {twist!r}.")
    angle = 2.0 * np.pi * float(twist)

    def f(x):
        x = np.asarray(x, dtype=float)
        return law(turn(x[..., 1:], -angle * x[..., 0]) if angle else x[..., 1:])

    return f
