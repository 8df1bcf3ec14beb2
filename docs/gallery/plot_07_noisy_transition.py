"""
The noisy phase transition: the branch, its fold and the critical noise
=======================================================================

With noise, dX = X dt + √(2D) dB, the uniform law is stable for D above a critical noise D_c and clustered
stationary states exist below (GLPR §9.4, docs/MATH.md §7). For USA at β = 4 on the circle the branch of
single-cluster states bends back: it has a fold at D_f > D_c, so the transition is discontinuous and the system
shows hysteresis between D_c and D_f. :func:`meanfield.analysis.stationary.branch` follows the branch by continuation and
locates its folds exactly; :func:`meanfield.analysis.stationary.critical_noise` is the closed form.

Full size, with particles: ``meanfield run examples/noisy_phase_transition.toml --plot``.
"""

import matplotlib.pyplot as plt
import numpy as np

import meanfield as mf
from meanfield.analysis import stationary as st

usa = mf.SelfAttention(4.0, normalized=False)
one = st.branch(usa, "circle", np.linspace(0.01, 0.95, 80))
two = st.branch(usa, "circle", np.linspace(0.01, 0.9, 60), degree=2)
d_c = st.critical_noise(usa, "circle")
print("D_c =", d_c, "folds (r, D):", one.folds)

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(one.noise, one.r, label="one cluster (degree 1)")
ax.plot(two.noise, two.r, label="two clusters (degree 2)")
ax.axvline(d_c, color="k", ls=":", label=f"D_c = {d_c:.3f}")
for r_f, d_f in one.folds:
    ax.plot(d_f, r_f, "ro", label=f"fold D_f = {d_f:.3f}")
ax.set(xlabel="noise D", ylabel="order parameter r", title="USA, β = 4, on S¹: stationary states")
ax.legend()
