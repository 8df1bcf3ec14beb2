"""validation: Wasserstein distances, the mean-field limit rate and stability bounds.

Implemented so far: :mod:`validation.convergence` (observed orders of
accuracy, used by the regression tests). The Wasserstein distances, the
mean-field-limit experiment and the stability bounds are issue 4 and are not
implemented yet.
"""

from .convergence import OrderFit, observed_order, self_convergence_order

__all__ = ["OrderFit", "observed_order", "self_convergence_order"]
