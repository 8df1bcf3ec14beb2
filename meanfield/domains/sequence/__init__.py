r"""Tokens with positions: [0, 1] × S^{d-1}, where causal attention moves them (CACP; docs/MATH.md §8.4).

A point is a row (s, x): a position s in the sequence and a unit vector x ∈ S^{d-1} ⊂ R^d, so the ambient
dimension is 1 + d. Positions never move (the field's first component is zero); the geometry is the product's,
d((s, x), (s', x')) = √(|s − s'|² + ∠(x, x')²). Densities are solved on [0, 1] × S¹ (:class:`SequenceGrid`,
d = 2, ambient 3); particles of causal attention live on any [0, 1] × S^{d-1}.

:data:`SEQUENCE` is its :class:`~meanfield.domains.base.Domain`; the circle and the sphere name it as the domain of
their tokens with positions (``Domain.positions``).
"""

from __future__ import annotations

import numpy as np

from ..base import SUPERSCRIPT, Domain, register, unit_sphere
from ..sphere.geometry import check_on_sphere, geodesic, normalise, on_sphere, project_tangent
from ..zonal import zonal_refusal
from . import plotting as _plotting
from .laws import along_positions, turn
from .continuity import SequencePairs, SequenceQuadrature, SequenceSpectral
from .grid import SequenceGrid, cumulative, as_rows, from_rows

__all__ = ["SEQUENCE", "Sequence", "SequenceGrid", "SequenceSpectral", "SequenceQuadrature", "SequencePairs",
           "cumulative",
           "with_positions", "as_rows", "from_rows", "along_positions", "turn"]


def with_positions(x, positions=None) -> np.ndarray:
    r"""Tokens x (..., n, d) in their array order as points (s_i, x_i) of [0, 1] × S^{d-1}: s_i = (i + ½)/n by
    default (the midpoints: each token stands for its n-th of the sequence), or the given positions (n,)."""
    x = np.asarray(x, dtype=float)
    n = x.shape[-2]
    s = (np.arange(n) + 0.5) / n if positions is None else np.asarray(positions, dtype=float)
    if s.shape != (n,):
        raise ValueError(f"`positions` must have shape ({n},), one per token, got {s.shape}.")
    return np.concatenate([np.broadcast_to(s[:, None], x.shape[:-1] + (1,)), x], axis=-1)


class Sequence(Domain):
    """[0, 1] × S^{d-1}: tokens with positions (module docstring)."""

    name = "sequence"
    description = "positions × sphere [0, 1] × S^(d-1) (tokens with positions, causal attention)"
    manifold = "sequence"
    grid_type = SequenceGrid
    volume = 2.0 * np.pi  # of [0, 1] × S¹, where densities are solved
    coordinate_label = "(s, θ)"
    initial_laws = ("uniform", "uniform-noise", "von-mises-fisher")
    grid_parameters = {"n": True, "positions": False}
    default_max_n = 4096
    has_positions = True
    on_sphere = True  # rows (s, x): x is a unit vector, normalised after a layer
    unit_vectors = False  # ⟨x, y⟩ of rows (s, x) is not a cosine: the clustering statistics do not apply as they are

    def check_points(self, x, name):
        x = np.asarray(x, dtype=float)
        if x.ndim < 1 or x.shape[-1] < 3:
            raise ValueError(f"`{name}` must hold tokens with positions, rows (s, x) with x on S^(d-1), d >= 2 "
                             f"(shape (..., 1 + d)); got shape {x.shape}.")
        if self.dim is not None and x.shape[-1] != self.dim:
            raise ValueError(f"`{name}` must hold rows (s, x) of {self.dim} coordinates, got shape {x.shape}.")
        s = x[..., 0]
        if not np.all(np.isfinite(s)) or np.any((s < 0) | (s > 1)):
            raise ValueError(f"`{name}`: positions (first column) must lie in [0, 1].")
        return np.concatenate([x[..., :1], check_on_sphere(x[..., 1:], name)], axis=-1)

    def contains(self, x, atol=1e-8):
        x = np.asarray(x, dtype=float)
        return (x.ndim >= 1 and x.shape[-1] >= 3 and bool(np.all((x[..., 0] >= 0) & (x[..., 0] <= 1)))
                and on_sphere(x[..., 1:], atol))

    @staticmethod
    def project(x, v):
        out = np.zeros(np.broadcast_shapes(np.shape(x), np.shape(v)))
        out[..., 1:] = project_tangent(np.asarray(x)[..., 1:], np.asarray(v)[..., 1:])
        return out

    @staticmethod
    def retract(y):
        y = np.asarray(y, dtype=float)
        return np.concatenate([y[..., :1], normalise(y[..., 1:])], axis=-1)

    def check_particles(self, x, name):
        """Tokens with positions, rows (s, x), in an array of shape (n, 1 + d) or (batch, n, 1 + d), x normalised
        exactly (``Domain.check_particles``); unit vectors without positions are pointed to
        :func:`with_positions` (``particles.with_positions``)."""
        x = self._with_positions(x, name)
        if x.ndim not in (2, 3) or x.shape[-2] < 1:
            raise ValueError(f"`{name}` must have shape (n, 1 + d) or (batch, n, 1 + d) and hold particles, got "
                             f"{x.shape}.")
        return self.retract(x)

    def _with_positions(self, x0, name):
        """:meth:`check_points`, its ``ValueError`` pointing to ``particles.with_positions`` where ``x0`` holds
        points without positions (rows of unit vectors)."""
        try:
            return self.check_points(x0, name)
        except ValueError as exc:
            x = np.asarray(x0, dtype=float)
            if x.ndim >= 1 and x.shape[-1] >= 2 and np.all(np.isfinite(x)) and \
                    np.allclose(np.linalg.norm(x, axis=-1), 1.0, rtol=0, atol=1e-8):
                raise ValueError(f"`{name}` holds unit vectors without positions (shape {x.shape}), but causal "
                                 "attention moves tokens (s, x) that carry their position s in the sequence: give "
                                 f"particles.with_positions({name}), which puts them in their array order.") from None
            raise ValueError(f"{exc} (causal attention moves rows (s, x); particles.with_positions(x) makes them "
                             "from unit vectors in their array order)") from None

    @staticmethod
    def distance(xa, xb):
        xa, xb = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
        ds = xa[..., :, None, 0] - xb[..., None, :, 0]
        return np.sqrt(ds * ds + geodesic(xa[..., 1:], xb[..., 1:]) ** 2)

    @staticmethod
    def chord_distance(chord):
        r"""The largest product distance of two points at Euclidean distance ``chord`` in R^{1+d}: with
        c² = Δs² + |Δx|², √(Δs² + θ²) (θ = 2 arcsin(|Δx|/2) >= |Δx|) grows with |Δx|, so it is 2 arcsin(c/2) for
        c <= 2 and √(c² − 4 + π²) beyond (an upper bound: what certified coarsening needs)."""
        c = np.asarray(chord, dtype=float)
        return np.where(c <= 2.0, 2.0 * np.arcsin(np.minimum(1.0, 0.5 * c)), np.sqrt(np.maximum(c * c - 4.0, 0.0)
                                                                                      + np.pi ** 2))

    @staticmethod
    def coordinates(x):
        """(s, θ) on [0, 1] × S¹; (s, x) otherwise."""
        x = np.asarray(x, dtype=float)
        if x.shape[-1] == 3:
            return np.stack(as_rows(x), axis=-1)
        return x

    def brownian_step(self, x, tau, rng):
        """Noise moves the tokens (the circle's or the sphere's Brownian step), never the positions."""
        x = np.asarray(x, dtype=float)
        return np.concatenate([x[..., :1], self._base(x.shape[-1] - 1).brownian_step(x[..., 1:], tau, rng)], axis=-1)

    @staticmethod
    def symbol(d):
        return "[0, 1] × S" + str(max(d - 2, 1)).translate(SUPERSCRIPT)

    @staticmethod
    def intrinsic_dimension(d):
        return d - 1  # a position and S^{d-2} ⊂ R^{d-1}

    # ------------------------------------------------------------------ densities
    def check_model(self, model, where) -> None:
        if not self.moved_by(model):
            raise ValueError(f"{where!r} holds tokens with positions, moved by causal attention "
                             f"(SelfAttention(..., causal=True)); got {model!r}.")
        super().check_model(model, where)

    @staticmethod
    def grid_strategies(model, grid):
        return {"spectral": zonal_refusal(model), "quadrature": None}

    @staticmethod
    def continuity(model, grid, strategy, field=None, drift=None):
        if model is None or drift is not None:
            raise ValueError("feed-forward blocks are not defined on tokens with positions here: a causal "
                             "Transformer's blocks would act on the x part only (not implemented).")
        if strategy == "spectral":
            z = model.zonal
            return SequenceSpectral(grid, z.beta, z.c, model.normalized, model.decay)
        if any(h.rotary for h in model.heads):  # keys turned with their row: no seen measure, every pair of rows
            return SequencePairs(grid, model)
        return SequenceQuadrature(grid, model)

    @staticmethod
    def make_grid(parameters):
        positions = parameters.get("positions")
        return SequenceGrid(parameters["n"]) if positions is None else SequenceGrid(parameters["n"], positions)

    @staticmethod
    def check_dimension(d, densities):
        d = 3 if d is None else d
        if d < 3:
            raise ValueError(f"tokens with positions on S^(d-1) have 1 + d >= 3 coordinates, got {d}")
        if densities and d != 3:
            raise ValueError(f"densities of tokens with positions are solved on [0, 1] × S¹ (dimension 3), got {d}; "
                             "drop [grid] to run particles only")
        return d

    # ------------------------------------------------------------------ initial laws: the base's, the same at every s
    @staticmethod
    def _base(d):
        return unit_sphere(d)

    def uniform_noise(self, amplitude, modes, rng, twist: float = 0.0):
        r"""The circle's perturbed uniform law (:func:`meanfield.laws.uniform_noise`) at every position, turned by
        the angle 2π·twist·s at position s (:func:`meanfield.laws.along_positions`). ``twist`` = 0: the same law at
        every s (under SA every row then follows the circle's own equation, docs/MATH.md §8.4); ``twist`` ≠ 0
        gives the tokens at different positions different preferred directions."""
        return along_positions(self._base(2).uniform_noise(amplitude, modes, rng), twist)

    @staticmethod
    def sample(density, shape, rng):
        return density.grid.sample(density.values, shape, rng)

    plot = staticmethod(_plotting.plot)
    plot_points = staticmethod(_plotting.plot_points)
    plot_solution = staticmethod(_plotting.plot_solution)


SEQUENCE = register(Sequence())
