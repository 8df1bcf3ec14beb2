r"""S²'s panels: squares of the equiangular cubed sphere with tensor Gauss nodes, and the zonal field recorded by
its spherical-harmonic moments.

The sphere is cut into the six faces of a cube, each parametrised by the angles
(a, b) ∈ [−π/4, π/4]² of the gnomonic (central) projection, x = (n + tan a e₁ + tan b e₂)/|·|,
whose area element is

    dA = (1 + tan²a)(1 + tan²b) / (1 + tan²a + tan²b)^{3/2} da db

(smooth on each closed face, no poles). A panel [a_lo, a_hi] × [b_lo, b_hi] of a face carries
p × p Gauss–Legendre nodes with weights w = ρ_0(x) dA-weight ω_i ω_j (ρ_0 the initial density's
spherical-harmonic interpolant). A zonal field at time s needs the moments a_lm of μ_s up to the
kernel's degree L, ∫ Y_lm(Φ_s(x)) ρ_0(x) dA, and every Y_lm with l <= L is a combination of the plane waves
e^{iL⟨k,x⟩}, |k| = 1, which oscillate like e^{iL x_c}; so the panel is bisected along a where the quadrature error of

    f_c(a, b) = e^{iL x_c(Φ_s(x(a, b)))} ρ_0(x(a, b)) dA/(da db),   c = 1, 2, 3,

estimated as (area/4) · t_a · min(1, t_a/u_a)^{(p+1)/2} exceeds tol, with t_a = Σ_{c,j} (|C^c_{p−2,j}| +
|C^c_{p−1,j}|) and u_a = Σ_{c,j} (|C^c_{p−4,j}| + |C^c_{p−3,j}|), C^c the two-dimensional Legendre coefficients
of f_c on the panel (the same along b with the roles of the indices swapped): the tail t_a extrapolated, by its
decay over the last two degrees, to the degree 2p that Gauss quadrature misses (the tail itself where it does
not decay: an unresolved map). At s = 0 the same test on ρ_0 dA/(da db) resolves the initial measure. (A
criterion on Φ_s alone, mass × L × tail of Φ_s, misses the powers of L that the higher derivatives of
Y_lm ∘ Φ_s bring: it left the moments of a smooth β = 4 solution wrong by 8e-8 where this one gives 1e-11.)
The run records the moments (:mod:`meanfield.kernels.sphere`) at every stage of every accepted step; a new
point is replayed through them at O(L²) per recorded stage.

In two dimensions the map's steep set is a curve, not a point: where clusters form, the
stable manifolds of the saddles between them (the separatrices of their basins) are pulled
back to curves of the initial sphere across which Φ_t jumps from one cluster to another.
Panels straddling such a curve cannot be resolved; refining them halves the mass they carry,
so the error of the cluster masses is first order in the panel size there, and the panels
refine without end; metastable runs use fixed nodes instead (docs/MATH.md §6 has the
measurements).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..panels import TABLEAU, gauss
from .geometry import normalise
from .point_sums import (
    field_coefficients, harmonic_moments, multipliers, recurrence, sphere_degree, zonal_point, zonal_points,
    zonal_scale,
)

__all__ = ["SpherePanels", "SphereField", "FACES", "face_points"]

#: The six faces of the cube: (normal n, e₁, e₂) with e₁ × e₂ = n.
FACES = np.array([
    [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
    [[-1, 0, 0], [0, -1, 0], [0, 0, 1]],
    [[0, 1, 0], [0, 0, 1], [1, 0, 0]],
    [[0, -1, 0], [0, 0, -1], [1, 0, 0]],
    [[0, 0, 1], [1, 0, 0], [0, 1, 0]],
    [[0, 0, -1], [-1, 0, 0], [0, 1, 0]],
], dtype=float)
FACES.setflags(write=False)


def face_points(face, a, b):
    """Points of S² at face coordinates (a, b) (equal shapes) and the area element dA/(da db) there."""
    X, Y = np.tan(a), np.tan(b)
    F = FACES[face]
    v = F[..., 0, :] + X[..., None] * F[..., 1, :] + Y[..., None] * F[..., 2, :]
    r2 = 1.0 + X * X + Y * Y
    jac = (1.0 + X * X) * (1.0 + Y * Y) / r2 ** 1.5
    return v / np.sqrt(r2)[..., None], jac


@nb.njit(parallel=True, cache=True)
def _replay(y, cond, hs, b, S0, A_rk, B_rk, lap, A, B, qmm, c1, beta, normalized, scale):
    """Advance the points ``y`` (m, 4) = (x, ℓ) through the recorded steps ``hs`` with the recorded field
    coefficients ``b`` (S, stages, L+1, L+1) and ``S0`` (S, stages) — the same Dormand–Prince stages the measure
    took, with its field; the points are independent, so they run in parallel — and their conditioning
    ``cond`` (m, 2) = (min ℓ so far, log κ)."""
    m = y.shape[0]
    ns = B_rk.size
    for q in nb.prange(m):
        K = np.empty((ns, 4))
        out = np.empty(4)
        for s in range(hs.size):
            h = hs[s]
            for i in range(ns):
                x0, x1, x2 = y[q, 0], y[q, 1], y[q, 2]
                for j in range(i):
                    c = h * A_rk[i, j]
                    x0 += c * K[j, 0]
                    x1 += c * K[j, 1]
                    x2 += c * K[j, 2]
                r = np.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
                zonal_point(x0 / r, x1 / r, x2 / r, b[s, i], lap, A, B, qmm, c1, S0[s, i], beta, normalized, scale,
                            out)
                for c in range(4):
                    K[i, c] = out[c]
            for c in range(4):
                acc = 0.0
                for i in range(ns):
                    acc += B_rk[i] * K[i, c]
                y[q, c] += h * acc
            r = np.sqrt(y[q, 0] * y[q, 0] + y[q, 1] * y[q, 1] + y[q, 2] * y[q, 2])
            y[q, 0] /= r
            y[q, 1] /= r
            y[q, 2] /= r
            cond[q, 0] = min(cond[q, 0], y[q, 3])
            cond[q, 1] = max(cond[q, 1], y[q, 3] - cond[q, 0])


class SphereField:
    """The zonal field of a weighted point set on S² from its harmonic moments (:mod:`meanfield.kernels.sphere`):
    the rate of (x_i, ℓ_i) and the record that replays it."""

    ncol, k = 4, 3  # state columns (x, y, z, ℓ), chart columns (x, y, z)
    record_dtype = complex

    def __init__(self, model):
        beta, c = float(model.zonal.beta), float(model.zonal.c)
        self.beta, self.normalized = beta, bool(model.normalized)
        self.scale = zonal_scale(beta, self.normalized, c)
        self.degree = L = sphere_degree(beta)
        self.lap = multipliers(L, beta)[2]
        self.tables = recurrence(L)
        self.record_shape = (L + 1, L + 1)

    def rate(self, state, w):
        """(dx/dt, dℓ/dt) at the points (the state's rows, normalised) and the moments a_lm of Σ w_j δ_{x_j} (the
        record of this stage)."""
        x = normalise(state)
        a = harmonic_moments(x, w, self.degree)
        b, S0 = field_coefficients(a, self.beta)
        v, div, _ = zonal_points(x, b, self.lap, *self.tables, S0, self.beta, self.normalized, self.scale)
        return np.concatenate([v, div[:, None]], axis=1), a

    def replay(self, y, cond, hs, M):
        b, S0 = field_coefficients(M, self.beta)
        _replay(y, cond, hs, b, S0, TABLEAU.A, TABLEAU.B, self.lap, *self.tables, self.beta, self.normalized,
                self.scale)

    @staticmethod
    def retract(y):
        """The points back onto S² after a step (their rows normalised; ℓ as it is)."""
        y = np.array(y, copy=True)
        y[:, :3] = normalise(y[:, :3])
        return y


class SpherePanels:
    """Squares of the six cube faces with their p × p Gauss nodes, weights, log ρ_0 and moving state (x, ℓ).

    Arrays are panel-major: ``face`` and the extents ``a_lo, a_hi, b_lo, b_hi`` (P,), ``x`` (P, p², 3),
    ``w``, ``logr0`` (P, p²), ``y`` (P, p², 4), ``cond`` (P, p², 2); node (i, j) of a panel is at index
    i·p + j (i along a, j along b)."""

    def __init__(self, density, order: int, count: int, tol: float, min_width: float):
        self.density, self.p, self.tol, self.min_width = density, order, tol, min_width
        self.gx, self.gw, self.T = gauss(order)
        edges = 0.5 * np.pi * (np.arange(count + 1) / count - 0.5)
        i, j = np.meshgrid(np.arange(count), np.arange(count), indexing="ij")
        self.face = np.repeat(np.arange(6), count * count)
        self.a_lo, self.a_hi = np.tile(edges[i.ravel()], 6), np.tile(edges[i.ravel() + 1], 6)
        self.b_lo, self.b_hi = np.tile(edges[j.ravel()], 6), np.tile(edges[j.ravel() + 1], 6)
        self.x, self.w, self.logr0, self._density = self._nodes(self.face, self.a_lo, self.a_hi, self.b_lo, self.b_hi)
        self.y = self.cond = None
        # resolve ρ_0 itself first: the quadrature of the initial measure
        while True:
            split, _, added = self._split(self._density)
            if not added:
                break
            self.bisect(split, None)
        self.y = np.concatenate([self.x, np.zeros(self.x.shape[:-1] + (1,))], axis=-1)
        self.cond = np.zeros(self.x.shape[:-1] + (2,))
        self._mesh = None

    @staticmethod
    def default_count(density, order: int) -> int:
        """Panels per cube-face side: lmax/(2·order), at least 2 (the grid's node spacing π/lmax on the faces,
        which span π/2)."""
        return max(2, int(np.ceil(density.grid.lmax / (2 * order))))

    @property
    def count(self) -> int:
        return self.face.size

    def _nodes(self, face, a_lo, a_hi, b_lo, b_hi):
        p = self.p
        a = 0.5 * (a_lo + a_hi)[:, None] + 0.5 * (a_hi - a_lo)[:, None] * self.gx  # (P, p)
        b = 0.5 * (b_lo + b_hi)[:, None] + 0.5 * (b_hi - b_lo)[:, None] * self.gx
        A = np.broadcast_to(a[:, :, None], (a.shape[0], p, p)).reshape(-1, p * p)
        B = np.broadcast_to(b[:, None, :], (b.shape[0], p, p)).reshape(-1, p * p)
        x, jac = face_points(np.broadcast_to(face[:, None], A.shape), A, B)
        rho = np.asarray(self.density(x), dtype=float)
        positive = rho > 0
        omega = np.outer(self.gw, self.gw).ravel() * (0.25 * (a_hi - a_lo) * (b_hi - b_lo))[:, None]
        density = np.where(positive, rho, 0.0) * jac  # ρ_0 dA/(da db)
        with np.errstate(divide="ignore"):
            logr = np.where(positive, np.log(np.where(positive, rho, 1.0)), -np.inf)
        return x, density * omega, logr, density

    def _errors(self, f):
        """Estimated Gauss quadrature errors along a and along b of f (P, p², ...), summed over the trailing axes.

        With C the two-dimensional Legendre coefficients on the panel, t = Σ (|C_{p−2,·}| + |C_{p−1,·}|) the
        tail and s = Σ (|C_{1,·}| + |C_{2,·}|) the variation along a (the same along b): Gauss quadrature with p
        nodes errs by about the coefficient of degree 2p, and a geometric decay from s through t extrapolates
        that to t·min(1, t/s) — the tail itself where the coefficients do not decay (an unresolved map), far
        less where they decay fast. (The circle's panels, with 16 nodes, use the tail itself.)"""
        p = self.p
        F = np.moveaxis(f.reshape((f.shape[0], p, p, -1)), -1, 1)  # (P, c, p, p)
        C = np.moveaxis(np.abs(self.T @ F @ self.T.T), 1, -1)  # (P, p, p, c): small matrix products, no BLAS threads
        out = []
        for Ca in (C, np.swapaxes(C, 1, 2)):
            t = Ca[:, -1].sum(axis=(1, 2)) + Ca[:, -2].sum(axis=(1, 2))
            s = Ca[:, -3].sum(axis=(1, 2)) + Ca[:, -4].sum(axis=(1, 2))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(t < s, t / np.where(s > 0, s, 1.0), 1.0)  # decay over two degrees at the tail
            out.append(t * ratio ** (0.5 * (p + 1)))
        return out

    def unresolved(self, degree: int):
        """(panels to bisect with the directions, the mass of those that fail the criterion but are too narrow to
        be split in a failing direction, points added)."""
        # the integrand of a moment of degree L on the panel, e^{iL x_c(Φ_t)} ρ_0 dA/(da db), for c = x, y, z:
        # its Legendre tail bounds the quadrature error of every a_lm, l <= L, including the powers of L that
        # the higher derivatives of Y_lm ∘ Φ_t bring (a first-order criterion on Φ_t alone misses them)
        return self._split(np.exp(1j * max(1, degree) * self.y[..., :3]) * self._density[..., None])

    def _split(self, f):
        """:meth:`unresolved` for the integrand f (P, p², ...) on the panels."""
        area = 0.25 * (self.a_hi - self.a_lo) * (self.b_hi - self.b_lo)
        ta, tb = self._errors(f)
        bad_a, bad_b = area * ta > self.tol, area * tb > self.tol
        wide_a = (self.a_hi - self.a_lo) > self.min_width
        wide_b = (self.b_hi - self.b_lo) > self.min_width
        split_a, split_b = bad_a & wide_a, bad_b & wide_b
        stuck = (bad_a & ~wide_a & ~split_b) | (bad_b & ~wide_b & ~split_a)
        idx = np.flatnonzero(split_a | split_b)
        children = (1 + split_a[idx]) * (1 + split_b[idx])
        return (idx, split_a[idx], split_b[idx]), float(self.w[stuck].sum()), int(np.sum(children - 1)) * self.p ** 2

    def bisect(self, split, replay):
        idx, sa, sb = split
        parts = []
        for ia in (0, 1):
            for ib in (0, 1):
                sel = (sa | (ia == 0)) & (sb | (ib == 0))  # child (ia, ib) exists where that half is split off
                k = idx[sel]
                amid = 0.5 * (self.a_lo[k] + self.a_hi[k])
                bmid = 0.5 * (self.b_lo[k] + self.b_hi[k])
                a_lo = np.where(sa[sel], np.where(ia == 0, self.a_lo[k], amid), self.a_lo[k])
                a_hi = np.where(sa[sel], np.where(ia == 0, amid, self.a_hi[k]), self.a_hi[k])
                b_lo = np.where(sb[sel], np.where(ib == 0, self.b_lo[k], bmid), self.b_lo[k])
                b_hi = np.where(sb[sel], np.where(ib == 0, bmid, self.b_hi[k]), self.b_hi[k])
                parts.append((self.face[k], a_lo, a_hi, b_lo, b_hi))
        face, a_lo, a_hi, b_lo, b_hi = (np.concatenate(c) for c in zip(*parts))
        x, w, logr, density = self._nodes(face, a_lo, a_hi, b_lo, b_hi)
        keep = np.ones(self.face.size, dtype=bool)
        keep[idx] = False
        self.face = np.concatenate([self.face[keep], face])
        self.a_lo, self.a_hi = np.concatenate([self.a_lo[keep], a_lo]), np.concatenate([self.a_hi[keep], a_hi])
        self.b_lo, self.b_hi = np.concatenate([self.b_lo[keep], b_lo]), np.concatenate([self.b_hi[keep], b_hi])
        self.x = np.concatenate([self.x[keep], x])
        self.w = np.concatenate([self.w[keep], w])
        self.logr0 = np.concatenate([self.logr0[keep], logr])
        self._density = np.concatenate([self._density[keep], density])
        self._mesh = None
        if replay is not None:
            y = np.ascontiguousarray(np.concatenate([x.reshape(-1, 3), np.zeros((x.shape[0] * x.shape[1], 1))],
                                                    axis=1))
            cond = np.zeros((y.shape[0], 2))
            replay(y, cond)
            self.y = np.concatenate([self.y[keep], y.reshape(x.shape[:-1] + (4,))])
            self.cond = np.concatenate([self.cond[keep], cond.reshape(x.shape[:-1] + (2,))])

    def origins(self) -> np.ndarray:
        """The initial point of each point, (n, 3)."""
        return self.x.reshape(-1, 3)

    def mesh(self):
        """Triangles of the initial points' convex hull (a triangulation of S² that the flow moves)."""
        if self._mesh is None:
            from scipy.spatial import ConvexHull

            self._mesh = ConvexHull(self.origins()).simplices
        return self._mesh

    def frame(self) -> dict:
        """The arguments of the Lagrangian measure of the current points (:class:`meanfield.lagrangian.LagrangianMeasure`)."""
        y = self.y.reshape(-1, 4)
        return dict(state=y[:, :3], weights=self.w.ravel(), log_density=self.logr0.ravel() - y[:, 3], mesh=self.mesh(),
                    log_condition=self.cond[..., 1].ravel())
