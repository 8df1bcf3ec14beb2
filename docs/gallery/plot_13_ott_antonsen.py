"""
An exact solution: the Ott–Antonsen family at β = 0
===================================================

At β = 0 the field is X(θ) = Im(z e^{−iθ}) with z = ∫ e^{iθ} dμ, and the wrapped Cauchy densities f_a are an
invariant family, ȧ = ½ a (1 − ‖a‖²) (Ott & Antonsen 2008; docs/MATH.md §3). The spectral solver reproduces it to
round-off: one of the oracles the tests use.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
from meanfield.analysis import exact

grid = mf.CircleGrid(256)
mu0 = mf.Density.from_function(grid, lambda x: exact.wrapped_cauchy(np.arctan2(x[..., 1], x[..., 0]), 0.3))
t_eval = np.linspace(0, 3, 7)
sol = mf.solve(mf.SelfAttention(beta=0.0), mu0, t_span=(0, 3), t_eval=t_eval)
errors = []
fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
for d, t in zip(sol.densities, sol.t):
    f = exact.wrapped_cauchy(d.grid.angles, exact.ott_antonsen(t, 0.3))
    errors.append(d.grid.integrate(abs(d.values - f)))
    ax.plot(d.grid.angles, d.values, label=f"t = {t:g}")
ax.set(xlabel="θ", ylabel="ρ", title="wrapped Cauchy densities, β = 0")
bx.semilogy(sol.t[1:], errors[1:], "o-")
bx.set(xlabel="t", ylabel="L¹ error against the exact solution")
fig.tight_layout()
print("L1 error at t = 3:", errors[-1])
