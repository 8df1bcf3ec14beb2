"""validation: Wasserstein distances, the mean-field limit rate, stability bounds, convergence orders.

wasserstein, w1, w2          W_p between frames (densities, Lagrangian measures, particle snapshots: any
                             meanfield.Frame), particle sets and weighted points
distance, Distance           the same with a certified error bound and the method (exact, or coarsened OT)
marginal_distances, marginal_w1   W_1 of each one-dimensional marginal of a product domain's density (the cylinder's
                             direction and log r, the zonal cylinder's polar angle and log r) against particles
                             in R^d; line_w1 exact W_1 of cell laws and points of the line
gaussian_w2                  Bures–Wasserstein distance between Gaussians
sliced_wasserstein_sphere    a cheap estimate on S^{d-1} for large sets (not W_p, not a bound)
observed_order, ...          observed orders of accuracy (convergence studies, regression tests)
metastability                lifetimes of metastable states: the fit log T ≈ cβ, the exact two-cluster merge time
"""

from .marginals import line_w1, marginal_distances, marginal_w1
from .convergence import OrderFit, observed_order, self_convergence_order
from .wasserstein import Distance, distance, gaussian_w2, sliced_wasserstein_sphere, w1, w2, wasserstein

__all__ = [
    "distance",
    "Distance",
    "wasserstein",
    "w1",
    "w2",
    "gaussian_w2",
    "marginal_distances",
    "marginal_w1",
    "line_w1",
    "sliced_wasserstein_sphere",
    "OrderFit",
    "observed_order",
    "self_convergence_order",
]
