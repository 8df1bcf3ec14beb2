"""The saddle finder (particles.saddles) on critical points of E_β whose Hessian is derived by hand.

- k equally spaced points of weight 1/k on S¹: the Hessian in angles is circulant, H_ij = −w² f''(θ_i − θ_j),
  f(φ) = e^{β cos φ}/β, so its eigenvalues are λ_p = w² Σ_{m=1}^{k−1} f''(2πm/k)(1 − cos(2πpm/k)), p = 0..k−1;
  p = 0 is the rotation (removed), the others are the spectrum on the complement.
- The same k-gon on the equator of S²: in-plane the λ_p above; out of plane the heights z_i change ⟨x_i, x_j⟩ by
  z_i z_j − c_ij (z_i² + z_j²)/2 to second order, a circulant form with eigenvalues
  h_p = w² Σ_{m=0}^{k−1} e^{β c_m}(cos(2πpm/k) − c_m), c_m = cos(2πm/k); h_{±1} = 0 are the two rotations about
  in-plane axes (removed).
- Two antipodal points ±e of weights w₁, w₂ on S^{d−1}: x₁ = e + u, x₂ = −e + v (u, v ⊥ e) give
  ⟨x₁, x₂⟩ = −1 + |u + v|²/2, so E_β gains w₁w₂e^{−β}|u + v|²/2: eigenvalue 2w₁w₂e^{−β} on u = v (d − 1 directions,
  E increases: index d − 1), 0 on u = −v (the rotations, removed).
- Coincident points (one cluster, the maximiser): index 0.
Every eigenvalue is compared scaled by e^{−β} (the module's convention) with a tolerance of 1e-13 on values of
size <= w² ~ 1e-2: the assembled entries are sums of k terms with relative error ~1e-16.
"""

import numpy as np
import pytest

from particles.saddles import critical_point, energy_gradient, hessian, hessian_index


def fpp(phi, beta):
    """e^{−β} f''(φ), f(φ) = e^{β cos φ}/β."""
    return (beta * np.sin(phi) ** 2 - np.cos(phi)) * np.exp(beta * (np.cos(phi) - 1.0))


def in_plane(k, beta):
    w, m = 1.0 / k, np.arange(1, k)
    return np.sort([w * w * np.sum(fpp(2 * np.pi * m / k, beta) * (1 - np.cos(2 * np.pi * p * m / k)))
                    for p in range(1, k)])


def out_of_plane(k, beta):
    w, m = 1.0 / k, np.arange(k)
    c = np.cos(2 * np.pi * m / k)
    return np.array([w * w * np.sum(np.exp(beta * (c - 1)) * (np.cos(2 * np.pi * p * m / k) - c)) for p in range(k)])


@pytest.mark.parametrize("k, beta", [(2, 1.0), (3, 4.0), (5, 2.0), (8, 6.0)])
def test_newton_finds_the_k_gon_on_the_circle_with_its_circulant_spectrum(k, beta, rng):
    theta = 2 * np.pi * np.arange(k) / k + 0.05 * rng.standard_normal(k)
    cp = critical_point(theta, beta)
    assert cp.converged and cp.iterations <= 10
    gaps = np.diff(np.sort(cp.angles), append=np.sort(cp.angles)[0] + 2 * np.pi)
    assert np.max(np.abs(gaps - 2 * np.pi / k)) < 1e-9  # equally spaced again (up to the rotation)
    ref = in_plane(k, beta)
    assert np.max(np.abs(cp.eigenvalues - ref)) < 1e-13
    assert cp.index == int(np.sum(ref > 0)) == k - 1 and cp.stable == 0 and cp.null == 0


@pytest.mark.parametrize("k, beta", [(3, 1.0), (5, 4.0), (12, 2.0)])
def test_k_gon_on_the_equator_of_the_sphere_has_the_derived_index(k, beta):
    theta = 2 * np.pi * np.arange(k) / k
    x = np.stack([np.cos(theta), np.sin(theta), np.zeros(k)], axis=1)
    cp = hessian_index(x, beta)
    assert cp.converged and cp.gradient_norm * np.exp(-beta) < 1e-14
    h = np.delete(out_of_plane(k, beta), [1, k - 1])
    ref = np.sort(np.concatenate([in_plane(k, beta), h]))
    assert cp.eigenvalues.size == 2 * k - 3  # 2k tangent directions less the 3 rotations of SO(3)
    assert np.max(np.abs(cp.eigenvalues - ref)) < 1e-13
    assert cp.index == int(np.sum(ref > 0)) and cp.stable == int(np.sum(ref < 0)) and cp.null == 0
    assert cp.index >= k  # the in-plane modes and the common rise towards a pole


@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("w1", [0.5, 0.8])
def test_antipodal_pair_has_index_d_minus_one(d, w1):
    beta = 3.0
    x = np.zeros((2, d))
    x[0, 0], x[1, 0] = 1.0, -1.0
    cp = hessian_index(x, beta, [w1, 1 - w1])
    assert cp.converged
    assert cp.index == d - 1 and cp.stable == 0 and cp.null == 0
    assert np.allclose(cp.eigenvalues, 2 * w1 * (1 - w1) * np.exp(-2 * beta), rtol=1e-12, atol=0)


def test_newton_from_a_perturbed_antipodal_pair_on_s3():
    d, beta = 4, 2.0
    x = np.zeros((2, d))
    x[0, 0], x[1, 0] = 1.0, -1.0
    x[1, 1:] = [0.05, -0.03, 0.02]
    cp = critical_point(x / np.linalg.norm(x, axis=1)[:, None], beta, [0.7, 0.3])
    assert cp.converged and abs(cp.x[0] @ cp.x[1] + 1.0) < 1e-12
    assert cp.index == d - 1


def test_one_cluster_is_a_maximiser_of_index_zero():
    x = np.tile([[0.0, 0.6, 0.8]], (4, 1))
    cp = hessian_index(x, 2.0)
    assert cp.index == 0 and cp.stable == cp.eigenvalues.size == 4 * 2 - 2  # 8 tangent directions less 2 rotations
    assert hessian_index(np.array([0.3]), 5.0).eigenvalues.size == 0  # one point: all of it is the rotation


def test_hessian_is_the_derivative_of_the_gradient_at_a_critical_point(rng):
    """Newton from a random start with unequal weights on S² lands on some critical point; there the Riemannian
    Hessian is the derivative of the gradient along geodesics (central differences, error ~h² ~ 1e-8)."""
    beta, w = 2.0, np.array([0.4, 0.35, 0.25])
    x0 = np.array([[1.0, 0.0, 0.0], [-0.5, 0.8, 0.1], [-0.4, -0.8, -0.2]])
    cp = critical_point(x0 / np.linalg.norm(x0, axis=1)[:, None], beta, w)
    assert cp.converged
    x = cp.x
    H, B = hessian(x, beta, w)
    h = 1e-4
    cols = []
    for i in range(3):
        for a in range(2):
            v = B[i][:, a]
            gp = [energy_gradient(_geo(x, i, v, s), beta, w)[1] * np.exp(-beta) for s in (h, -h)]
            # transport back: the tangent components in the bases at x (the change of basis is O(h²) at a critical
            # point, where the gradient vanishes)
            cols.append(np.concatenate([B[j].T @ (gp[0][j] - gp[1][j]) / (2 * h) for j in range(3)]))
    assert np.max(np.abs(np.array(cols).T - H)) < 1e-7


def _geo(x, i, v, s):
    y = x.copy()
    y[i] = np.cos(s) * x[i] + np.sin(s) * v
    return y


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="unit vectors"):
        critical_point(np.array([[1.0, 1.0], [0.0, 1.0]]), 1.0)
    with pytest.raises(ValueError, match="weights"):
        critical_point(np.array([0.0, 1.0]), 1.0, weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="beta"):
        critical_point(np.array([0.0, 1.0]), np.nan)
    with pytest.raises(ValueError, match="maxiter"):
        critical_point(np.array([0.0, 1.0]), 1.0, maxiter=-1)
