"""Figures of densities and solutions (matplotlib only): each domain draws its own, dispatched here.

=============================  =============================================================
:func:`plot_solution`          the domain's figure of a solution over time (with its energy)
:func:`plot_energy`            E_β along a solution, refinements dashed
:func:`circle_spacetime`,      the circle solution on one grid, and its heat map
:func:`plot_spacetime`
:func:`sphere_map`,            a density on S² on a longitude–latitude grid, its Mollweide map,
:func:`plot_sphere`,           snapshots of a solution
:func:`plot_sphere_solution`
:func:`plot_particles_2d`      particle paths in R², optionally in the rescaled frame e^{−tV}x
=============================  =============================================================
"""

from __future__ import annotations

from .domains.circle.plotting import plot_spacetime, spacetime as circle_spacetime
from .domains.euclidean.plotting import plot_particles_2d
from .domains.plotting import plot_energy
from .domains.sphere.plotting import plot as plot_sphere, plot_solution as plot_sphere_solution, sphere_map

__all__ = ["circle_spacetime", "plot_spacetime", "plot_energy", "plot_solution", "sphere_map", "plot_sphere",
           "plot_sphere_solution", "plot_particles_2d"]


def plot_solution(solution, title: str | None = None):
    """The figure of ``solution`` its domain draws (circle: heat map and energy; S²: Mollweide snapshots and
    energy; R^d: snapshots). Returns the Figure."""
    return solution.densities[0].domain.plot_solution(solution, title=title)
