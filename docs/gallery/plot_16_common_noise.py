"""
Common noise: tokens synchronised by a random layer they share
==============================================================

A random linear layer shared by all tokens is a common noise (Engel & Shalova, arXiv 2603.06187; MATH.md §13):

.. math::

    dX_i = \\mathcal X[μ](X_i)\\,dt + \\sum_k P_{X_i}(Σ_k X_i) ∘ dW^k,

with the *same* Brownian motions W^k for every token. Without attention (V = 0) each token follows the projected
linear flow dY = Σ_k Σ_k Y ∘ dW^k, which sends every direction towards the top Oseledets direction: the tokens
synchronise (up to sign, x and −x being carried alike) at the Lyapunov gap λ₁ − λ₂ of the linear flow. The largest
distance between the tokens' lines, max_{i<j} ‖x_i ∧ x_j‖, decays as e^{−(λ₁−λ₂)t}.

Here on S¹ with the isotropic strain Σ₁ = σ diag(1, −1), Σ₂ = σ[[0, 1], [1, 0]] (σ = 1), whose gap is 2σ² for the
continuous flow and 2E log cosh(σ√τ R)/τ (R standard normal, τ = dt/2) for the scheme's maps e^{A_j}. The
particles (:func:`particles.simulate` with ``common_noise=``, each realisation on its own
:class:`meanfield.models.common_noise.CommonPath`) give the rate by :func:`particles.common_noise.synchronisation_rate`;
the library computes the gap independently, by QR of the products of the flow's maps on other paths
(:func:`meanfield.models.common_noise.lyapunov_gap`). The check: the two 95 % intervals overlap and hold the
scheme's closed form.

Full size (S² with generic matrices, W1 of the density against particles on one common path):
``python scripts/common_noise_study.py``.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from scipy import integrate

import meanfield as mf
import particles
from meanfield.models.common_noise import CommonNoise, CommonPath, lyapunov_gap
from particles.common_noise import projective_spread, synchronisation_rate

start_clock = time.perf_counter()
sigma, dt, T, paths, n = 1.0, 0.04, 8.0, 16, 6
strain = sigma * np.array([[[1.0, 0.0], [0.0, -1.0]], [[0.0, 1.0], [1.0, 0.0]]])
no_attention = mf.SelfAttention(0.0, V=np.zeros((2, 2)))
t = np.arange(0, T + 1e-9, 0.4)

# %%
# 16 realisations of n = 6 uniform tokens, each driven by its own common path.
seeds = np.random.SeedSequence(11).spawn(paths)
xs = np.array([particles.simulate(no_attention, particles.uniform_sphere(n, 2, rng=r), t, dt=dt,
                                  common_noise=CommonNoise(strain, CommonPath(2, dt, T, seed=seeds[r]))).x
               for r in range(paths)])
rate = synchronisation_rate(t, xs, window=(1.0, T))

# %%
# The Lyapunov gap of the shared linear flow, computed by the library (QR of the products of the maps, 16 other
# paths of length 40), and the closed forms.
gap = lyapunov_gap(strain, t=40.0, dt=dt, paths=paths, seed=12)
tau = dt / 2
scheme = 2 * integrate.quad(lambda r: np.log(np.cosh(sigma * np.sqrt(tau) * r)) * r * np.exp(-r * r / 2), 0,
                            np.inf, epsabs=1e-14)[0] / tau
print(f"particles' synchronisation rate ({paths} paths, n = {n}, fit over t in [1, {T:g}]): {rate.rate:.3f}, "
      f"95 % interval [{rate.low:.3f}, {rate.high:.3f}]")
print(f"Lyapunov gap λ1 - λ2 by QR ({paths} paths of length 40): {gap.gap:.3f}, "
      f"95 % interval [{gap.low:.3f}, {gap.high:.3f}]")
print(f"the scheme's gap 2E log cosh(σ√τ R)/τ = {scheme:.4f}; the continuous gap 2σ² = {2 * sigma ** 2:.4f}")
print(f"intervals overlap: {rate.low <= gap.high and gap.low <= rate.high}; "
      f"the scheme's gap inside both: {rate.low <= scheme <= rate.high and gap.low <= scheme <= gap.high}")

# %%
# Left: on one path, each token's line relative to the first token's, the angle θ_i − θ_1 taken mod π in
# (−π/2, π/2] (x and −x lie on one line), at every step of the path. Right: the projective spread on every path,
# their geometric mean, and the slope −gap.
fine = np.arange(0, T + 1e-9, dt)
x_fine = particles.simulate(no_attention, particles.uniform_sphere(n, 2, rng=0), fine, dt=dt,
                            common_noise=CommonNoise(strain, CommonPath(2, dt, T, seed=seeds[0]))).x
np.testing.assert_allclose(x_fine[::10], xs[0], atol=1e-12)  # the same path gives the same run
fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
theta = np.arctan2(x_fine[..., 1], x_fine[..., 0])
ax.plot(fine, np.mod(theta - theta[:, :1] + np.pi / 2, np.pi) - np.pi / 2, ".", ms=2)
ax.set(xlabel="t", ylabel="θ_i − θ_1 (mod π)", title="one common path: the 6 tokens' lines synchronise")
spread = projective_spread(xs)
for s in spread:
    bx.semilogy(t, s, color="0.7", lw=0.7)
mean_log = np.exp(np.mean(np.log(spread), axis=0))
bx.semilogy(t, mean_log, "k", lw=1.8, label="geometric mean over 16 paths")
bx.semilogy(t, mean_log[2] * np.exp(-gap.gap * (t - t[2])), "C3--",
            label=f"slope −(λ₁ − λ₂) = −{gap.gap:.2f} (QR)")
bx.set(xlabel="t", ylabel="max_{i<j} |x_i ∧ x_j|",
       title=f"rate {rate.rate:.2f} ± {rate.high - rate.rate:.2f} against the gap "
             f"{gap.gap:.2f} ± {gap.high - gap.gap:.2f}")
bx.legend(fontsize=8)

# %%
# An exact solution to close with: a skew Σ = σJ is a random rotation, and with rotation-equivariant attention
# (Q = K = V = I) the noisy tokens are the noiseless ones rotated by the path's flow, X_t = R_t Y_t (MATH.md §13).
J = np.array([[0.0, -1.0], [1.0, 0.0]])
rotation = CommonNoise(sigma * J, CommonPath(1, dt, 2.0, seed=5))
t_r = [0.0, 1.0, 2.0]
x0 = particles.uniform_sphere(32, 2, rng=7)
noisy = particles.simulate(mf.SelfAttention(2.0), x0, t_r, dt=dt, common_noise=rotation).x
plain = particles.simulate(mf.SelfAttention(2.0), x0, t_r, dt=dt).x
rotated = np.einsum("tab,tnb->tna", rotation.flow(t_r), plain)
print(f"skew common noise, SA β = 2, 32 tokens: max |X_t - R_t Y_t| over t = 1, 2: {np.abs(noisy - rotated).max():.1e}")
print(f"run time {time.perf_counter() - start_clock:.1f} s")
