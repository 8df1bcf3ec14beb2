"""Run a study: the density by :func:`meanfield.solve`, the particle systems by
:func:`particles.simulate`, the distances by :func:`validation.wasserstein`,
gathered into one :class:`xarray.Dataset`.

The Dataset (see the documentation site, docs/guide/studies.md, "Results files")
--------------------------------------------------------------------------------
coordinates  time; theta (circle), colatitude/longitude (sphere, radians), x [, y] (R^d);
             n_particles, repeat, component, p
density      (time, space...)   the solution on the finest grid reached (earlier frames
                                 resampled exactly: zero-padded spectra); NaN after t_reached
mass, energy (time)             ∫ρ and E_β of the density (energy for zonal models)
step_time, step_mass, step_energy (step)   the same at every accepted step
pair_fraction (n_particles, repeat, time)  fraction of pairs with ⟨x_i, x_j⟩ >= 1 − δ (of the directions
                                 θ = x/|x| where the tokens carry a radius: [model] normalization pre, peri, mix)
radius_mean (n_particles, repeat, time), radius_quantiles (n_particles, repeat, quantile, time)
                                 the tokens' radii r = |x|: mean and quantiles 0.1, 0.5, 0.9 over the tokens
                                 (pre-, peri-, Mix-LN only; tokens x = rθ started at r = 1)
particle_energy (n_particles, repeat, time)  E_β of the empirical measure (Q = K = I)
positions_<N> (repeat, time, particle_<N>, component)   the trajectories
wasserstein (p, n_particles, repeat, time)  W_p(μ_t, μ^N_t) (validation.wasserstein.distance): exact OT where
                                 it fits, else coarsened OT within
wasserstein_bound (same dims)      its certified error bound (0 where exact)
rate, rate_low, rate_high (p, time)  exponent α of W_p ~ N^α (W_p/√(log N) on S², R²), 95% interval
common_path (time, noise_matrix), common_flow (time, flow_row, flow_column), common_sigmas
                                 with [common_noise]: the path W^k(t) that the density and every particle
                                 system share, the scheme's linear flow R_t, and the matrices Σ_k (MATH.md §13)
attributes   the study (JSON), package versions, model, solver status and message,
             t_reached, method, path, nfev, nsteps, refinements
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

import particles
from particles import clusters
from validation.meanfield_limit import fit_exponent
from validation.wasserstein import ExactOTTooLarge, discretisation, distance
from validation.wasserstein import prepare as prepare_measure

from .. import domains, lagrangian
from ..core import interrupts
from ..lagrangian import LagrangianMeasure
from ..core.io import beside, prepare, save
from ..kernels import energy as kernel_energy
from ..models import at_context
from ..models.normalization import normalization_of
from ..integrate.monitor import ResolutionError
from ..core.numerics import EXP_MAX
from ..solvers.solve import Interrupted, Status, solve
from . import build, config, preflight, stationary
from .figures import write_figures

__all__ = ["run", "run_config", "write_results", "StudyInterrupted", "show_progress", "versions"]

log = logging.getLogger("meanfield.study")


class StudyInterrupted(KeyboardInterrupt):
    """Ctrl-C during a study; ``dataset`` holds what was computed, ``path`` the file it was written to."""

    def __init__(self, dataset, path=None):
        super().__init__("study interrupted")
        self.dataset, self.path = dataset, path


def show_progress(progress: bool | None) -> bool:
    """Progress bars: as asked, else when standard error is a terminal."""
    return sys.stderr.isatty() if progress is None else bool(progress)


def _inner(requested: bool | None, bars: bool) -> bool | None:
    """What the study passes to ``solve`` and ``particles.simulate``: True under bars; None where the study's
    progress was left to "auto" and there are none (no terminal), so that their periodic progress lines reach a
    batch job's log (:func:`meanfield.core.checks.progress_lines`, silenced by ``quiet()``); False where it was refused."""
    return True if bars else (None if requested is None else False)


# ------------------------------------------------------------- density
def _space(grid):
    """The grid's dimensions and coordinates for the Dataset (each grid names its own axes)."""
    axes = grid.coordinates()
    return tuple(axes), {name: (name, values, attrs) for name, (values, attrs) in axes.items()}


def _on_output_times(sol, t_eval) -> int:
    """How many leading frames of ``sol`` sit at the output times (a partial solution may end with the
    last resolved state at a time between two of them)."""
    k = 0
    while k < min(sol.t.size, t_eval.size) and sol.t[k] == t_eval[k]:
        k += 1
    return k


def _density_vars(sol, t_eval, grid0):
    """Density frames on the finest grid reached, NaN after the last output time computed.

    A partial solution's last resolved state, when it falls between output times, is kept apart as
    ``density_last_resolved`` (its time in the attribute ``time``), never put on an output time.
    Lagrangian frames (after a hand-over, or from t = 0) are written as they are — points, weights and
    log-density, padded with NaN to the most points (``lagrangian_*``) — with their clusters, and on the
    circle and S² also as cell averages (mass in each cell / its width or area) on that grid.
    """
    dens = list(sol.densities)
    k = _on_output_times(sol, t_eval)
    grids = [d.grid for d in dens if d.grid is not None]
    top = max(grids, key=lambda g: g.n) if grids else grid0
    dims, coords = _space(top)

    def on_top(d):
        if d.grid is None:  # a Lagrangian frame: its points' masses in the cells of the top grid
            return _cell_averages(d, top)
        return d.values if d.grid == top else d.grid.resample(d.values, top.n)

    rho = np.full((t_eval.size,) + top.shape, np.nan)
    for i in range(k):
        rho[i] = on_top(dens[i])
    mass = np.full(t_eval.size, np.nan)
    mass[:k] = sol.mass[:k]
    out = {
        "density": (("time",) + dims, rho, {"long_name": "density ρ(t) against surface/Lebesgue measure"}),
        "mass": ("time", mass, {"long_name": "∫ρ"}),
        "step_time": ("step", sol.t_steps, {"long_name": "time of each accepted step"}),
        "step_mass": ("step", sol.mass_steps),
    }
    if len(dens) > k:
        out["density_last_resolved"] = (dims, on_top(dens[-1]), {"long_name": "last resolved density",
                                                                 "time": float(sol.t[-1])})
    if sol.energy is not None:
        energy = np.full(t_eval.size, np.nan)
        energy[:k] = sol.energy[:k]
        out["energy"] = ("time", energy, {"long_name": "interaction energy E_β (GLPR §3.2)"})
        out["step_energy"] = ("step", sol.energy_steps)
    frames = [(i, d) for i, d in enumerate(dens[:k]) if d.lagrangian]
    if frames:
        out.update(_lagrangian_vars(frames, t_eval))
    return out, coords


def _representation(sol) -> str:
    """The representations that made the frames, in order: 'grid', 'grid+panels+nodes', 'nodes', ... (the hand-overs
    in attrs['handovers'])."""
    kinds = list(dict.fromkeys(sol.representation)) if sol.representation else ["grid"]
    return "+".join(kinds)


def _cell_averages(frame, grid):
    """A Lagrangian frame's cell averages on ``grid`` where its chart bins points (circle, S²), else NaN."""
    binning = getattr(frame.domain.chart, "cell_averages", None)
    if binning is None:
        return np.full(grid.shape, np.nan)
    return binning(frame.state, frame.weights, grid)


def _lagrangian_vars(frames, t_eval):
    """Points, weights, log-densities of the Lagrangian frames (padded), their clusters and the cluster count. The
    points' axis is "component" where they are points of R^d like the particles, "ring_coordinate" for the zonal
    sphere's rings (their polar angle: one coordinate, whatever the particles' d)."""
    n = max(len(f) for _, f in frames)
    d = frames[0][1].points.shape[-1]
    axis = "component" if frames[0][1].domain.particle_domain(d) is frames[0][1].domain else "ring_coordinate"
    pts = np.full((t_eval.size, n, d), np.nan)
    w = np.full((t_eval.size, n), np.nan)
    logr = np.full((t_eval.size, n), np.nan)
    found = {}
    rings = frames[0][1].domain.quotient_of(frames[0][1].domain.particle_domain(d))  # zonal rings: no clusters
    for i, f in frames:
        m = len(f)
        pts[i, :m], w[i, :m], logr[i, :m] = f.points, f.weights, f.log_density
        found[i] = [] if rings else lagrangian.clusters(f)
    most = max(1, max(len(c) for c in found.values()))
    count = np.full(t_eval.size, np.nan)
    masses = np.full((t_eval.size, most), np.nan)
    for i, cl in found.items():
        count[i] = np.nan if rings else len(cl)
        masses[i, : len(cl)] = [c.mass for c in cl]
    return {
        "lagrangian_points": (("time", "lagrangian_point", axis), pts,
                              {"long_name": "points X_i(t) of the Lagrangian measure (NaN: padding)"}),
        "lagrangian_weight": (("time", "lagrangian_point"), w, {"long_name": "fixed weights w_i"}),
        "lagrangian_log_density": (("time", "lagrangian_point"), logr,
                                   {"long_name": "log ρ(X_i(t), t), exact along characteristics"}),
        "cluster_count": ("time", count, {"long_name": "clusters of the Lagrangian measure "
                                                       "(meanfield.lagrangian.clusters, threshold 10)"}),
        "cluster_mass": (("time", "cluster"), masses, {"long_name": "cluster masses, heaviest first"}),
    }


def _solve(cfg, model, mu0, t_eval, progress, noise=None):
    """The density's solution as the study's [time] table asks (solve's own defaults where it says nothing), on the
    study's common path where it has one (``noise``, :func:`meanfield.study.build.common_noise`)."""
    log.info("solving the density: %r on %r, t in [0, %g]", model, mu0.grid, t_eval[-1])
    try:  # the options `meanfield check` gave solve.prepare (preflight.check): accepted there, accepted here
        sol = solve(model, mu0, (0.0, float(t_eval[-1])), t_eval=t_eval, progress=progress, common_noise=noise,
                    **build.solve_options(cfg))
    except ResolutionError as exc:  # the initial density itself is not resolved: a study to fix
        raise config.StudyError(f"[grid]: {exc}") from None
    except Interrupted as exc:
        log.warning("interrupted: keeping the density up to the last output time")
        return exc.solution, True
    except (ValueError, TypeError, OverflowError) as exc:
        raise build.solver_error(exc, model) from None
    for h in sol.handovers:
        log.info("t = %.6g: the %s handed over to the %s (%s)", h.t, h.source, h.target, h.reason)
    if sol.status is Status.RESOLUTION_LOST:
        log.warning("the solution is no longer resolved after t = %.6g: %s%s", sol.t_reached, sol.message,
                    "" if sol.hint is None else f". {sol.hint}")
    elif sol.status is not Status.SUCCESS:
        log.warning("%s (t = %.6g)%s", sol.message, sol.t_reached, "" if sol.hint is None else f". {sol.hint}")
    return sol, False


def _common_vars(noise, t_eval):
    """The study's common path at the output times: W^k(t) and the scheme's linear flow R_t (dR = Σ_k Σ_k R ∘ dW^k,
    :meth:`meanfield.models.common_noise.CommonNoise.flow`), by which a rotation-equivariant model's solution is the
    noiseless one turned (MATH.md §13)."""
    return {"common_path": (("time", "noise_matrix"), noise.path.W(t_eval),
                            {"long_name": "the common Brownian motions W^k(t) shared by the density and the particles"}),
            "common_flow": (("time", "flow_row", "flow_column"), noise.flow(t_eval),
                            {"long_name": "the common noise's linear flow R_t, dR = Σ_k Σ_k R ∘ dW^k (as the scheme "
                                          "composes it)"}),
            "common_sigmas": (("noise_matrix", "flow_row", "flow_column"), np.array(noise.sigmas),
                              {"long_name": "the matrices Σ_k of the common noise"})}


# ------------------------------------------------------------ particles
def _unit_vectors(cfg) -> bool:
    """Whether the study's particles are unit vectors (circle, S^{d-1}, and the particles of a zonal study): the
    clustering statistics ⟨x_i, x_j⟩ >= 1 − δ and E_β of point sets are defined there."""
    return domains.get(cfg["domain"]).particle_domain(cfg["dimension"]).unit_vectors


def _has_particle_energy(model) -> bool:
    """E_β of point sets by the fused kernel: SA/USA with Q = K = I, β where e^β is finite."""
    return model.exp_kernel and model.Q is None and model.K is None and model.beta <= EXP_MAX


def _particle_energy(model, x):
    """E_β of the empirical measures x (R, T, N, d) → (R, T), or None (see :func:`_has_particle_energy`)."""
    if not _has_particle_energy(model):
        return None
    n = x.shape[-2]
    return kernel_energy(x, np.full(x.shape[:-1], 1.0 / n), model.beta)


#: The quantiles of the tokens' radii r = |x| a study stores where its normalisation carries the radius.
RADIUS_QUANTILES = (0.1, 0.5, 0.9)


def _radial(model) -> bool:
    """Whether the model's tokens carry a radius, x = rθ (pre-, peri-, Mix-LN; docs/MATH.md §10)."""
    return normalization_of(model).radial


def _radius_statistics(x) -> np.ndarray:
    """The mean of r = |x| over the tokens and its :data:`RADIUS_QUANTILES`, of systems x (..., N, d): shape
    (1 + len(RADIUS_QUANTILES), ...)."""
    r = np.linalg.norm(x, axis=-1)
    return np.concatenate([r.mean(axis=-1)[None], np.quantile(r, RADIUS_QUANTILES, axis=-1)])


def _directions(x) -> np.ndarray:
    """θ = x/|x| (the positions themselves, to round-off, for unit vectors)."""
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _statistics(model, x, delta):
    """Pair fractions (of the directions θ = x/|x|), energies and, where the tokens carry a radius, the radius
    statistics (:func:`_radius_statistics`) of the systems x (R, T, N, d), one repeat at a time: a deferred Ctrl-C
    (:mod:`meanfield.core.interrupts`) is honoured between repeats, never inside a compiled kernel."""
    fractions = np.empty(x.shape[:2])
    energies = np.empty(x.shape[:2]) if _has_particle_energy(model) else None
    radial = _radial(model)
    radii = np.empty((1 + len(RADIUS_QUANTILES),) + x.shape[:2]) if radial else None
    for r in range(x.shape[0]):
        interrupts.check()
        fractions[r] = clusters.pair_fraction(_directions(x[r]) if radial else x[r], delta)
        if energies is not None:
            energies[r] = _particle_energy(model, x[r])
        if radial:
            radii[:, r] = _radius_statistics(x[r])
    return {"pair_fraction": fractions, "energy": energies, "radius": radii}


def _observer(model, delta):
    """The statistics of :func:`_statistics` of one output's systems (R, N, d) as one array (k, R): the pair
    fractions, E_β where the particles have one, the radius statistics where they carry a radius."""
    energy, radial = _has_particle_energy(model), _radial(model)

    def observe(y):
        out = [clusters.pair_fraction(_directions(y) if radial else y, delta)]
        if energy:
            out.append(_particle_energy(model, y))
        if radial:
            out.extend(_radius_statistics(y))
        return np.stack(out)

    return observe


def _particles(cfg, model, mu0, t_eval, progress, store, noise=None):
    """Simulate every N; fills ``store`` as it goes (kept on Ctrl-C). Returns True if interrupted. ``noise``: the
    study's common noise (:func:`meanfield.study.build.common_noise`), one path for every N and repeat."""
    pc = cfg["particles"]
    sphere = _unit_vectors(cfg)
    lines = None if progress is None else False  # under the bar over n: no bar of their own; lines in logs
    every_n = model
    for n in tqdm(pc["n"], desc="particles", disable=progress is not True, leave=False):
        try:
            model = at_context(every_n, n)  # [model] beta_scaling: β_n of these N tokens (MATH.md §13)
            x0 = build.initial_particles(cfg, mu0, n)
            log.info("simulating %d realisation(s) of N = %d particles", x0.shape[0], n)
            dt = build.particle_step(cfg, model)  # dt, or dt_factor / the largest rate scale over the run
            rng = np.random.default_rng([cfg["seed"], 4, n])  # stream 4: the noise
            if sphere and not pc["save_positions"] and (cfg["grid"] is None or not cfg["distances"]["p"]):
                # positions neither saved nor compared with a density: the statistics, of inner products only, are
                # taken at each output inside the run (no history; in a run reduced to its tokens' span, on its
                # coordinates: a d = 128 phase diagram writes no 6.7 GB of positions per β)
                traj = particles.simulate(model, x0, t_eval, method=pc["method"], dt=dt, progress=lines, rng=rng,
                                          span_coordinates=True, observe=_observer(model, pc["delta"]),
                                          common_noise=noise)
                energy, radial = _has_particle_energy(model), _radial(model)
                stats = {"x": None, "pair_fraction": traj.observed[:, 0].T,
                         "energy": traj.observed[:, 1].T if energy else None,
                         "radius": np.moveaxis(traj.observed[:, 1 + energy:], 0, -1) if radial else None}
            else:
                traj = particles.simulate(model, x0, t_eval, method=pc["method"], dt=dt, progress=lines, rng=rng,
                                          common_noise=noise)
                x = np.ascontiguousarray(np.moveaxis(traj.x, 0, 1))  # (R, T, N, d), one copy for every statistic
                stats = {"x": x}
                if sphere:  # inside the try: Ctrl-C during the statistics keeps the systems finished before
                    stats.update(_statistics(model, x, pc["delta"]))
        except KeyboardInterrupt:
            log.warning("interrupted: keeping the particle systems finished so far")
            return True
        except config.StudyError:  # already one line naming its key
            raise
        except (ValueError, TypeError, OverflowError) as exc:
            raise config.StudyError(f"[particles]: {exc}") from None
        store[n] = stats
    return False


def _probability(frame):
    """A Lagrangian frame as a probability measure: its weights over their sum, which is the conserved mass 1 as the
    grid read it at the hand-over (to its quadrature's round-off: 3e-9 on S^127, where a cluster's values span tens
    of decades; the summary reports the drift); a density as it is (the distances read its law)."""
    if not frame.lagrangian:
        return frame
    return LagrangianMeasure(frame.state, frame.weights / frame.mass(), frame.log_density, frame.domain, frame.mesh,
                             frame.t, check=False)


def _wasserstein(cfg, densities, store, progress):
    """W_p(μ_t, μ^N_t) for every p, N, repeat and output time with a density, and the certified bound on each
    (0 where exact OT fits; the coarsening's where a refined grid or a Lagrangian frame outgrows it:
    validation.wasserstein.distance). Ctrl-C keeps the rest NaN."""
    ps, ns = cfg["distances"]["p"], list(store)
    R, T = cfg["particles"]["repeats"], len(cfg["time"]["t_eval"])
    out = np.full((2, len(ps), len(cfg["particles"]["n"]), R, T), np.nan)  # the values, then their bounds
    index = {n: i for i, n in enumerate(cfg["particles"]["n"])}
    jobs = [(t, a, n) for t in range(min(T, len(densities))) for a in range(len(ps)) for n in ns]
    try:
        frame = None
        for t, a, n in tqdm(jobs, desc="distances", disable=not progress, leave=False):
            interrupts.check()
            if frame is None or frame[0] != t:  # each frame prepared once (a circle density's quantisation)
                frame = (t, prepare_measure(_probability(densities[t])))
            # the R realisations as one batch: a frame that must be coarsened is coarsened once per batch
            d = distance(frame[1], store[n]["x"][:, t], p=ps[a])
            out[0, a, index[n], :, t], out[1, a, index[n], :, t] = d.value, d.bound
    except KeyboardInterrupt:
        log.warning("interrupted: distances not computed are NaN")
        return out, True
    return out, False


def _discretisation_floor(cfg, density, w, data) -> None:
    """W_p between the initial density and the grid measure it enters the distances as (validation.wasserstein.
    discretisation), stored as ``wasserstein_discretisation``; a warning where it exceeds half the smallest
    distance measured at t = 0, whose decay in N it then flattens (a rate fitted there measures the grid as
    much as the particles). Measured on examples/compare_sphere.toml: at lmax 24 the estimate is 0.043, 0.75
    of W1 at N = 3000 (0.057), and W1/√(log N) ~ N^-0.454 [-0.485, -0.424]; at lmax 48, 0.022 (0.47 of it) and
    N^-0.512 [-0.535, -0.489], the law's -1/2."""
    if density.grid is None:  # a Lagrangian start: no grid measure to estimate
        return
    p = cfg["distances"]["p"][0]
    try:
        floor = float(discretisation(density, p))
    except (ValueError, TypeError, AttributeError, ExactOTTooLarge):  # no estimate for this grid
        return
    data["wasserstein_discretisation"] = ((), floor, {"long_name": f"W{p:g} between the initial density and its "
                                                                   "grid measure (estimate)"})
    at_start = w[0, :, :, 0]  # (N, repeat); rows of N not simulated (an interrupted run) are NaN
    computed = np.isfinite(at_start).any(axis=1)
    smallest = float(np.min(np.nanmean(at_start[computed], axis=1), initial=np.inf))
    if np.isfinite(smallest) and floor > 0.5 * smallest:
        log.warning("the grid measure's own W%g error %.3g is more than half the smallest distance at "
                    "t = 0 (%.3g): the fitted rate flattens; refine [grid]", p, floor, smallest)


def _log_corrected(domain, d: int) -> bool:
    """Whether E W_1(μ^N, μ) ≍ √(log N / N): in intrinsic dimension 2 (S², R²; MATH.md §4), where the rate is
    fitted to W_p/√(log N). ``d``: the ambient dimension of the points."""
    return domain.intrinsic_dimension(d) == 2


def _rates(ns, w, log_corrected: bool = False):
    """Exponent of W_p ~ N^α (of W_p/√(log N) ~ N^α where ``log_corrected``) at each (p, time), with its 95%
    interval; NaN where it cannot be fitted."""
    P, _, _, T = w.shape
    rate = np.full((3, P, T), np.nan)
    scale = np.sqrt(np.log(ns))[:, None] if log_corrected else 1.0
    for a in range(P):
        for t in range(T):
            D = w[a, :, :, t] / scale
            if np.all(np.isfinite(D)) and np.all(D > 0):
                s, (lo, hi) = fit_exponent(ns, D)
                rate[:, a, t] = (s, lo, hi)
    return rate


# ------------------------------------------------------------------ run
def versions() -> dict:
    """Versions of meanfield, numpy, scipy and xarray, for a results file's attributes."""
    import numpy
    import scipy

    from .. import __version__

    return {"meanfield_version": __version__, "numpy_version": numpy.__version__,
            "scipy_version": scipy.__version__, "xarray_version": xr.__version__}


def _layer_boundaries(model, t0: float, t1: float) -> np.ndarray:
    """The layer boundaries in (t0, t1): the schedules' of every block, and a splitting's layers (not its
    sub-steps)."""
    parts = getattr(model, "parts", (model,))
    out = [p.breakpoints(t0, t1) for p in parts]
    if getattr(model, "splitting", "sum") != "sum":
        out.append(model.layer_starts(t0, t1))
    return np.unique(np.concatenate(out)) if out else np.empty(0)


def run_config(cfg: dict, progress: bool | None = None) -> tuple[xr.Dataset, bool]:
    """Run a checked study (:func:`meanfield.study.config.read`); return (Dataset, interrupted)."""
    inner = _inner(progress, show_progress(progress))
    progress = show_progress(progress)
    model = build.build_model(cfg)
    grid = build.build_grid(cfg)
    t_eval = np.array(cfg["time"]["t_eval"], dtype=float)
    data, coords = {}, {"time": ("time", t_eval, {"long_name": "time t"})}
    attrs = {"title": cfg["name"], "study": config.to_json(cfg), "domain": cfg["domain"],
             "dimension": cfg["dimension"], "model": " ".join(repr(model).split()), **versions()}
    if callable(getattr(model, "describe", None)):  # the model in words, for the figures' titles
        attrs["model_label"] = model.describe()
    if model.time_dependent:  # where the field jumps: the figures mark them
        attrs["layer_boundaries"] = json.dumps([float(t) for t in _layer_boundaries(model, t_eval[0], t_eval[-1])])
    if cfg.get("stationary") is not None:  # a bifurcation study: no density solve (meanfield.study.stationary)
        sdata, scoords, sattrs, interrupted = stationary.run(cfg, model, grid, progress)
        status = Status.INTERRUPTED.value if interrupted else Status.SUCCESS.value
        attrs.update(sattrs, status=status, message="the study ran to the end" if not interrupted else
                     "interrupted (Ctrl-C): the file holds what was computed", t_reached=float(t_eval[-1]))
        return xr.Dataset(sdata, coords=coords | scoords, attrs=attrs), interrupted
    mu0 = build.initial_density(cfg, grid)
    noise = build.common_noise(cfg, grid)  # [common_noise]: one path for the density and every particle system
    if noise is not None:
        data.update(_common_vars(noise, t_eval))
        coords["noise_matrix"] = ("noise_matrix", np.arange(noise.sigmas.shape[0], dtype=np.int64))
    interrupted = False
    densities = []
    status, message, t_reached = Status.SUCCESS.value, "the study ran to the end", float(t_eval[-1])
    if mu0 is not None:
        sol, interrupted = _solve(cfg, model, mu0, t_eval, inner, noise)
        densities = list(sol.densities[: _on_output_times(sol, t_eval)])  # frames at the output times
        dvars, dcoords = _density_vars(sol, t_eval, grid)
        data.update(dvars)
        coords.update(dcoords)
        status, message = sol.status.value, sol.message
        t_reached = float(sol.t[-1]) if sol.t.size else float("nan")
        grids = [d.grid for d in densities if d.grid is not None]
        final = grids[-1] if grids else grid
        # the finest grid the solver reached: refinements after the last grid frame (before a hand-over) count too
        reached = int(sol.refinements[-1][2]) if sol.refinements else final.n
        while final.n < reached:
            final = final.refined()
        attrs.update({"grid": repr(grid), "grid_final": repr(final), "resolution": grid.n, "resolution_final": final.n,
                      "solver_method": sol.method, "solver_strategy": sol.strategy, "nfev": sol.nfev,
                      "nsteps": sol.nsteps, "refinements": json.dumps([list(map(float, r)) for r in sol.refinements]),
                      "representation": _representation(sol), "handover": -1.0 if sol.handover is None
                      else float(sol.handover),
                      "handovers": json.dumps([[h.t, h.source, h.target, h.reason] for h in sol.handovers])})
    store = {}
    if cfg["particles"] is not None and not interrupted:
        interrupted = _particles(cfg, model, mu0, t_eval, inner, store, noise)
    if cfg["particles"] is not None:
        ns = cfg["particles"]["n"]
        R, T, d = cfg["particles"]["repeats"], t_eval.size, cfg["dimension"]
        coords.update({"n_particles": ("n_particles", np.array(ns, dtype=np.int64)),
                       "repeat": ("repeat", np.arange(R, dtype=np.int64)),
                       "component": ("component", np.arange(d, dtype=np.int64))})
        pairs = "⟨θ_i, θ_j⟩ >= 1 − δ of the directions θ = x/|x|" if _radial(model) else "⟨x_i, x_j⟩ >= 1 − δ"
        for key, name, doc in (("pair_fraction", "pair_fraction",
                                f"fraction of ordered pairs with {pairs}, δ = {cfg['particles']['delta']:g}"),
                               ("energy", "particle_energy", "E_β of the empirical measure")):
            if not _unit_vectors(cfg) or (key == "energy" and not _has_particle_energy(at_context(model, ns[0]))):
                continue
            arr = np.full((len(ns), R, T), np.nan)
            for i, n in enumerate(ns):
                if n in store and store[n].get(key) is not None:
                    arr[i] = store[n][key]
            data[name] = (("n_particles", "repeat", "time"), arr, {"long_name": doc})
        if _radial(model):  # the tokens x = rθ carry a radius: its law over time (mean, quantiles)
            coords["quantile"] = ("quantile", np.array(RADIUS_QUANTILES), {"long_name": "quantile of r over tokens"})
            radius = np.full((1 + len(RADIUS_QUANTILES), len(ns), R, T), np.nan)
            for i, n in enumerate(ns):
                if n in store and store[n].get("radius") is not None:
                    radius[:, i] = store[n]["radius"]
            data["radius_mean"] = (("n_particles", "repeat", "time"), radius[0],
                                   {"long_name": "mean over the tokens of their radius r = |x|"})
            data["radius_quantiles"] = (("n_particles", "repeat", "quantile", "time"),
                                        np.moveaxis(radius[1:], 0, 2),
                                        {"long_name": "quantiles over the tokens of their radius r = |x|"})
        if cfg["particles"]["save_positions"]:
            words = " (tokens x = rθ)" if _radial(model) else ""
            for n, s in store.items():
                data[f"positions_{n}"] = (("repeat", "time", f"particle_{n}", "component"), s["x"],
                                          {"long_name": f"positions of the {n} particles{words}"})
        if cfg["distances"]["p"] and densities:
            (w, w_bound), stop = (np.full((2, len(cfg["distances"]["p"]), len(ns), R, T), np.nan), True) \
                if interrupted else _wasserstein(cfg, densities, store, progress)
            interrupted = interrupted or stop
            coords["p"] = ("p", np.array(cfg["distances"]["p"], dtype=float), {"long_name": "order of W_p"})
            data["wasserstein"] = (("p", "n_particles", "repeat", "time"), w,
                                   {"long_name": "W_p(density, particles): exact OT, or within wasserstein_bound"})
            data["wasserstein_bound"] = (("p", "n_particles", "repeat", "time"), w_bound,
                                         {"long_name": "certified bound on the error of wasserstein (0: exact; "
                                                       "else coarsened OT, validation.wasserstein.distance)"})
            if len(ns) >= 2:
                corrected = _log_corrected(domains.get(cfg["domain"]), cfg["dimension"])
                rate = _rates(np.array(ns), w, corrected)
                law = "W_p/√(log N) ~ N^α" if corrected else "W_p ~ N^α"
                for k, name in enumerate(("rate", "rate_low", "rate_high")):
                    data[name] = (("p", "time"), rate[k], {"long_name": f"exponent α of {law}"
                                                            + ("" if k == 0 else " (95% interval)"),
                                                            "law": law})
                _discretisation_floor(cfg, densities[0], w, data)
    if interrupted:
        status, message = Status.INTERRUPTED.value, "interrupted (Ctrl-C): the file holds what was computed"
    attrs.update({"status": status, "message": message, "t_reached": t_reached})
    return xr.Dataset(data, coords=coords, attrs=attrs), interrupted


def run(study, *, output=None, progress: bool | None = None, plot: bool | None = None,
        animation: str | None = None, overwrite: bool = False) -> xr.Dataset:
    """Run a study and write its results file.

    Parameters
    ----------
    study : path or dict
        A TOML study file, or its tables as a dict (the documentation site's "Study file reference").
    output : path, optional
        Results file (NetCDF); default the study's [output] path. ``False``
        writes nothing.
    progress : bool, optional
        Progress bars; default on when standard error is a terminal.
    plot : bool, optional
        Write the figures next to the results file; default the study's [output] plot.
    animation : {"gif", "mp4"}, optional
        Also write an animation of the density; default the study's [output] animation.
    overwrite : bool
        Replace a complete result at the output path. Without it such a path is
        refused before any work (an interrupted result there is replaced). An
        interrupted run never replaces a complete result: it is written beside
        it as ``<stem>.interrupted.nc``.

    Returns
    -------
    xarray.Dataset
        See :mod:`meanfield.study.runner`. ``attrs["status"]`` is "success",
        "resolution lost" (the density stopped at ``attrs["t_reached"]``, later
        frames NaN) or "interrupted".

    Raises
    ------
    StudyError
        The study file is invalid (the message names the key), the output path
        cannot be written or holds a complete result, or the study does not fit
        the memory or disk of this machine (:mod:`meanfield.study.preflight`):
        all before any work.
    StudyInterrupted
        Ctrl-C or SIGTERM: what was computed is written first, and carried by the
        exception. The signals are deferred to safe points (:mod:`meanfield.core.interrupts`).
    """
    cfg = config.read(study)
    path = cfg["output"]["path"] if output is None else output
    if path is not False:
        path = preflight.output(path, overwrite, "[output] path")
    preflight.check(cfg, path)
    plot = cfg["output"]["plot"] if plot is None else plot
    animation = cfg["output"]["animation"] if animation is None else animation
    if path is not False:
        prepare(path)  # the write's first-use imports now, not after a Ctrl-C
    with interrupts.deferred():
        ds, interrupted = run_config(cfg, progress=progress)
        target = None if path is False else write_results(ds, path, plot, animation)
        interrupted = interrupted or interrupts.pending()
        interrupts.clear()
    if interrupted:
        raise StudyInterrupted(ds, target)
    return ds


def write_results(ds, path, plots: bool = False, animation: str | None = None):
    """Write ``ds`` to ``path`` — beside it as ``<stem>.interrupted.nc`` when ``ds`` is interrupted and a
    complete result is there — then its figures unless a deferred Ctrl-C is pending. Returns the file written."""
    target = beside(path, ds)
    if target != Path(path):
        log.warning("interrupted: %s holds a complete result and is kept; writing %s", path, target)
    save(ds, target)
    log.info("wrote %s", target)
    if (plots or animation) and not interrupts.pending():
        try:
            for f in write_figures(ds, target, plots=plots, animation=animation):
                log.info("wrote %s", f)
        except KeyboardInterrupt:
            log.warning("interrupted while drawing: the results file is complete, some figures are missing")
    return target
