"""particles: the finite-n systems whose mean-field limit ``meanfield`` solves.

Not implemented yet (issue 3): ``simulate``, fused kernels, sampling and
cluster statistics. The models of :mod:`meanfield.models` already evaluate
the particle field, ``model.field(x, np.full(n, 1/n), x)``.
"""
