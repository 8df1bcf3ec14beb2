"""validation: Wasserstein distances, the mean-field limit rate and stability bounds.

Not implemented yet (issue 4). The package exists so that the three top-level
packages install together (DESIGN.md); :mod:`validation.convergence` already
holds the observed-order helpers used by the regression tests.
"""
