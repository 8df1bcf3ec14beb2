"""
Natural frequencies: the Kuramoto transition
============================================

Tokens with natural frequencies, θ̇_i = ω_i + X[μ](θ_i) (GLPR §7, docs/MATH.md §11). At β = 0 the field is
Kuramoto's, and with Lorentzian frequencies of width γ the Ott–Antonsen reduction is exact: the order parameter
r(t) = ‖∫ e^{iθ} dμ‖ tends to √(1 − 2γ) below the critical width γ_c = 1/2 and to 0 above it.
:func:`meanfield.solvers.frequencies.solve` solves the density on S¹ × ℝ_ω; tokens with Cauchy frequencies follow it.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
from meanfield.analysis import exact
from meanfield.solvers import frequencies as fq
from particles import kuramoto

g = mf.CircleGrid(256)
rho0 = mf.Density(g, exact.wrapped_cauchy(g.angles, 0.3))
t_eval = np.linspace(0, 10, 21)
fig, ax = plt.subplots(figsize=(6, 4))
for gamma in (0.1, 0.25, 0.4, 0.6):
    sol = fq.solve(mf.SelfAttention(0.0), rho0, fq.Lorentzian(gamma), (0, 10), t_eval)
    print(f"γ = {gamma}: {sol.solution.status}, {sol.solution.message}")
    reached = t_eval[:len(sol.order)]  # a run that stops early says why (above) and keeps what it resolved
    line, = ax.plot(reached, sol.order, label=f"γ = {gamma}")
    ax.axhline(exact.lorentzian_order_limit(gamma), color=line.get_color(), ls=":")
tokens = kuramoto.simulate(mf.SelfAttention(0.0), (rho0, 2000), fq.Lorentzian(0.25), t_eval[::2], rng=0)
ax.plot(t_eval[::2], tokens.order, "ko", ms=4, label="2000 tokens, γ = 0.25")
ax.set(xlabel="t", ylabel="order parameter r(t)", title="β = 0 (Kuramoto); dotted: the limit √(1 − 2γ)")
ax.legend()
