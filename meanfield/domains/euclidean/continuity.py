r"""Finite volumes for ∂_t ρ + div(ρ Γ[ρ]) = 0 in R^d, d = 1, 2 (CACP; MATH.md §5).

- Field Γ at the cell centres for the grid measure (centres, ρ_i |cell|), by
  strategy (:mod:`meanfield.strategies`): ``quadrature``, the model's own sum
  ``model.field``; ``spectral``, for L2 attention with Q = K (a
  translation-invariant kernel e^{−|Q(x−y)|²/(2τ)}), FFT convolutions of
  numerator and normaliser on the zero-padded grid, O(N log N); ``separable``,
  for softmax, the same exact sums computed on the tensor grid from
  e^{β⟨Ax,y⟩} = Π_k e^{β(Ax)_k y_k}, so Σ_y ρ(y) y e^{β⟨Ax,y⟩} is a matrix
  product with m(n_1 + n_2) exponentials instead of m n_1 n_2, each factor
  shifted by its exact row maximum.
- Face velocities: the average of the two neighbouring centres (second order).
- Reconstruction: MUSCL with the minmod limiter, upwind flux
  F = u⁺ρ_L + u⁻ρ_R at every face; outflow boundaries (nothing flows in).
  The scheme is conservative — interior fluxes cancel, so the mass changes
  only by the boundary fluxes, i.e. by what leaves the box — and, with
  SSP-RK3 and dt Σ_k |u_k|/h_k <= 1/2, positivity preserving.

The model is read through its public attributes (``kind``, ``matrices``,
``A``, ``beta``, ``tau``, ``field``): this layer does not import the models.
"""

from __future__ import annotations

import numpy as np
import scipy.fft as sfft

from .grid import EuclideanGrid

__all__ = ["FiniteVolume"]


def _minmod(a, b):
    return np.where(a * b > 0, np.sign(a) * np.minimum(np.abs(a), np.abs(b)), 0.0)


def _translation_invariant(model) -> bool:
    """L2 attention with Q = K: the kernel depends on x − y only."""
    return model.kind == "l2" and (
        (model.Q is None and model.K is None)
        or (model.Q is not None and model.K is not None and np.array_equal(model.Q, model.K))
    )


class FiniteVolume:
    """Right-hand side of the continuity equation on an :class:`EuclideanGrid`.

    Parameters
    ----------
    grid : EuclideanGrid
    model : an R^d model of :mod:`meanfield.models`
    strategy : {"quadrature", "spectral", "separable"}
        "spectral" (FFT convolution) needs L2 attention with Q = K, "separable" softmax attention
        (:meth:`strategies`).
    field : callable, optional
        ``field(points, weights, queries)`` for the quadrature strategy; default ``model.field``.
    """

    @staticmethod
    def strategies(model, grid=None) -> dict[str, str | None]:
        """FFT convolution for L2 with Q = K, separable sums for softmax, quadrature always: best first."""
        return {"spectral": None if _translation_invariant(model) else
                f"FFT summation needs L2 attention with Q = K (a translation-invariant kernel); got {model!r}",
                "separable": None if model.kind == "softmax" else
                f"separable summation is for softmax attention; got {model!r}",
                "quadrature": None}

    def __init__(self, grid: EuclideanGrid, model, strategy: str = "quadrature", field=None):
        why = self.strategies(model).get(strategy, f"finite volumes offer {tuple(self.strategies(model))}")
        if why is not None:
            raise ValueError(f"`strategy` {strategy!r}: {why}.")
        self.grid, self.model = grid, model
        self.field = model.field if field is None else field
        self.fft = strategy == "spectral"
        self.separable = strategy == "separable"
        self.strategy = strategy
        if self.fft:
            d = grid.dim
            offs = [np.arange(-(s - 1), s) * h for s, h in zip(grid.shape, grid.widths)]
            Z = np.stack(np.meshgrid(*offs, indexing="ij"), axis=-1)
            Q, _, self._V = model.matrices(d)
            QZ = Z @ Q.T
            kernel = np.exp(-np.sum(QZ * QZ, axis=-1) / (2.0 * model.tau))
            # linear convolution through one zero-padded FFT size; the kernel is transformed once
            self._fshape = tuple(sfft.next_fast_len(3 * s - 2, real=True) for s in grid.shape)
            self._axes = tuple(range(-d, 0))
            self._kernel_hat = sfft.rfftn(kernel, self._fshape, axes=self._axes)
            self._slices = (slice(None),) + tuple(slice(s - 1, 2 * s - 1) for s in grid.shape)

    def velocity(self, values) -> np.ndarray:
        """Γ at the cell centres, shape grid.shape + (d,)."""
        g = self.grid
        mass = values * g.weights
        if self.fft:
            stack = np.concatenate([mass[None], np.moveaxis(mass[..., None] * g.points, -1, 0)])  # (1 + d, ...)
            hat = sfft.rfftn(stack, self._fshape, axes=self._axes) * self._kernel_hat
            conv = sfft.irfftn(hat, self._fshape, axes=self._axes)[self._slices]
            den, num = conv[0], np.moveaxis(conv[1:], 0, -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                avg = num / den[..., None]
            return np.nan_to_num(avg, nan=0.0) @ self._V.T
        if self.separable:
            return self._separable_softmax(mass)
        pts = g.points.reshape(-1, g.dim)
        return self.field(pts, mass.ravel(), pts).reshape(g.shape + (g.dim,))

    def _separable_softmax(self, mass):
        g, model = self.grid, self.model
        d = g.dim
        a = model.beta * g.points.reshape(-1, d) @ model.A(d).T  # (m, d): β(Ax)_k
        factors = []
        for k in range(d):
            s = np.outer(a[:, k], g.axes[k])  # (m, n_k)
            factors.append(np.exp(s - np.max(s, axis=1, keepdims=True)))
        V = model.matrices(d)[2]
        if d == 1:
            E = factors[0]
            den = E @ mass
            num = (E * g.axes[0]) @ mass
            return ((num / den)[:, None] @ V.T).reshape(g.shape + (1,))
        E1, E2 = factors
        P = E1 @ mass  # (m, n_2)
        P1 = (E1 * g.axes[0]) @ mass
        den = np.einsum("mj,mj->m", P, E2)
        num = np.stack([np.einsum("mj,mj->m", P1, E2), np.einsum("mj,mj->m", P, E2 * g.axes[1])], axis=-1)
        return ((num / den[:, None]) @ V.T).reshape(g.shape + (2,))

    def _speeds(self, u):
        """(spacing × max_i Σ_k |u_k|/h_k, max strain): the solver takes dt = cfl × spacing / speed."""
        g = self.grid
        inv_time = np.zeros(g.shape)
        strain = 0.0
        for k in range(g.dim):
            uk = np.moveaxis(u[..., k], k, -1)
            uf = 0.5 * (uk[..., :-1] + uk[..., 1:])  # interior faces
            faces = np.concatenate([uk[..., :1], uf, uk[..., -1:]], axis=-1)
            inv_time += np.moveaxis(np.maximum(np.maximum(faces[..., 1:], 0.0), np.maximum(-faces[..., :-1], 0.0)),
                                    -1, k) / g.widths[k]
            if uk.shape[-1] > 1:
                strain = max(strain, float(np.max(np.abs(np.diff(uk, axis=-1))) / g.widths[k]))
        return float(np.max(inv_time)) * g.spacing, strain

    def speeds(self, values):
        return self._speeds(self.velocity(values))

    def rate(self, values):
        return self.rate_and_speeds(values)[0]

    def rate_and_speeds(self, values):
        g = self.grid
        u = self.velocity(values)
        div = np.zeros(g.shape)
        for k in range(g.dim):
            r = np.moveaxis(values, k, -1)
            uk = np.moveaxis(u[..., k], k, -1)
            h = g.widths[k]
            # slopes with zero ghost cells outside the box
            padded = np.concatenate([np.zeros(r.shape[:-1] + (1,)), r, np.zeros(r.shape[:-1] + (1,))], axis=-1)
            slope = _minmod(np.diff(padded, axis=-1)[..., :-1], np.diff(padded, axis=-1)[..., 1:])
            left_state = r + 0.5 * slope  # at the right face of each cell
            right_state = r - 0.5 * slope  # at the left face of each cell
            uf = 0.5 * (uk[..., :-1] + uk[..., 1:])  # interior faces
            flux = np.maximum(uf, 0.0) * left_state[..., :-1] + np.minimum(uf, 0.0) * right_state[..., 1:]
            # boundary faces: outflow only
            f_lo = np.minimum(uk[..., :1], 0.0) * right_state[..., :1]
            f_hi = np.maximum(uk[..., -1:], 0.0) * left_state[..., -1:]
            F = np.concatenate([f_lo, flux, f_hi], axis=-1)
            div += np.moveaxis(np.diff(F, axis=-1) / h, -1, k)
        return (-div,) + self._speeds(u)
