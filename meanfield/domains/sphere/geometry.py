"""Geometry of the unit sphere S^{d-1} ⊂ R^d, kept apart from the dynamics (docs/STYLE.md, 1).

The models, integrators and fluxes use only these few pure functions: tangent
projection, retraction, the geodesic distance and spherical coordinates.
Source: MATH.md, notation; GLPR §2. The circle S¹ is the case d = 2
(:mod:`meanfield.domains.circle.geometry` adds its angle).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ...core.pool import map_ranges

__all__ = ["one_sided_lipschitz", "project_tangent", "surface_divergence", "retract", "normalise", "row_norms",
           "ZeroVectorError", "check_on_sphere",
           "on_sphere", "geodesic", "spherical", "UnitSphereGeometry"]


def project_tangent(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    r"""Project ``v`` on the tangent space of the sphere at ``x``.

    .. math:: P_x^\perp v = v - \langle x, v\rangle x

    Parameters
    ----------
    x : array_like, shape (..., d)
        Unit vectors.
    v : array_like, shape (..., d)
        Vectors to project (broadcast against ``x``).
    """
    return v - np.sum(x * v, axis=-1, keepdims=True) * x


def surface_divergence(x: np.ndarray, v: np.ndarray, strain) -> np.ndarray:
    r"""div_S(P_x v) on S^{d-1} at the unit vectors ``x``, from the ambient field ``v`` at x and its tangential strain
    ``strain`` = tr(P_x Dv) (docs/MATH.md §6):

    .. math:: \operatorname{div}_S(P_x v) = \operatorname{tr}(P_x Dv) - (d - 1)\langle x, v\rangle

    (div_S of the normal part ⟨x, v⟩x is ⟨x, v⟩ div_S x = (d − 1)⟨x, v⟩, d − 1 the mean curvature); shape
    x.shape[:-1].
    """
    return strain - (np.shape(x)[-1] - 1) * np.sum(x * v, axis=-1)


def row_norms(y: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """|y| row by row (last axis): ``np.linalg.norm(y, axis=-1)`` to the bit, for d = 2 and 3 as the sequential
    sum (y_0² + y_1²) + y_2² of elementwise products, the order numpy's reduction of so short an axis takes,
    without the reduction's per-row cost (3-4× faster at 10⁶ rows)."""
    y = np.asarray(y)
    if y.dtype == np.float64 and y.ndim >= 1 and y.shape[-1] in (2, 3):
        s = y[..., 0] * y[..., 0] + y[..., 1] * y[..., 1]
        if y.shape[-1] == 3:
            s += y[..., 2] * y[..., 2]
        r = np.sqrt(s)
        return r[..., None] if keepdims else r
    return np.linalg.norm(y, axis=-1, keepdims=keepdims)


class ZeroVectorError(ValueError, FloatingPointError):
    """A row of norm 0 met where its direction y/|y| was asked for (:func:`normalise`): a ``ValueError`` for bad
    input at an entry point, a ``FloatingPointError`` inside a time step (the step blew up: a stage reached the
    origin, or its squares underflowed to a zero norm), caught as either."""


def normalise(y: np.ndarray, name: str = "y") -> np.ndarray:
    r"""``y/|y|`` row by row: the nearest point of the sphere,

    .. math:: \pi(y_i) = y_i / |y_i|, \qquad |y_i| = \sqrt{\textstyle\sum_k y_{ik}^2} > 0

    (MATH.md, notation: the retraction onto S^{d-1}). For d = 2, 3 in float64, compiled passes with the bits of
    ``y / row_norms(y, keepdims=True)`` (the same rounded products, sums, square root and quotient; numpy's three
    passes and two temporaries were a tenth of a million-particle step on S¹), in tasks of rows on the library's
    threads (:func:`meanfield.core.pool.map_ranges`: each row its own, so the threads change no bit); other shapes
    and dtypes take that numpy expression itself.

    Raises
    ------
    ZeroVectorError
        (a ``ValueError`` and a ``FloatingPointError``) naming ``name`` and the index of the first row whose computed
        norm is 0 (the zero vector, or one whose squares all underflow): it has no direction, where numpy's quotient
        would give NaN. The compiled pass counts such rows in its loop (no second pass over memory); the index is
        searched for only then.
    """
    y = np.asarray(y)
    if y.dtype == np.float64 and y.ndim >= 2 and y.shape[-1] in (2, 3) and y.size:
        d = y.shape[-1]
        flat = np.ascontiguousarray(y).reshape(-1)
        out = np.empty_like(flat)
        n = flat.size // d
        zeros = map_ranges(lambda i0, i1: _normalised_rows(flat, out, d, i0, i1), n, max(1, min(16, n // 65536)),
                           work=flat.size)  # tasks of about 64k rows, at most 16
        if any(zeros):
            _zero_row(row_norms(y), name)
        return out.reshape(y.shape)
    r = row_norms(y, keepdims=True)
    if np.any(r == 0.0):
        _zero_row(r[..., 0], name)
    return y / r


def _zero_row(r, name):
    """Raise :class:`ZeroVectorError` for the first zero of the row norms ``r`` (shape y.shape[:-1])."""
    i = tuple(int(k) for k in np.argwhere(np.asarray(r) == 0.0)[0])
    where = i[0] if len(i) == 1 else i
    raise ZeroVectorError(f"`{name}`: row {where} has norm |{name}[{where}]| = 0, so no direction {name}/|{name}| "
                          "on the sphere (inside a time step: the step blew up, a stage reached the origin; reduce "
                          "the step).")


# No fast-math flags in the two kernels below: every operation rounded as numpy rounds it (no fused multiply-add, no
# reassociation); error_model "numpy" (no test of each division for a zero divisor) and flat arrays indexed from 0 let
# LLVM vectorise them.
@nb.njit(cache=True, nogil=True, error_model="numpy")
def _normalised_rows(y, out, d, i0, i1):
    """out = y/|y| for rows i0..i1−1 of 2 or 3 entries of the flat y, the squares summed in numpy's order
    (:func:`row_norms`); returns how many of these rows have |y_i| = 0 (an integer count in the same loop, which
    vectorises: a zero row's NaN in ``out`` is then never returned)."""
    yb, ob = y[d * i0:d * i1], out[d * i0:d * i1]
    zeros = 0
    if d == 2:
        for i in range(i1 - i0):
            a, b = yb[2 * i], yb[2 * i + 1]
            r = np.sqrt(a * a + b * b)
            zeros += 1 if r == 0.0 else 0
            ob[2 * i] = a / r
            ob[2 * i + 1] = b / r
    else:
        for i in range(i1 - i0):
            a, b, c = yb[3 * i], yb[3 * i + 1], yb[3 * i + 2]
            r = np.sqrt(a * a + b * b + c * c)
            zeros += 1 if r == 0.0 else 0
            ob[3 * i] = a / r
            ob[3 * i + 1] = b / r
            ob[3 * i + 2] = c / r
    return zeros


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _unit_misfits(y, d, atol):
    """(entries not finite, rows with ||y_i| − 1| not <= atol) of the flat y of rows of 2 or 3 entries, |y_i| with
    the bits of :func:`row_norms`; integer counts, which vectorise."""
    bad = 0
    off = 0
    for i in range(y.size):
        bad += 0 if abs(y[i]) < np.inf else 1
    n = y.size // d
    if d == 2:
        for i in range(n):
            a, b = y[2 * i], y[2 * i + 1]
            off += 0 if abs(np.sqrt(a * a + b * b) - 1.0) <= atol else 1
    else:
        for i in range(n):
            a, b, c = y[3 * i], y[3 * i + 1], y[3 * i + 2]
            off += 0 if abs(np.sqrt(a * a + b * b + c * c) - 1.0) <= atol else 1
    return bad, off


def retract(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Move from ``x`` along ``v`` and return to the sphere: ``(x + v)/|x + v|`` (:class:`ZeroVectorError` where
    x + v = 0)."""
    return normalise(x + v, "x + v")


def on_sphere(x: np.ndarray, atol: float = 1e-8) -> bool:
    """Whether every row of ``x`` (d >= 2 columns) has norm 1 to ``atol``."""
    x = np.asarray(x, dtype=float)
    return bool(x.ndim >= 1 and x.shape[-1] >= 2 and np.all(np.abs(np.linalg.norm(x, axis=-1) - 1.0) <= atol))


def check_on_sphere(x: np.ndarray, name: str, atol: float = 1e-8) -> np.ndarray:
    """Return ``x`` as a float array after checking it holds finite unit vectors.

    Raises
    ------
    ValueError
        If ``x`` has fewer than one axis, holds non-finite values, or a row
        whose norm differs from 1 by more than ``atol``.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"`{name}` must have shape (..., d) with d >= 2, got shape {x.shape}.")
    if x.dtype == np.float64 and x.ndim >= 2 and x.shape[-1] in (2, 3) and x.size:  # compiled counts, no temporaries
        bad, off = _unit_misfits(np.ascontiguousarray(x).reshape(-1), x.shape[-1], float(atol))
        finite, dev = bad == 0, (np.abs(row_norms(x) - 1.0) if off else None)
    else:
        finite = bool(np.all(np.isfinite(x)))
        dev = np.abs(row_norms(x) - 1.0) if x.size and finite else None
    if not finite:
        raise ValueError(f"`{name}` contains non-finite values (NaN or inf).")
    if dev is not None and np.max(dev) > atol:  # the error path alone looks for the row
        i = tuple(int(k) for k in np.unravel_index(np.argmax(dev), dev.shape))
        where = i[0] if len(i) == 1 else i
        raise ValueError(
            f"`{name}` must hold unit vectors (points on the sphere); "
            f"the largest deviation of |x| from 1 is {dev[i]:.3g} > {atol:g}, at row {where}"
            + (" (the zero vector: it has no direction)." if dev[i] == 1.0 and not np.any(x[i]) else
               "; to put the points on the sphere, normalise the rows: x / np.linalg.norm(x, axis=-1, keepdims=True).")
        )
    return x


def geodesic(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """Great-circle distances d(xa_i, xb_j) = 2 atan2(|x − y|, |x + y|), shape (n, m).

    Accurate near 0 and π, where arccos⟨x, y⟩ loses half the digits.
    """
    from scipy.spatial.distance import cdist

    return 2.0 * np.arctan2(cdist(xa, xb), cdist(xa, -xb))


def spherical(x: np.ndarray) -> np.ndarray:
    """(colatitude θ ∈ [0, π], longitude φ ∈ [0, 2π)) of unit vectors in R³, shape (..., 2)."""
    x = np.asarray(x, dtype=float)
    return np.stack([np.arccos(np.clip(x[..., 2], -1, 1)), np.mod(np.arctan2(x[..., 1], x[..., 0]), 2 * np.pi)],
                    -1)


def one_sided_lipschitz(x, u, Du) -> np.ndarray:
    r"""Λ(x) = max_{w ⊥ x, |w| = 1} ⟨w, ∇_w X⟩ for the tangent field X = P_x^⊥ u on S^{d-1}, shape (m,).

    The covariant derivative of X along a tangent w is P_x^⊥ Du w − ⟨x, u⟩ w,
    so Λ(x) = λ_max of sym(Du) compressed to the tangent space, minus ⟨x, u⟩.
    Along the minimising geodesic γ between two points, d/dt d(x_t, y_t) =
    ∫ ⟨∇_{γ'} X, γ'⟩ ds <= max Λ · d(x_t, y_t): Λ is the rate at which the flow
    can separate points in the geodesic distance (validation.stability).

    Parameters
    ----------
    x : ndarray, shape (m, d)
        Unit vectors.
    u, Du : ndarray, shapes (m, d) and (m, d, d)
        The ambient average and its Jacobian there.
    """
    S = 0.5 * (Du + np.swapaxes(Du, -1, -2))
    P = np.eye(x.shape[-1]) - x[:, :, None] * x[:, None, :]
    # push the normal direction below the spectrum so the top eigenvalue is the tangent one
    shift = np.linalg.norm(S, ord=2, axis=(-2, -1)) + 1.0
    M = P @ S @ P - shift[:, None, None] * (x[:, :, None] * x[:, None, :])
    return np.linalg.eigvalsh(M)[:, -1] - np.sum(x * u, axis=-1)


class UnitSphereGeometry:
    """The geometry operations of a domain that is a unit sphere S^{d-1} (the circle is d = 2): a mixin of the
    :class:`~meanfield.domains.base.Domain` classes of S¹ and S^{d-1}."""

    unit_vectors = True  # its points are unit vectors: ⟨x, y⟩ is their cosine (clustering statistics)
    on_sphere = True
    project = staticmethod(project_tangent)
    retract = staticmethod(normalise)
    distance = staticmethod(geodesic)
    one_sided_lipschitz = staticmethod(one_sided_lipschitz)

    @staticmethod
    def brownian_step(x, tau: float, rng) -> np.ndarray:
        r"""One step of Brownian motion with generator Δ_S run for time τ (= D·h) from every row of ``x``: a geodesic
        step x' = u x + √(1 − u²) w, w uniform among the unit tangents at x, whose cosine u has exactly the first two
        zonal moments of the heat kernel,

            E u = e^{−(d−1)τ},   E[(d u² − 1)/(d − 1)] = e^{−2dτ}

        (the degree-1 and degree-2 eigenvalues l(l + d − 2) of −Δ on S^{d-1}): 1 − u is drawn from the Gamma law with
        those two moments (→ Gamma((d−1)/2, 2τ), the small-time law of the geodesic distance²/2). The kernel depends
        on ⟨x, x'⟩ only, so the uniform law is invariant exactly; every zonal moment is right to O(τ³), so the step
        is of weak order 2 (docs/MATH.md §7). The law stays on the sphere exactly."""
        x = np.asarray(x, dtype=float)
        d = x.shape[-1]
        ev = -np.expm1(-(d - 1) * tau)  # E(1 − u)
        ev2 = -2.0 * np.expm1(-(d - 1) * tau) + (d - 1) / d * np.expm1(-2.0 * d * tau)  # E(1 − u)²
        var = ev2 - ev * ev
        v = (var / ev) * rng.standard_gamma(ev * ev / var, size=x.shape[:-1]) if ev > 0 else np.zeros(x.shape[:-1])
        v = np.minimum(v, 2.0)
        w = rng.standard_normal(x.shape)
        w -= np.sum(w * x, axis=-1, keepdims=True) * x
        w /= np.linalg.norm(w, axis=-1, keepdims=True)
        return normalise((1.0 - v)[..., None] * x + np.sqrt(v * (2.0 - v))[..., None] * w)

    @staticmethod
    def chord_distance(chord):
        """The geodesic distance 2 arcsin(|x − y|/2) of two points of the unit sphere at chord |x − y|."""
        return 2.0 * np.arcsin(np.minimum(1.0, 0.5 * np.asarray(chord)))

    @staticmethod
    def divergence(x, v, trace, normal) -> np.ndarray:
        """The surface divergence of P_x v: tr Dv − ⟨x, Dv x⟩ − (d − 1)⟨x, v⟩ (:func:`surface_divergence`;
        ``Domain.divergence``)."""
        return surface_divergence(x, v, trace - (normal() if callable(normal) else normal))

    def check_particles(self, x, name: str) -> np.ndarray:
        """Unit vectors of R^d, d >= 2, in an array of shape (n, d) or (batch, n, d), normalised exactly
        (``Domain.check_particles``). The circle and S^{d-1} check alike: the family ``SPHERE`` reads their d from
        them, a sphere of one dimension (the circle, ``SPHERE.of_dim(d)``) requires its own."""
        shape = np.shape(x)  # the shape first: a wrong shape also fails the unit check, with a misleading message
        if len(shape) not in (2, 3):
            raise ValueError(f"`{name}` must have shape (n, d) or (batch, n, d), got {shape}.")
        x = check_on_sphere(x, name)
        if x.shape[-2] < 1:
            raise ValueError(f"`{name}` holds no particles.")
        if self.dim is not None and x.shape[-1] != self.dim:
            raise ValueError(f"`{name}` must hold unit vectors of R^{self.dim} (the {self.symbol(self.dim)}), got "
                             f"shape {x.shape}.")
        return normalise(x)
