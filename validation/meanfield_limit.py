r"""The mean-field limit, measured: W_p(μ^N_t, μ_t) against N (MATH.md §4).

μ_t solves the continuity equation from μ_0 (:func:`meanfield.solve`);
μ^N_t is the empirical measure of N particles drawn iid from μ_0 and moved
by the same model (:func:`particles.simulate`). For iid samples
E W_1(μ^N_0, μ_0) ≍ N^{-1/2} on the circle (and √(log N / N) on S²), and the
stability estimate transports that rate to every t with a prefactor at most
e^{Lt}. The fitted exponent of N is the regression test of the project.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

import particles
from meanfield.core import checks
from meanfield import Density
from meanfield.solvers.solve import solve
from meanfield.density import Frame
from meanfield.integrate import Status

from .wasserstein import discretisation, prepare, wasserstein

__all__ = ["MeanFieldLimit", "meanfield_limit", "fit_exponent"]


@dataclass(frozen=True)
class MeanFieldLimit:
    """Result of :func:`meanfield_limit`. Arrays are indexed (n, repeat, t).

    Attributes
    ----------
    t : ndarray, shape (T,)
    ns : ndarray, shape (k,)
    distances : ndarray, shape (k, repeats, T)
        W_p(μ^N_t, μ_t) for each N, repeat and time.
    baseline : ndarray, shape (k, repeats)
        W_p(μ^N_0, μ_0), the iid sampling error the dynamics starts from.
    exponent : ndarray, shape (T,)
        Fitted exponent b of W_p ≈ C N^b at each time.
    exponent_ci : ndarray, shape (T, 2)
        Its 95% confidence interval (Student t on the regression slope).
    p : float
    solution : meanfield.Solution
        The PDE solution the particles were compared with.
    discretisation : float
        Estimate of W_p between the density and the measure it enters as
        (0 within π/2^20 on the circle; on S² the grid measure, estimated by
        refining: half of W_p between the grid measures at lmax/2 and lmax,
        first-order convergence assumed). Distances near it are biased.
    """

    t: np.ndarray
    ns: np.ndarray
    distances: np.ndarray
    baseline: np.ndarray
    exponent: np.ndarray
    exponent_ci: np.ndarray
    p: float
    solution: object
    discretisation: float


def fit_exponent(ns, distances, level: float = 0.95):
    """Slope of log W against log N over all (N, repeat) pairs, with its confidence interval.

    Parameters
    ----------
    ns : array_like, shape (k,)
    distances : array_like, shape (k, repeats)

    Returns
    -------
    slope, (low, high)
    """
    ns = np.asarray(ns, dtype=float)
    D = np.asarray(distances, dtype=float)
    if D.ndim != 2 or D.shape[0] != ns.size:
        raise ValueError(f"`distances` must have shape ({ns.size}, repeats), got {D.shape}.")
    if np.any(D <= 0) or not np.all(np.isfinite(D)):
        raise ValueError("distances must be positive and finite to fit a power law.")
    x = np.repeat(np.log(ns), D.shape[1])
    y = np.log(D).ravel()
    fit = stats.linregress(x, y)
    q = stats.t.ppf(0.5 + level / 2.0, df=x.size - 2)
    return float(fit.slope), (float(fit.slope - q * fit.stderr), float(fit.slope + q * fit.stderr))


def meanfield_limit(model, mu0: Density, ns, t_eval, repeats: int = 5, rng=None, p: float = 1,
                    dt: float | None = None, progress: bool = False, particle_strategy: str = "auto",
                    common_noise=None, **solve_kwargs) -> MeanFieldLimit:
    r"""W_p(μ^N_t, μ_t) by N and t, and the fitted rate in N.

    Parameters
    ----------
    model : SelfAttention or MultiHeadAttention
    mu0 : Density
        Initial density on the circle, on S², on a zonal S^{d-1} (compared by the particles' polar angles: a lower
        bound of W_p on S^{d-1}) or in R^d (S² and R^d by exact OT against the grid measure).
    ns : sequence of int
        Particle numbers N (at least two distinct values).
    t_eval : array_like
        Increasing times, ``t_eval[0]`` the initial time.
    repeats : int
        Independent particle systems per N (run together as a batch).
    rng : int, Generator or None
        Seed of the iid initial samples.
    p : float
        Order of the Wasserstein distance.
    dt : float, optional
        RK4 step of the particle systems (default: :func:`particles.simulate`'s).
    progress : bool
    particle_strategy : str
        The particles' field strategy (:func:`particles.simulate`'s ``strategy``; e.g. "quadrature", BLAS sums, for
        many particles in high dimension).
    common_noise : CommonNoise, optional
        A common noise (MATH.md §13, :mod:`meanfield.models.common_noise`): the density is then the one realisation
        of the stochastic continuity equation on its path
        (:func:`meanfield.solve` with ``common_noise``, which then takes of ``solve_kwargs`` ``dt``, ``cfl``,
        ``strategy``, ``monitor``), and every particle system runs on the same path — W_p path by path.
    **solve_kwargs
        Passed to :func:`meanfield.solve` (its defaults: refined on the circle
        and S², not in R^d).

    Returns
    -------
    MeanFieldLimit
    """
    if not isinstance(mu0, Frame) or mu0.grid is None:  # sampled, and solved on its grid
        raise TypeError(f"`mu0` must be a Density on the circle, on S², a zonal S^(d-1) or in R^d, got {mu0!r}.")
    ns = np.asarray(ns)
    if ns.ndim != 1 or ns.size < 2 or np.unique(ns).size != ns.size or np.any(ns < 2):
        raise ValueError(f"`ns` must hold at least two distinct particle numbers >= 2, got {ns!r}.")
    if int(repeats) != repeats or repeats < 1:
        raise ValueError(f"`repeats` must be a positive integer, got {repeats!r}.")
    t_eval = np.asarray(t_eval, dtype=float)
    rng = checks.generator(rng)
    if common_noise is not None:  # one realisation of the density on the path the particles share
        sol = solve(model, mu0, (t_eval[0], t_eval[-1]), t_eval=t_eval, common_noise=common_noise,
                    progress=progress, **solve_kwargs)
        if sol.status is not Status.SUCCESS:
            raise RuntimeError(f"the density on the common path did not reach the end: {sol.message}")
    else:
        solve_kwargs.setdefault("representation", "grid")  # the distances below take grid densities
        solve_kwargs.setdefault("raise_on_failure", True)  # a lost resolution is not a distance
        sol = solve(model, mu0, (t_eval[0], t_eval[-1]), t_eval=t_eval, progress=progress, **solve_kwargs)
    D = np.empty((ns.size, int(repeats), t_eval.size))
    # each density once, as the distances take it: quantised with its exact CDF on the circle, the grid
    # measure (nodes × quadrature weights, exact OT) on S² and in R^d
    targets = [prepare(d) for d in sol.densities]
    disc = discretisation(mu0, p)
    for i, n in enumerate(ns):
        x0 = particles.sample(mu0, int(n), rng=rng, batch=int(repeats))
        traj = particles.simulate(model, x0, t_eval, dt=dt, progress=progress, rng=rng,  # rng: a noisy model's noise
                                  strategy=particle_strategy, common_noise=common_noise)
        w = np.full(int(n), 1.0 / n)
        for k, target in enumerate(targets):
            for r in range(int(repeats)):
                D[i, r, k] = wasserstein((traj.x[k, r], w), target, p)
    fits = [fit_exponent(ns, D[:, :, k]) for k in range(t_eval.size)]
    return MeanFieldLimit(
        t=t_eval,
        ns=ns,
        distances=D,
        baseline=D[:, :, 0].copy(),
        exponent=np.array([f[0] for f in fits]),
        exponent_ci=np.array([f[1] for f in fits]),
        p=float(p),
        solution=sol,
        discretisation=float(disc),
    )
