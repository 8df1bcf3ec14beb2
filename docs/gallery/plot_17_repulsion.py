"""
Repulsion, β < 0: closed forms and synchronisation on the circle
================================================================

With β < 0 (SA, Q = K = V = I) far tokens weigh more in the softmax, while V = I still pulls every token towards the
others (MATH.md §13). Two facts are checked here.

**Closed forms.** n tokens started orthonormal stay equiangular, ⟨x_i, x_j⟩ = ρ(t), for any real β (GLPR Thm 6.8),
and the ODE of ρ separates: t(ρ) = F(ρ) − F(ρ_0) with F written with the exponential integral Ei
(:func:`meanfield.analysis.exact.equiangular_time`; n = 2 is two tokens on S¹ at the angle φ, ρ = cos φ,
φ̇ = −2e^{β cos φ} sin φ/(e^β + e^{β cos φ})). :func:`meanfield.analysis.exact.equiangular_closed_form` inverts it;
:func:`particles.simulate` (DOP853) is checked against it.

**Synchronisation** (Polyanskiy, Rigollet & Yao, arXiv 2507.22857): on S¹ from almost every start all n tokens
synchronise for β ≥ −0.16, and not for β < −2/3, where the regular triangle becomes a stable equilibrium (the
Jacobian's non-rotational eigenvalue at the 3-gon crosses 0 at β = −2/3; computed below from the particles' own
velocity). :func:`validation.synchronisation.synchronisation` runs 200 uniform starts per (β, n) and counts those
that synchronise, with the exact (Clopper–Pearson) 95 % interval; the starts that do not are held at equilibria.

Full size (400 starts, n up to 50): ``python scripts/repulsion_synchronisation.py``.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

import particles
from meanfield.analysis import exact
from meanfield.models import SelfAttention
from validation.synchronisation import synchronisation

start_clock = time.perf_counter()
betas_closed = (-0.1, -0.9, -2.0)
t = np.linspace(0, 6, 31)

# %%
# Closed forms against particles: two tokens on S¹ at φ_0 = 2.5, and n = 5 orthonormal tokens in R⁵.
closed = {}
for beta in betas_closed:
    model = SelfAttention(beta)
    x2 = np.array([[1.0, 0.0], [np.cos(2.5), np.sin(2.5)]])
    tr2 = particles.simulate(model, x2, t, method="dop853", rtol=1e-12, atol=1e-14)
    rho2 = np.sum(tr2.x[:, 0] * tr2.x[:, 1], axis=-1)
    tr5 = particles.simulate(model, np.eye(5), t, method="dop853", rtol=1e-12, atol=1e-14)
    G = np.einsum("tid,tjd->tij", tr5.x, tr5.x)[:, ~np.eye(5, dtype=bool)]
    c2 = exact.equiangular_closed_form(t, 2, beta, np.cos(2.5))
    c5 = exact.equiangular_closed_form(t, 5, beta)
    closed[beta] = (rho2, c2, G.mean(axis=1), c5)
    print(f"β = {beta:5.2f}: max |ρ(particles) - ρ(closed form)|: two tokens {np.abs(rho2 - c2).max():.1e}, "
          f"five equiangular tokens (every pair) {np.abs(G - c5[:, None]).max():.1e}")


# %%
# The regular triangle's stability: the Jacobian of the particles' velocity in the angles, by central differences.
def triangle_eigenvalue(beta, h=1e-6):
    def v(theta):
        x = np.stack([np.cos(theta), np.sin(theta)], -1)
        dx = particles.velocity(SelfAttention(beta), x)
        return x[:, 0] * dx[:, 1] - x[:, 1] * dx[:, 0]  # θ̇_i

    theta = 2 * np.pi * np.arange(3) / 3
    J = np.stack([(v(theta + h * e) - v(theta - h * e)) / (2 * h) for e in np.eye(3)], axis=1)
    return np.sort(np.linalg.eigvals(J).real)[-2]  # the largest is the rotation's 0


print("the triangle's non-rotational eigenvalue: "
      + ", ".join(f"β = {b:.4f}: {triangle_eigenvalue(b):+.2e}" for b in (-0.6, -2 / 3, -0.75)))

# %%
# Synchronisation statistics: 200 uniform starts for each β and n.
betas = np.array([-0.1, -0.5, -0.7, -0.9, -1.3, -2.0])
ns = (3, 5, 10)
stats = {n: [synchronisation(n, b, 200, rng=[n, int(round(-1000 * b))]) for b in betas] for n in ns}
for n in ns:
    print(f"n = {n:2d}: synchronised " + ", ".join(
        f"β = {r.beta:g}: {r.synchronised}/{r.seeds} [{r.interval[0]:.3f}, {r.interval[1]:.3f}]" for r in stats[n]))
every = all(r.synchronised == r.seeds for n in ns for r in stats[n] if r.beta >= -0.16)
print(f"β = -0.1 >= -0.16: every start synchronised for every n (the theorem): {every}")

# %%
# Left: ρ(t), closed forms (lines) and particles (markers). Right: the fraction synchronised with its interval.
fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
for k, (beta, (rho2, c2, rho5, c5)) in enumerate(closed.items()):
    ax.plot(t, c2, f"C{k}-", lw=1, label=f"β = {beta:g}: two tokens on S¹")
    ax.plot(t, c5, f"C{k}--", lw=1, label=f"β = {beta:g}: five equiangular tokens")
    ax.plot(t[::3], rho2[::3], f"C{k}o", ms=4)
    ax.plot(t[::3], rho5[::3], f"C{k}s", ms=4, mfc="none")
ax.set(xlabel="t", ylabel="⟨x_i, x_j⟩", title="closed forms (lines) against particles (markers)")
ax.legend(fontsize=7)
for k, n in enumerate(ns):
    frac = np.array([r.fraction for r in stats[n]])
    lo, hi = np.array([r.interval for r in stats[n]]).T
    shift = 0.02 * (k - 1)
    bx.errorbar(betas + shift, frac, yerr=[frac - lo, hi - frac], fmt="o-", ms=4, capsize=2, label=f"n = {n}")
bx.axvspan(-0.16, 0, color="C2", alpha=0.12, label="β ≥ −0.16: every start synchronises")
bx.axvline(-2 / 3, color="k", ls=":", lw=1, label="β = −2/3: the triangle turns stable")
bx.set(xlabel="β", ylabel="fraction synchronised (95 % Clopper–Pearson)", title="200 uniform starts on S¹")
bx.legend(fontsize=7, loc="lower right")
print(f"run time {time.perf_counter() - start_clock:.1f} s")
