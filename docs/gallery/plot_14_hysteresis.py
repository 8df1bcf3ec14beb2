"""
Hysteresis of the noisy transition: sweeping the noise up, then down
====================================================================

With noise, dX = X dt + √(2D) dB, USA (unnormalised attention, Q = K = V = I) on S² at β = 3 lies past the
tricritical β_*(3) (docs/MATH.md §7; Mun & Rosenzweig 2026): the branch of single-cluster stationary states leaves
the uniform law at the critical noise D_c towards *larger* D, up to a fold D_f, and turns back. Between D_c and D_f
both the uniform law (its linear rate σ_1 = 2(D_c − D) < 0) and the upper clustered state are stable, so the state
the system is in depends on where it came from:

- swept **up** from a cluster, each solve started from the last state, the cluster survives up to D_f, where it
  ceases to exist and the density falls to the uniform law;
- swept **down** from the uniform law, the uniform law survives down to D_c, where it loses stability and clusters.

The loop has the width D_f − D_c. :func:`meanfield.analysis.stationary.branch` follows the branch by continuation
and locates the fold exactly (Brent's method on dD/dr); :func:`meanfield.solvers.transitions.hysteresis` does the
time solves (the density on S² is axisymmetric: the zonal grid at d = 3). The check: the jumps of the time solves
bracket D_f and D_c within the sweep's step ΔD, and the states swept up lie on the stationary branch.

The noisy transition's fold alone, on the circle: :ref:`sphx_glr_auto_examples_plot_07_noisy_transition.py`.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from meanfield.analysis import stationary as st
from meanfield.domains.zonal_sphere import ZonalGrid
from meanfield.integrate.monitor import ResolutionMonitor
from meanfield.models import SelfAttention
from meanfield.solvers.transitions import hysteresis

start_clock = time.perf_counter()
grid = ZonalGrid(3, 48)  # axisymmetric densities on S², 48 polar nodes
usa = SelfAttention(3.0, normalized=False)

# %%
# The stationary branch and its fold, by continuation in the order parameter r = ‖∫ x dρ‖.
b = st.branch(usa, grid.domain, np.linspace(0.005, 0.95, 120))
D_c, (r_f, D_f) = b.critical, b.folds[0]
print(f"β = 3 > β_*(3) = {st.critical_beta(3):.4f}: the transition is discontinuous")
print(f"D_c = {D_c:.10f} (the zero of σ_1, closed form); from the branch alone (Richardson to r = 0): "
      f"{st.bifurcation(usa, grid.domain):.10f}")
print(f"fold D_f = {D_f:.6f} at r = {r_f:.4f}; the loop's predicted width D_f - D_c = {D_f - D_c:.6f}")

# %%
# The loop by time solves: D on a grid of step ΔD with D_c midway between two of its values, from the stable
# cluster at the lowest D; up, then down (each solve of duration up to 150 from the last state).
step = 0.02
noises = np.arange(D_c - 1.5 * step, D_f + 1.5 * step, step)
start = st.stationary_state(usa, grid.domain, noise=noises[0], r_guess=0.9).density(grid)
loop = hysteresis(usa, start, noises, 150.0, method="rk4", cfl=1.0, monitor=ResolutionMonitor(tail_tol=1e-8),
                  progress=False)
print(f"swept up: the cluster dissolves at D = {loop.jump_up:.4f}; "
      f"D_f in (jump_up - ΔD, jump_up]: {loop.jump_up - step < D_f <= loop.jump_up}")
print(f"swept down: the uniform law clusters at D = {loop.jump_down:.4f}; "
      f"D_c in [jump_down, jump_down + ΔD): {loop.jump_down <= D_c < loop.jump_down + step}")
print(f"measured width {loop.width:.4f} in [D_f - D_c, D_f - D_c + 2ΔD) = "
      f"[{D_f - D_c:.4f}, {D_f - D_c + 2 * step:.4f})")
on_branch = [(r, st.stationary_state(usa, grid.domain, noise=D, r_guess=0.9).r)
             for D, r in zip(loop.up, loop.r_up) if D < D_f]
print(f"swept up, below D_f: max |r(time solve) - r(stationary branch)| = "
      f"{max(abs(r - s) for r, s in on_branch):.2e} over {len(on_branch)} noises")

# %%
# The figure: the branch (stable above the fold, unstable below it), the uniform law (stable above D_c), and the
# loop the time solves trace. A solve ends where r crosses the threshold 0.05 (the jump is detected there, so the
# points at the two jumps sit at r = 0.05); above D_c on the way down the seeded perturbation decays.
upper = b.r >= r_f
fig, ax = plt.subplots(figsize=(9.5, 4.5), layout="constrained")
ax.plot(b.noise[upper], b.r[upper], "k-", lw=1.5, label="clustered states, stable")
ax.plot(b.noise[~upper], b.r[~upper], "k--", lw=1, label="clustered states, unstable")
lo, hi = noises[0] - step, noises[-1] + step
ax.plot([D_c, hi], [0, 0], "k-", lw=1.5)
ax.plot([lo, D_c], [0, 0], "k--", lw=1, label="uniform law (stable for D > D_c)")
ax.plot(loop.up, loop.r_up, "C3o", ms=6, label="time solves, D swept up")
ax.plot(loop.down, loop.r_down, "C0s", ms=5, mfc="none", label="time solves, D swept down")
ax.annotate("", xy=(loop.jump_up, 0.03), xytext=(loop.jump_up, r_f), arrowprops=dict(arrowstyle="->", color="C3"))
ax.annotate("", xy=(loop.jump_down, b.r[-1] * 0.97), xytext=(loop.jump_down, 0.03),
            arrowprops=dict(arrowstyle="->", color="C0"))
ax.axvline(D_c, color="C0", ls=":", lw=1)
ax.axvline(D_f, color="C3", ls=":", lw=1)
ax.text(D_c, 0.98, " D_c", color="C0", va="top", transform=ax.get_xaxis_transform())
ax.text(D_f, 0.98, " D_f", color="C3", va="top", transform=ax.get_xaxis_transform())
ax.plot(D_f, r_f, "C3*", ms=12)
ax.set(xlim=(lo, hi), xlabel="noise D", ylabel="order parameter r = |∫ x dρ|",
       title="USA, β = 3, on S²: the hysteresis loop between D_c and the fold D_f")
ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
print(f"run time {time.perf_counter() - start_clock:.1f} s")
