"""Figure pieces shared by the domains' plotting modules (matplotlib only, imported on use)."""

from __future__ import annotations

__all__ = ["plot_energy"]


def plot_energy(solution, ax=None, **kwargs):
    """E_β along a solution (every accepted step), refinements dashed. Returns the Axes."""
    import matplotlib.pyplot as plt

    if solution.energy_steps is None:
        raise ValueError("this solution has no energy (non-zonal model, or β > 709).")
    if ax is None:
        _, ax = plt.subplots()
    ax.plot(solution.t_steps, solution.energy_steps, **kwargs)
    for t, _, _ in solution.refinements:
        ax.axvline(t, color="0.7", lw=0.8, ls="--")
    ax.set_xlabel("t")
    ax.set_ylabel("E_β(μ_t)")
    return ax
