r"""Conservative schemes for ∂_t ρ + div(ρ Γ[ρ]) = 0 in R^d, d = 1, 2 (CACP; MATH.md §5; docs/MATH.md §5.1).

The values are the density at the cell centres x_i (:meth:`meanfield.Density.from_function` samples there, and the
grid measure puts ρ_i |cell| at x_i: midpoint sums, spectrally accurate for smooth densities that decay inside the
box). The rate is a difference of face fluxes, dρ_i/dt = −Σ_k (F_{i+e_k/2} − F_{i−e_k/2})/h_k, so interior fluxes
cancel and the mass Σ_i ρ_i |cell| changes only by the boundary fluxes, i.e. by what leaves the box (outflow
boundaries: a boundary flux is clipped to point out of the box, and ρ = 0 in the ghost cells beyond it).

- Field Γ at the cell centres for the grid measure (centres, ρ_i |cell|), by
  strategy (:mod:`meanfield.kernels.strategies`): ``quadrature``, the model's own sum
  ``model.field``; ``spectral``, for L2 attention with Q = K (a
  translation-invariant kernel e^{−|Q(x−y)|²/(2τ)}), FFT convolutions of
  numerator and normaliser on the zero-padded grid, O(N log N); ``separable``,
  for softmax, the same exact sums computed on the tensor grid from
  e^{β⟨Ax,y⟩} = Π_k e^{β(Ax)_k y_k}, so Σ_y ρ(y) y e^{β⟨Ax,y⟩} is a matrix
  product with m(n_1 + n_2) exponentials instead of m n_1 n_2, each factor
  shifted by its exact row maximum.
- Fluxes, ``scheme="weno5"`` (the default, what ``solve`` uses): the conservative finite-difference form of Shu &
  Osher (JCP 83, 1989): along each axis, F_{i+1/2} is the WENO5-Z reconstruction (:func:`_weno5z`) at x_{i+1/2} of
  the point fluxes f_j = u_j ρ_j, split by local Lax–Friedrichs, f^± = (f ± α_{i+1/2} ρ)/2 with α_{i+1/2} the largest
  |u_k| over the six cells of the two stencils (:func:`_face_speeds`): f^+ from the upwind stencil i−2..i+2, f^− from
  the mirrored one i−1..i+3. For point values this is fifth order in h on smooth data in any dimension, axis by
  axis: no cell-average/point-value conversion and no quadrature across faces (Shu, ICASE report 97-65, 1997, the
  finite-difference formulation; a finite-volume WENO would need both in 2-D). Non-oscillatory at jumps (WENO
  weights), and positivity preserving through :func:`_positivity_limited`: with S = max_i Σ_k α_k/h_k the rate
  satisfies ρ_i + τ dρ_i/dt >= 0 for τ <= 1/S, so every SSP-RK3 stage keeps ρ >= 0 at cfl <= 1. Linear stability
  (computed from the symbol of the fifth-order upwind scheme, the WENO weights at their linear values; the same limit
  in 1-D and 2-D with cfl = dt S): RK4 to cfl 1.73, SSP-RK3 to 1.43; forward Euler is unstable at any step.
- Fluxes, ``scheme="muscl"`` (the earlier scheme, kept as the reference): MUSCL with the minmod limiter, face
  velocity the average of the two centres, upwind flux F = u⁺ρ_L + u⁻ρ_R; second order, positivity preserving with
  SSP-RK3 and dt Σ_k |u_k|/h_k <= 1/2.

Which is used when: every R^d grid solve uses "weno5". With the Euclidean default ``method="rk4"`` (cfl 0.8) it is
fourth order in time and fifth in space on smooth data, and the fluxes are positivity limited stage by stage, but
RK4's stages are not convex combinations of Euler steps, so ρ >= 0 is not guaranteed (the resolution monitor rejects
a negative state). For non-smooth data (jumps, compact supports) pass ``method="ssprk3"`` (cfl <= 1): ρ >= 0 at
every stage, third order in time.

The model is read through its public attributes (``matrices``, ``field``) and what it offers
(``translation_kernel``, ``tilt_matrix``: the kernel of the FFT convolution, the matrix of the separable sums):
this layer does not import the models, nor asks which kind it holds.
"""

from __future__ import annotations

import numpy as np
import scipy.fft as sfft

from .grid import EuclideanGrid

__all__ = ["FiniteVolume", "SCHEMES"]

#: The flux schemes, default first.
SCHEMES = ("weno5", "muscl")


def _minmod(a, b):
    return np.where(a * b > 0, np.sign(a) * np.minimum(np.abs(a), np.abs(b)), 0.0)


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
    scheme : {"weno5", "muscl"}
        The face fluxes (module docstring): fifth-order WENO5-Z with the positivity limiter (default), or the
        second-order MUSCL–minmod reference.
    drift : callable, optional
        A fixed velocity ``drift(points) -> vectors`` added to Γ (a Transformer's feed-forward blocks), evaluated
        once at the cell centres; with ``model`` None, the drift alone.
    """

    @staticmethod
    def strategies(model, grid=None) -> dict[str, str | None]:
        """FFT convolution for L2 with Q = K, separable sums for softmax, quadrature always: best first."""
        if model is None:
            return {"quadrature": None}
        return {"spectral": None if model.translation_kernel is not None else
                f"FFT summation needs L2 attention with Q = K (a translation-invariant kernel); got {model!r}",
                "separable": None if model.tilt_matrix is not None else
                f"separable summation is for softmax attention; got {model!r}",
                "quadrature": None}

    def __init__(self, grid: EuclideanGrid, model, strategy: str = "quadrature", field=None, scheme: str = "weno5",
                 drift=None):
        why = self.strategies(model).get(strategy, f"finite volumes offer {tuple(self.strategies(model))}")
        if why is not None:
            raise ValueError(f"`strategy` {strategy!r}: {why}.")
        if scheme not in SCHEMES:
            raise ValueError(f"`scheme` must be one of {SCHEMES}, got {scheme!r}.")
        self.scheme = scheme
        self.grid, self.model = grid, model
        self.noisy = bool(getattr(model, "noise", 0.0))  # the field reads the positive part (:meth:`_interaction`)
        self.field = model.field if field is None and model is not None else field
        self._drift = None if drift is None else drift(grid.points.reshape(-1, grid.dim)).reshape(grid.points.shape)
        self.fft = strategy == "spectral"
        self.separable = strategy == "separable"
        self.strategy = strategy
        if self.fft:
            d = grid.dim
            offs = [np.arange(-(s - 1), s) * h for s, h in zip(grid.shape, grid.widths)]
            Z = np.stack(np.meshgrid(*offs, indexing="ij"), axis=-1)
            self._V = model.matrices(d)[2]
            kernel = model.translation_kernel(Z)
            # linear convolution through one zero-padded FFT size; the kernel is transformed once
            self._fshape = tuple(sfft.next_fast_len(3 * s - 2, real=True) for s in grid.shape)
            self._axes = tuple(range(-d, 0))
            self._kernel_hat = sfft.rfftn(kernel, self._fshape, axes=self._axes)
            self._slices = (slice(None),) + tuple(slice(s - 1, 2 * s - 1) for s in grid.shape)

    def velocity(self, values) -> np.ndarray:
        """Γ (plus the drift) at the cell centres, shape grid.shape + (d,)."""
        u = self._interaction(values)
        return u if self._drift is None else u + self._drift

    def _interaction(self, values) -> np.ndarray:
        g = self.grid
        if self.model is None:
            return np.zeros(g.points.shape)
        # with noise, the field of the grid measure's positive part: the round-off negatives (~1e-17) that the
        # diffusion's exact DST transforms leave in the far field would otherwise be weighted by e^{⟨Ax, y⟩} there,
        # ~e^{30} at the edge of a wide box, and swamp the softmax sums (the normaliser can even turn negative). The
        # noiseless limited scheme keeps its states non-negative and is left bit for bit as it was.
        mass = (np.maximum(values, 0.0) if self.noisy else values) * g.weights
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
        a = g.points.reshape(-1, d) @ model.tilt_matrix(d).T  # (m, d): (Bx)_k, the kernel e^{⟨Bx, y⟩}
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

    # ------------------------------------------------------------------ speeds
    def _speeds(self, u, alphas=None):
        """(spacing × S, max strain), S the inverse time scale of the scheme: the solver takes dt = cfl / S.

        MUSCL: S = max_i Σ_k |u_k|/h_k over the outflow faces of each cell; WENO5: S = max_i Σ_k α_k/h_k with α_k the
        larger of the two Lax–Friedrichs speeds (:func:`_face_speeds`; ``alphas``, per axis, if known) of the faces of
        cell i."""
        g = self.grid
        inv_time = np.zeros(g.shape)
        strain = 0.0
        for k in range(g.dim):
            uk = np.moveaxis(u[..., k], k, -1)
            if self.scheme == "weno5":
                a = _face_speeds(uk) if alphas is None else alphas[k]
                inv_time += np.moveaxis(np.maximum(a[..., 1:], a[..., :-1]), -1, k) / g.widths[k]
            else:
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
        """(dρ/dt, spacing × S, max strain) at the values (:meth:`_speeds`)."""
        u = self.velocity(values)
        if self.scheme == "weno5":
            alphas = [_face_speeds(np.moveaxis(u[..., k], k, -1)) for k in range(self.grid.dim)]
            vmax, strain = self._speeds(u, alphas)
            fluxes = self._weno5_fluxes(values, u, alphas)
            tau = self.grid.spacing / vmax if vmax > 0 else 0.0
            fluxes = _positivity_limited(values, fluxes, self.grid.widths, tau)
        else:
            vmax, strain = self._speeds(u)
            fluxes = self._muscl_fluxes(values, u)
        div = np.zeros(self.grid.shape)
        for k, (F, h) in enumerate(zip(fluxes, self.grid.widths)):
            div += np.moveaxis(np.diff(F, axis=-1) / h, -1, k)
        return -div, vmax, strain

    # ------------------------------------------------------------------ fluxes
    def _weno5_fluxes(self, values, u, alphas):
        """Face fluxes per axis k (axis k last, n_k + 1 faces): WENO5-Z with local Lax–Friedrichs splitting at the
        face speeds ``alphas`` (:func:`_face_speeds`, per axis)."""
        fluxes = []
        for k in range(self.grid.dim):
            r = np.moveaxis(values, k, -1)
            uk = np.moveaxis(u[..., k], k, -1)
            a = alphas[k]
            pad = [(0, 0)] * (r.ndim - 1) + [(3, 3)]
            P, R = np.pad(uk * r, pad), np.pad(r, pad)  # ρ = 0 (no flux) in the three ghost cells each side
            n = r.shape[-1]
            f = [P[..., j:j + n + 1] for j in range(6)]  # f_{s-3}, ..., f_{s+2} at face s
            q = [R[..., j:j + n + 1] for j in range(6)]
            plus = [0.5 * (fj + a * qj) for fj, qj in zip(f[:5], q[:5])]
            minus = [0.5 * (fj - a * qj) for fj, qj in zip(f[:0:-1], q[:0:-1])]
            eps = _EPS * (float(np.max(np.abs(r))) * float(np.max(a))) ** 2 + np.finfo(float).tiny
            F = _weno5z(*plus, eps) + _weno5z(*minus, eps)
            F[..., 0] = np.minimum(F[..., 0], 0.0)  # outflow boundaries: nothing flows in
            F[..., -1] = np.maximum(F[..., -1], 0.0)
            fluxes.append(F)
        return fluxes

    def _muscl_fluxes(self, values, u):
        """Face fluxes per axis k (axis k last, n_k + 1 faces): MUSCL–minmod, upwind by the face velocity."""
        fluxes = []
        for k in range(self.grid.dim):
            r = np.moveaxis(values, k, -1)
            uk = np.moveaxis(u[..., k], k, -1)
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
            fluxes.append(np.concatenate([f_lo, flux, f_hi], axis=-1))
        return fluxes


#: WENO-Z's ε relative to (max ρ × max α)²: smoothness indicators below it count as smooth (linear weights).
_EPS = 1e-24


def _face_speeds(u):
    """Local Lax–Friedrichs speeds α_s = max |u_j| over the cells s−3, …, s+2 of the stencils of face s (between
    cells s−1 and s; the cells beyond the box count as their nearest cell): shape (..., n + 1)."""
    a = np.pad(np.abs(u), [(0, 0)] * (u.ndim - 1) + [(3, 3)], mode="edge")
    two = np.maximum(a[..., :-1], a[..., 1:])  # max over j, j + 1
    four = np.maximum(two[..., :-2], two[..., 2:])  # j, ..., j + 3
    return np.maximum(four[..., :-2], two[..., 4:])  # j, ..., j + 5


def _weno5z(v0, v1, v2, v3, v4, eps):
    r"""WENO5-Z reconstruction at the face between v2 and v3 from the left (upwind) stencil v0, …, v4.

    Candidates q_0 = (2v_0 − 7v_1 + 11v_2)/6, q_1 = (−v_1 + 5v_2 + 2v_3)/6, q_2 = (2v_2 + 5v_3 − v_4)/6, Jiang–Shu
    smoothness indicators β_k (Jiang & Shu, JCP 126, 1996), linear weights d = (1, 6, 3)/10 (which make Σ d_k q_k
    the fifth-order upwind value), WENO-Z weights ω_k ∝ d_k (1 + (τ_5/(β_k + ε))^p), τ_5 = |β_0 − β_2|, p = 2
    (Borges, Carmona, Costa & Don, JCP 227, 2008; p = 2 keeps fifth order at first-order critical points, Castro,
    Costa & Don, JCP 230, 2011): on smooth data ω_k → d_k fast enough that the value is fifth order; at a jump the
    stencils across it get weight ~0 (essentially non-oscillatory).
    """
    b0 = 13.0 / 12.0 * (v0 - 2.0 * v1 + v2) ** 2 + 0.25 * (v0 - 4.0 * v1 + 3.0 * v2) ** 2
    b1 = 13.0 / 12.0 * (v1 - 2.0 * v2 + v3) ** 2 + 0.25 * (v1 - v3) ** 2
    b2 = 13.0 / 12.0 * (v2 - 2.0 * v3 + v4) ** 2 + 0.25 * (3.0 * v2 - 4.0 * v3 + v4) ** 2
    tau = np.abs(b0 - b2)
    w0 = 0.1 * (1.0 + (tau / (b0 + eps)) ** 2)
    w1 = 0.6 * (1.0 + (tau / (b1 + eps)) ** 2)
    w2 = 0.3 * (1.0 + (tau / (b2 + eps)) ** 2)
    q = (w0 * (2.0 * v0 - 7.0 * v1 + 11.0 * v2) + w1 * (-v1 + 5.0 * v2 + 2.0 * v3) + w2 * (2.0 * v2 + 5.0 * v3 - v4))
    return q / (6.0 * (w0 + w1 + w2))


def _positivity_limited(values, fluxes, widths, tau):
    r"""Scale the face fluxes so that ρ_i + τ' (dρ/dt)_i >= 0 for every τ' <= ``tau`` wherever ρ >= 0.

    Each face flux F leaves one cell, its donor (the left cell if F > 0, the right one if F < 0). With
    out_i = Σ_k Σ_{faces of i in direction k that i donates through} |F|/h_k, the fluxes i donates through are
    multiplied by θ_i = min(1, ρ_i⁺/(τ out_i)): then ρ_i + τ' rate_i >= ρ_i − τ' θ_i out_i >= 0 (what flows in is
    >= 0 and only ever scaled down). The fluxes stay single valued at faces, so the scheme stays conservative. With
    ``tau`` = 1/S (:meth:`FiniteVolume._speeds`) every forward Euler stage dt <= 1/S, hence SSP-RK3 at cfl <= 1, keeps
    ρ >= 0 (a flux limiter in the spirit of Hu, Adams & Shu, JCP 242, 2013, blending towards the zero flux rather
    than the Lax–Friedrichs one, which suffices for a scalar equation). On resolved smooth
    data the donated outflow of a cell is ≈ ρ_i Σ_k |u_k|/h_k < ρ_i S, so θ = 1 (the limiter is inactive) except
    where the density is negligible.
    """
    if not tau > 0:
        return fluxes
    rho = np.maximum(values, 0.0)
    out = np.zeros(values.shape)
    for k, (F, h) in enumerate(zip(fluxes, widths)):
        Fk = np.moveaxis(F, -1, k)
        out += (np.maximum(np.take(Fk, np.arange(1, Fk.shape[k]), axis=k), 0.0)
                + np.maximum(-np.take(Fk, np.arange(0, Fk.shape[k] - 1), axis=k), 0.0)) / h
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.where(tau * out > rho, rho / (tau * out), 1.0)
    limited = []
    for k, F in enumerate(fluxes):
        t = np.moveaxis(theta, k, -1)
        pad = [(0, 0)] * (t.ndim - 1) + [(1, 1)]
        tp = np.pad(t, pad, constant_values=1.0)
        limited.append(F * np.where(F > 0, tp[..., :-1], tp[..., 1:]))
    return limited
