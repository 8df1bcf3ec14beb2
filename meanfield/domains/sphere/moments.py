r"""The moment path on S²: any Q, K, V and several heads, through the moment generating function of ρ.

For a head with A = β KᵀQ (so β⟨Qx, Ky⟩ = ⟨Ax, y⟩) the sums of X[ρ] at x are
the moment generating function M(w) = ∫ e^{⟨w,y⟩} ρ(y) dy and its gradient at w = Ax:

.. math::

    Z(x) = \int e^{\langle Ax, y\rangle}\rho(y)\,dy = M(Ax),\qquad
    N(x) = \int e^{\langle Ax, y\rangle}\,y\,\rho(y)\,dy = \nabla M(Ax),\qquad
    X[\rho](x) = P_x^\perp \sum_h V_h N_h(x) / Z_h(x)

(Z_h ≡ 1 for USA heads; MATH.md §1–2, GLPR (2.3), (2.7)). By Funk–Hecke, a
function g of degree l has ∫ e^{⟨w,y⟩} g(y) dy = 4π i_l(|w|) g(ŵ), i.e.
M(w) = 4π Σ_l i_l(|w|) ρ_l(ŵ) (ρ_l the degree-l part of ρ). So ρ ↦ Z is linear,
and N_k is the same map applied to y_k ρ. The kernel e^{⟨Ax,y⟩} is entire in x
and in y: its degree-l part in either variable is at most (2l + 1) i_l(s) in
size, s = ‖A‖₂. Truncated at degree D in both, the map is one matrix 𝒦 from
the coefficients of degree <= min(D, L) of its argument to those of degree <= D
of Z (or N_k), built once per head and grid (:func:`moment_matrix`). Per
right-hand side (on the a_lm of ρ) this costs one synthesis of ρ and three
analyses of degree min(D, L) of y_k ρ on the dealiased grid, one 4-column product
with 𝒦 per head, four syntheses of degree D per head and the divergence's two
analyses — O(L³) where the quadrature sums over the grid measure cost O(L⁴).

Truncation bound (a priori): for ρ >= 0 of degree <= L and mass m, both
truncations together change Z and N by at most T_D(s)(1 + (L + 1)) m, with
T_D(s) = Σ_{l>D} (2l + 1) i_l(s) (|P_l| <= 1, and ‖ρ‖₂√(4π) <= (L + 1) m for
band-limited ρ >= 0), while Z(x) >= e^{-s} m: relative to Z, at most
(L + 2) e^s T_D(s). :func:`moment_degree` takes the smallest D with this <= 1e-16.

Round-off (a posteriori): Z and N are sums of harmonics, accurate to about
ε (D + 1) max_x Z(x) each, so N/Z is accurate to about 2ε (D + 1) κ relative, κ =
max Z / min Z over the nodes — at most e^{2s}, reached when ρ collapses to a
point. Where that estimate, ``ROUNDOFF`` (D + 1) κ, exceeds ``tol``, the
evaluation is done by the quadrature sums instead (counted in
:attr:`SphereMoments.fallbacks`), so the path does not return a field whose
estimated round-off exceeds ``tol``. (The estimate is not a proof; it was
checked against the quadrature sums, see :data:`TOL`.)

The transforms here are ducc0's ring plans (:mod:`.ducc`) whatever the grid's
backend; the divergence is the spectral path's flux form: F = ρX on the dealiased
nodes and (−div F)_lm = ∫ F·∇Ȳ_lm by the adjoint of the gradient
(:meth:`.ducc.RingPlan.divergence_analysis`). The state of the fixed steps' stages is
the a_lm of ρ, as on the spectral path (one analysis and one synthesis at degree L
per step, not per stage).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import spherical_in

from .continuity import SphereQuadrature
from .ducc import ring_plan, sht_threads
from .gauss import alm_layout
from .geometry import project_tangent, spherical
from .transforms import nodes

__all__ = ["SphereMoments", "moment_degree", "moment_matrix", "truncation_tail", "moments_refusal",
           "MATRIX_BYTES", "ROUNDOFF", "TOL"]

#: Largest 𝒦 (bytes, per head) the path builds; beyond it the quadrature path is used.
MATRIX_BYTES = 64 * 2**20
#: ε-multiple of the a-posteriori round-off estimate of N/Z: ``ROUNDOFF (D + 1) κ`` (module docstring).
ROUNDOFF = 4.0 * np.finfo(float).eps
#: Default tolerance of that estimate, relative; past it an evaluation falls back to the quadrature sums. The
#: estimate is conservative: over von Mises–Fisher densities (concentration 2–30) and random heads with
#: s = 1–10 at L = 48, the field's error against the quadrature sums was 0.002–0.08 of it.
TOL = 1e-11
#: Target of the a-priori truncation bound (L + 2) e^s T_D(s).
TRUNCATION = 1e-16


def truncation_tail(s: float, D: int) -> float:
    """T_D(s) = Σ_{l>D} (2l + 1) i_l(s), the sup of the kernel e^{s t}'s expansion beyond degree D."""
    l = np.arange(D + 1, D + 1 + max(60, int(2 * s) + 60))
    return float(np.sum((2 * l + 1) * spherical_in(l, s)))


def moment_degree(s: float, L: int, limit: int | None = None) -> int:
    """Smallest D with (L + 2) e^s T_D(s) <= 1e-16: the truncation degree of 𝒦 for ‖A‖₂ = s, ρ of degree L.

    The search stops at ``limit`` (default 2L + 64) and returns ``limit + 1`` past it.
    """
    limit = 2 * L + 64 if limit is None else int(limit)
    D = 0
    with np.errstate(over="ignore"):
        while not (L + 2) * np.exp(s) * truncation_tail(s, D) <= TRUNCATION:  # inf (s past ~700) goes on
            D += 1
            if D > limit:
                break
    return D


def _head_operator(head):
    """(A = βKᵀQ, V, normalized) of a sphere self-attention head acting on R³."""
    Q, K, V = head.matrices(3)
    return head.beta * (K.T @ Q), V, bool(head.normalized)


def _matrix_bytes(D: int, L: int) -> int:
    Dy = min(D, L)
    return 8 * (D + 1) * (D + 2) * (Dy + 1) * (Dy + 2)


def moments_refusal(model, L: int, Ld: int) -> str | None:
    """None if the moment path applies to ``model`` on the grid of degree ``L``, else why not."""
    heads = getattr(model, "heads", ())
    for i, h in enumerate(heads):
        if getattr(h, "kind", None) != "self-attention":
            return f"head {i} is {type(h).__name__}, not SelfAttention"
        if h.dim not in (None, 3):
            return f"head {i} acts on R^{h.dim}, not R³"
        A = _head_operator(h)[0]
        s = float(np.linalg.norm(A, 2))
        D = moment_degree(s, L, limit=Ld)
        if D > Ld:
            return (f"head {i} has ‖βKᵀQ‖₂ = {s:.3g}, whose kernel needs a degree above {Ld}, the "
                    f"dealiased grid's; refine the grid")
        if _matrix_bytes(D, L) > MATRIX_BYTES:
            return (f"head {i} has ‖βKᵀQ‖₂ = {s:.3g}: its matrix of degree {D} would take "
                    f"{_matrix_bytes(D, L) / 2**20:.0f} MiB > {MATRIX_BYTES / 2**20:.0f} MiB")
    return None if heads else "the model has no heads"


def _legendre_at(theta: np.ndarray, l: int) -> np.ndarray:
    """λ_lm(θ), m = 0..l, at arbitrary colatitudes: ducc0's normalised Legendre functions (Y_lm = λ_lm e^{imφ})."""
    from ducc0.sht.experimental import alm2leg

    mstart = alm_layout(l)[2]
    alm = np.zeros(int(mstart[-1]) + l + 1, dtype=complex)  # int: NumPy 1.x promotes uintp + int to float
    alm[mstart.astype(np.intp) + l] = 1.0  # a_lm = 1 for every m at degree l
    leg = alm2leg(alm=alm[None], lmax=l, theta=np.ascontiguousarray(theta), mval=np.arange(l + 1, dtype=np.uintp),
                  mstart=mstart, nthreads=sht_threads(l))
    return leg[0].real


@lru_cache(maxsize=16)
def moment_matrix(A_bytes: bytes, D: int, Dy: int) -> np.ndarray:
    r"""𝒦 of A (``np.ndarray.tobytes`` of a 3×3 float array): coefficients of degree <= ``D`` of
    Z(x) = ∫ e^{⟨Ax,y⟩} g(y) dy from those of degree <= ``Dy`` of g, in ducc0's layout seen as reals
    (``alm.view(float)``), shape (2 n_D, 2 n_Dy), n_D = (D + 1)(D + 2)/2.

    Column j (g_j the real field of one real or imaginary part of a_lm = 1, degree l) is
    x ↦ 4π i_l(|Ax|) g_j(Ax/|Ax|) (Funk–Hecke), analysed on the GLQ grid of degree 2D + 2,
    which integrates its products with degree <= D exactly up to the kernel's tail beyond 2D + 2 − D.
    """
    A = np.frombuffer(A_bytes).reshape(3, 3)
    G = 2 * D + 2
    plan = ring_plan(D, G)
    points = nodes(G)[2]  # 2G + 1 longitudes, as the plan's
    w = points.reshape(-1, 3) @ A.T
    r = np.linalg.norm(w, axis=-1)
    loc = spherical(np.where(r[:, None] > 0, w / np.where(r > 0, r, 1.0)[:, None], [0.0, 0.0, 1.0]))  # i_l(0) = 0 for l >= 1: any direction
    theta, phi = loc[:, 0], loc[:, 1]
    _, _, mstart_y = alm_layout(Dy)
    K = np.zeros(((D + 1) * (D + 2), (Dy + 1) * (Dy + 2)))
    for l in range(Dy + 1):
        radial = 4.0 * np.pi * spherical_in(l, r)
        lam = _legendre_at(theta, l) * radial[:, None]  # (npoints, l + 1)
        for m in range(l + 1):
            j = 2 * (int(mstart_y[m]) + l)
            if m == 0:
                columns = ((j, lam[:, 0]),)
            else:  # a_lm = 1 → 2 λ_lm cos mφ; a_lm = i → −2 λ_lm sin mφ
                columns = ((j, 2.0 * lam[:, m] * np.cos(m * phi)), (j + 1, -2.0 * lam[:, m] * np.sin(m * phi)))
            for col, f in columns:
                K[:, col] = plan.analysis(f.reshape(plan.shape)).view(float)
    K.setflags(write=False)
    return K


class _Head:
    """One head's pieces: its matrix, degrees, V, normalisation."""

    def __init__(self, head, L: int):
        A, self.V, self.normalized = _head_operator(head)
        self.s = float(np.linalg.norm(A, 2))
        self.D = moment_degree(self.s, L)
        self.Dy = min(self.D, L)
        self.K = moment_matrix(np.ascontiguousarray(A, dtype=float).tobytes(), self.D, self.Dy)


class SphereMoments(SphereQuadrature):
    """The field through the moment generating function of ρ (module docstring); the divergence as quadrature.

    Parameters
    ----------
    grid : SphereGrid
    model : SelfAttention or MultiHeadAttention of SelfAttention heads on S² (any Q, K, V)
    field : callable
        The quadrature sums ``field(points, weights, queries)``, used where the
        round-off estimate exceeds ``tol``.
    tol : float, default :data:`TOL`
        Largest a-posteriori round-off estimate of N/Z accepted, relative.
    drift : callable, optional
        A fixed tangent field added to X (:class:`~.continuity.SphereQuadrature`).
    velocity : callable, optional
        ``velocity(points, A)``: the tokens' velocity from the heads' average A = Σ_h V_h N_h/Z_h (unprojected) at
        the nodes; default P_x^⊥A (post-LN). nGPT's α P_xA/|A| (``Transformer.velocity_from_average``) is
        given here; the call then records ``smallest_length``, min |A| over the nodes (the grid's step bound).
    """

    strategy = "moments"

    def __init__(self, grid, model, field, tol: float = TOL, drift=None, velocity=None):
        super().__init__(grid, field, drift)
        self.velocity = velocity
        self.smallest_length = np.inf
        why = moments_refusal(model, self.L, self.Ld)
        if why is not None:
            raise ValueError(f"the moments path does not apply: {why}.")
        self.tol = float(tol)
        self.heads = [_Head(h, self.L) for h in model.heads]
        self.Dy = Dy = max(h.Dy for h in self.heads)
        for h in self.heads:  # every head's columns in the layout of degree Dy, so one set of arguments serves all
            h.K = _relayout_columns(h.K, h.Dy, Dy)
        self._plan_d = ring_plan(Dy, self.Ld)
        self._synth = {h.D: ring_plan(h.D, self.Ld) for h in self.heads}
        self._pL, self._pd = ring_plan(self.L), ring_plan(self.L, self.Ld)  # a_lm ↔ values; ρ and −div F on the nodes
        l, m, _ = alm_layout(Dy)
        self._low = alm_layout(self.L)[2][m].astype(np.intp) + l  # where the a_lm of degree <= Dy sit in a_lm
        self._points = nodes(self.Ld)[2]
        self._xyz = np.ascontiguousarray(np.moveaxis(self._points, -1, 0))
        self.fallbacks = 0
        self.roundoff = 0.0  # the last evaluation's a-posteriori estimate

    # ---- the stages' variables: the a_lm of ρ (degree L, ducc0's layout)
    coefficient_stages = True

    def coefficients(self, values) -> np.ndarray:
        """The a_lm (degree L, ducc0's layout) of grid values: the stages' state."""
        return self._pL.analysis(values)

    def values(self, alm) -> np.ndarray:
        """Grid values of coefficients from :meth:`coefficients` (a new array)."""
        return self._pL.synthesis(alm)

    def _arguments(self, alm, rho):
        """Coefficients of degree <= Dy of ρ, xρ, yρ, zρ, as real columns (2 n_Dy, 4)."""
        n = (self.Dy + 1) * (self.Dy + 2)
        out = np.empty((4, n))
        out[0] = alm[self._low].view(float)
        for k in range(3):
            out[k + 1] = self._plan_d.analysis(rho * self._xyz[k]).view(float)
        return out.T

    def _field(self, values, rho=None):
        """X at the dealiased nodes, shape (ntheta, nphi, 3), for grid values (:meth:`_moment_field`)."""
        alm = self.coefficients(values)
        return self._moment_field(alm, self._pd.synthesis(alm) if rho is None else rho, values)

    def _moment_field(self, alm, rho, values=None):
        """Σ_h P_x^⊥ V_h N_h/Z_h (SA) or P_x^⊥ V_h N_h (USA) at the dealiased nodes, from the a_lm of ρ and its
        values ``rho`` there; the quadrature sums (over the grid values, ``values`` if given) where an SA head's
        round-off estimate exceeds ``tol`` (USA has no division: its error stays ε(D + 1) of max |N| in absolute
        terms, as the quadrature sums' own)."""
        args = self._arguments(alm, rho)
        u = np.zeros((3,) + self._shape)
        roundoff = 0.0
        for h in self.heads:
            c = np.ascontiguousarray((h.K @ args).T)  # (4, 2 n_D): Z, N_x, N_y, N_z
            plan = self._synth[h.D]
            zn = np.stack([plan.synthesis(c[k].view(complex)) for k in range(4)])
            Z, N = zn[0], zn[1:]
            if h.normalized:
                zmin, zmax = float(np.min(Z)), float(np.max(np.abs(Z)))
                est = np.inf if not zmin > 0 else ROUNDOFF * (h.D + 1) * zmax / zmin
                roundoff = max(roundoff, est)
                N = N / Z
            u += np.einsum("ij,j...->i...", h.V, N)
        self.roundoff = roundoff
        if not roundoff <= self.tol:
            self.fallbacks += 1
            X = super()._field(self.values(alm) if values is None else values, rho)
            if self.velocity is not None:  # the quadrature sums' own record of min |A|
                self.smallest_length = self.field.smallest_length
            return X
        A = np.moveaxis(u, 0, -1)
        if self.velocity is None:
            return project_tangent(self._points, A)
        self.smallest_length = float(np.sqrt(np.min(np.sum(A * A, axis=-1))))
        return self.velocity(self._points, A)

    def coefficient_rate_and_speeds(self, alm):
        """(coefficients of ∂_t ρ = −div(ρX), max |X|, 0) from the a_lm of ρ: the flux F = ρX on the dealiased
        nodes in (θ̂, φ̂) components, and −div F by the adjoint of the gradient
        (:meth:`.ducc.RingPlan.divergence_analysis`), as the spectral path."""
        pd = self._pd
        rho = pd.synthesis(alm)
        X = self._velocity(self._moment_field(alm, rho))
        weighted = rho * pd.flux_scale[:, None]
        flux = np.empty((2,) + self._shape)
        for j in range(2):
            flux[j] = weighted * sum(X[..., k] * self._e[k][j] for k in range(3))
        return pd.divergence_analysis(flux), float(np.sqrt(np.max(np.sum(X * X, axis=-1)))), 0.0

    def rate_and_speeds(self, values):
        return self._rate_through_coefficients(values)


def _relayout_columns(K: np.ndarray, Dy: int, Dmax: int) -> np.ndarray:
    """``K``'s columns (real views of ducc0's layout of degree ``Dy``) placed in the layout of degree ``Dmax``."""
    if Dy == Dmax:
        return K
    l, m, _ = alm_layout(Dy)
    target = alm_layout(Dmax)[2][m].astype(np.intp) + l
    out = np.zeros((K.shape[0], (Dmax + 1) * (Dmax + 2)))
    out[:, 2 * target] = K[:, 0::2]
    out[:, 2 * target + 1] = K[:, 1::2]
    return out
