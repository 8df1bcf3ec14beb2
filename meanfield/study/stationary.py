r"""Bifurcation studies ([stationary]): the single-cluster branch of a noisy zonal model, its stability, the
stationary states at chosen noise strengths, and the long-time order parameter of particle systems there.

Variables of the results (:func:`run`):

=====================  =====================  ============================================================
variable               dimensions             meaning
=====================  =====================  ============================================================
``branch_r``           branch                 order parameter r = |∫x dρ| along the branch (increasing)
``branch_noise``       branch                 D(r) on the branch (:func:`meanfield.analysis.stationary.branch`)
``branch_growth``      branch                 largest growth rate of the linearised equation (< 0: stable)
``state_r``            noise, state           order parameters of the clustered states at each D (NaN: none)
``state_growth``       noise, state           their growth rates
``critical_noise``     (none)                 D_c, where the uniform law loses stability (σ_1 = 0)
``fold_r``             fold                   r of the branch's folds (dD/dr = 0, located exactly)
``fold_noise``         fold                   their D (the largest D of a clustered state: D_f)
``bifurcation_noise``  degree                 D_l = zero of σ_l, where the degree-l branch leaves the uniform law,
                                              for the degrees that bifurcate above the study's smallest D
``diagram_critical``   beta                   D_c(β) at [stationary] betas (the transition diagram)
``diagram_fold``       beta                   D_f(β), the single-cluster fold (NaN: continuous transition)
``particle_order``     noise, n_particles,    |mean of the N positions|, averaged over the last fraction
                       repeat                 ``average`` of the output times
=====================  =====================  ============================================================

Coordinates: ``noise`` (the study's D), ``state`` (0, 1, …: the states at a D in increasing r), ``fold``,
``degree``, ``beta``. Attributes: ``critical_noise`` (D_c, as the variable), ``transition`` ("continuous" or
"discontinuous"), ``beta_star`` (β_* where the diagram's transition changes type: USA; NaN for SA). :func:`summary_lines` says all of it in words (``meanfield run`` prints them).
"""

from __future__ import annotations

import json
import logging

import numpy as np
from tqdm.auto import tqdm

import particles

from .. import domains
from ..core import interrupts
from ..analysis import stationary as st
from . import build, config

log = logging.getLogger("meanfield.study")

__all__ = ["run", "prepare", "initial_density", "particle_order", "summary_lines", "diagram_of"]

#: The highest degree whose bifurcation point a study reports.
MAX_DEGREE = 16


#: The resolution of the grid stability is checked on where a [stationary] study gives no [grid].
_SMALL_GRID = {"n": 64, "lmax": 16}


def _grid(cfg, grid):
    """Where stability is checked: the study's [grid], else a small one of its domain in the study's dimension (the
    zonal S^{d-1} of its d)."""
    if grid is not None:
        return grid
    domain = domains.get(cfg["domain"])
    return domain.make_grid({key: _SMALL_GRID.get(key) for key in domain.grid_parameters}
                            | {"dimension": cfg["dimension"]})


def prepare(cfg, model, grid):
    """What a [stationary] study asks before any work, :func:`run` and ``meanfield check`` alike
    (:func:`meanfield.study.preflight.check`): the grid stability is checked on (the study's, else a small one of its
    domain in its dimension) and that the model has stationary states there — a zonal model on a domain with zonal
    functions, asked of :func:`meanfield.analysis.stationary.critical_noise`, which refuses what the branch would. Returns
    that grid.

    Raises
    ------
    StudyError
        "[stationary]: " and the reason.
    """
    try:
        g = _grid(cfg, grid)
        with np.errstate(all="ignore"):  # asked for its refusals: D_c itself may overflow (USA, large β)
            st.critical_noise(model, g.domain)
    except (ValueError, TypeError) as exc:
        raise config.StudyError(f"[stationary]: {exc}") from None
    return g


def _model_at(model, noise: float):
    """``model`` with noise D (one head, or the heads' sum)."""
    from dataclasses import replace

    return replace(model, noise=float(noise))


def run(cfg, model, grid, progress: bool):
    """(data, coords, attrs, interrupted) of a [stationary] study (module docstring)."""
    sc = cfg["stationary"]
    g = prepare(cfg, model, grid)
    domain = g.domain  # the domain of the study's dimension (the zonal family's member of d)
    try:
        branch = st.branch(model, domain, np.linspace(sc["r_max"] / sc["points"], sc["r_max"], sc["points"]))
    except (ValueError, RuntimeError, FloatingPointError) as exc:
        raise config.StudyError(f"[stationary]: {exc}") from None
    growth = np.array([st.stability(model, s, g, noise=s.noise).growth
                       for s in tqdm(branch.states, desc="stability", disable=not progress, leave=False)])
    noise = np.array(sc["noise"], dtype=float)
    found = [st.stationary_states(branch, D) for D in noise]
    most = max(1, max(len(f) for f in found))
    state_r = np.full((noise.size, most), np.nan)
    state_growth = np.full((noise.size, most), np.nan)
    for i, (D, states) in enumerate(zip(noise, found)):
        for j, s in enumerate(states):
            state_r[i, j] = s.r
            state_growth[i, j] = st.stability(model, s, g, noise=D).growth
    data = {
        "branch_r": ("branch", branch.r, {"long_name": "order parameter |∫x dρ| on the single-cluster branch"}),
        "branch_noise": ("branch", branch.noise, {"long_name": "noise D on the branch"}),
        "branch_growth": ("branch", growth, {"long_name": "largest growth rate of the linearised equation "
                                                           "(< 0: stable)"}),
        "state_r": (("noise", "state"), state_r, {"long_name": "order parameters of the clustered stationary "
                                                               "states at D (NaN: none)"}),
        "state_growth": (("noise", "state"), state_growth, {"long_name": "their largest growth rates"}),
    }
    folds = np.asarray(branch.folds, dtype=float).reshape(-1, 2)
    degrees, points = _bifurcations(model, domain, min(float(np.min(noise)), float(np.min(branch.noise))))
    data.update({
        "critical_noise": ((), float(branch.critical), {"long_name": "D_c: the uniform law is unstable below it "
                                                                     "(σ_1 = 0)"}),
        "fold_r": ("fold", folds[:, 0], {"long_name": "order parameter at the branch's folds (dD/dr = 0)"}),
        "fold_noise": ("fold", folds[:, 1], {"long_name": "noise D at the branch's folds"}),
        "bifurcation_noise": ("degree", points, {"long_name": "D_l: the degree-l branch leaves the uniform law "
                                                              "(σ_l = 0)"}),
    })
    coords = {"noise": ("noise", noise, {"long_name": "noise strength D"}),
              "state": ("state", np.arange(most, dtype=np.int64), {"long_name": "clustered state at D, in "
                                                                                "increasing r"}),
              "fold": ("fold", np.arange(len(folds), dtype=np.int64), {"long_name": "fold of the branch"}),
              "degree": ("degree", degrees, {"long_name": "zonal degree l (circle: Fourier mode k)"})}
    attrs = {"critical_noise": branch.critical,
             "transition": "continuous" if branch.continuous else "discontinuous"}
    if len(sc["betas"]):
        data_d, coords_d, attrs_d = _diagram(sc, model, domain)
        data.update(data_d)
        coords.update(coords_d)
        attrs.update(attrs_d)
    interrupted = False
    if cfg["particles"] is not None:
        pc = cfg["particles"]
        order, interrupted = particle_order(cfg, model, noise, progress)
        coords.update({"n_particles": ("n_particles", np.array(pc["n"], dtype=np.int64)),
                       "repeat": ("repeat", np.arange(pc["repeats"], dtype=np.int64))})
        data["particle_order"] = (("noise", "n_particles", "repeat"), order,
                                  {"long_name": f"|mean of the positions| over the last {sc['average']:g} of the "
                                                "output times"})
    return data, coords, attrs, interrupted


def _bifurcations(model, domain, lowest: float):
    """(degrees, D_l): the degrees l = 1, 2, … (at most :data:`MAX_DEGREE`) whose branch leaves the uniform law at
    a D_l >= ``lowest`` (:func:`meanfield.analysis.stationary.critical_noise`; D_l falls with l), and those D_l."""
    degrees, points = [], []
    with np.errstate(all="ignore"):
        for degree in range(1, MAX_DEGREE + 1):
            D = float(st.critical_noise(model, domain, degree))
            if not np.isfinite(D) or D < lowest:
                break
            degrees.append(degree)
            points.append(D)
    return np.array(degrees, dtype=np.int64), np.array(points, dtype=float)


def _diagram(sc, model, domain):
    """(data, coords, attrs) of the transition diagram over [stationary] betas (:mod:`meanfield.solvers.transitions`)."""
    from ..solvers import transitions

    z = model.zonal
    betas = np.array(sc["betas"], dtype=float)
    try:
        with np.errstate(over="ignore"):
            diagram = transitions.transition_diagram(domain, betas, normalized=bool(model.normalized), c=float(z.c),
                                                     points=sc["points"], r_max=sc["r_max"])
    except (ValueError, RuntimeError, FloatingPointError) as exc:
        raise config.StudyError(f"[stationary] betas: {exc}") from None
    data = {"diagram_critical": ("beta", diagram.critical, {"long_name": "D_c(β): the uniform law is unstable "
                                                                         "below it"}),
            "diagram_fold": ("beta", diagram.fold, {"long_name": "D_f(β): the single-cluster fold (NaN: "
                                                                 "continuous transition)"})}
    coords = {"beta": ("beta", betas, {"long_name": "inverse temperature β of the transition diagram"})}
    attrs = {"beta_star": float("nan") if diagram.beta_star is None else float(diagram.beta_star)}
    return data, coords, attrs


def diagram_of(ds):
    """The :class:`meanfield.solvers.transitions.TransitionDiagram` stored in a [stationary] study's results (None where it
    computed none)."""
    if "diagram_critical" not in ds:
        return None
    from .. import domains
    from ..solvers import transitions

    study = json.loads(ds.attrs["study"]) if "study" in ds.attrs else {}
    m = study.get("model", {})
    star = float(ds.attrs.get("beta_star", float("nan")))
    name = ds.attrs["domain"]
    domain = (domains.zonal_domain(int(ds.attrs["dimension"])) if name == domains.ZONAL.name  # the member of d
              else domains.get(name))
    return transitions.TransitionDiagram(ds["beta"].values, ds["diagram_critical"].values,
                                         ds["diagram_fold"].values, None if np.isnan(star) else star,
                                         bool(m.get("normalized", True)), float(m.get("c", 1.0)), domain)


def summary_lines(ds) -> list[str]:
    """The lines ``meanfield run`` prints for a [stationary] study's results ``ds``: D_c, the transition's type,
    every fold (r, D), the bifurcation points D_l, and the particles' order parameter against the branch."""
    Dc = float(ds["critical_noise"]) if "critical_noise" in ds else float(ds.attrs["critical_noise"])
    kind = ds.attrs.get("transition", "?")
    lines = [f"transition   {kind} at D_c = {Dc:.10g} (the uniform law is unstable below it)"]
    if "fold_noise" in ds:
        folds = [(float(r), float(D)) for r, D in zip(ds["fold_r"].values, ds["fold_noise"].values)]
        lines.append("folds        " + ("none (the branch falls from D_c)" if not folds else "; ".join(
            f"D_f = {D:.10g} at r = {r:.6g}" + (f" (bistable window D_f − D_c = {D - Dc:.4g})" if D > Dc else "")
            for r, D in folds)))
    if "bifurcation_noise" in ds and ds["bifurcation_noise"].size:
        lines.append("bifurcations " + ", ".join(f"D_{int(l)} = {float(D):.6g}" for l, D in
                                                  zip(ds["degree"].values, ds["bifurcation_noise"].values))
                     + " (degree l leaves the uniform law)")
    if "diagram_critical" in ds:
        beta, fold = ds["beta"].values, ds["diagram_fold"].values
        star = float(ds.attrs.get("beta_star", float("nan")))
        folded = np.isfinite(fold)
        where = (f"discontinuous (a fold) for β in [{beta[folded].min():g}, {beta[folded].max():g}]" if folded.any()
                 else "continuous at every β")
        lines.append(f"diagram      {beta.size} β in [{beta[0]:g}, {beta[-1]:g}]: {where}"
                     + ("" if np.isnan(star) else f"; β_* = {star:.8g}"))
    return lines


def initial_density(cfg):
    """The density a [stationary] study's particles are drawn from where its law is given by grid values
    (:data:`~meanfield.study.config.GRID_LAWS`: uniform-noise, file; on its [grid]), else None: they are drawn from
    the law itself."""
    if cfg["initial"]["kind"] not in config.GRID_LAWS:
        return None
    return build.initial_density(cfg, build.build_grid(cfg))


def particle_order(cfg, model, noise, progress: bool):
    """(order, interrupted): the particles' order parameter |mean of the positions|, averaged over the last fraction
    [stationary] average of the output times, at each noise D of ``noise``, N and repeat (NaN where Ctrl-C stopped
    them), from [initial] to [time] t_end."""
    sc, pc, t_eval = cfg["stationary"], cfg["particles"], np.array(cfg["time"]["t_eval"], dtype=float)
    ns, R = pc["n"], pc["repeats"]
    density = initial_density(cfg)
    last = t_eval >= t_eval[-1] * (1.0 - sc["average"])
    order = np.full((len(noise), len(ns), R), np.nan)
    try:
        for k, D in enumerate(tqdm(noise, desc="particles", disable=not progress, leave=False)):
            noisy = _model_at(model, D)
            for a, n in enumerate(ns):
                interrupts.check()
                x0 = build.initial_particles(cfg, density, n)
                dt = build.particle_step(cfg, noisy)  # [particles] dt, or dt_factor / the rate scale
                traj = particles.simulate(noisy, x0, t_eval, dt=dt, rng=[cfg["seed"], 5, n, k],
                                          progress=False)  # the bar above counts them (--quiet: none)
                order[k, a] = np.linalg.norm(traj.x[last].mean(axis=-2), axis=-1).mean(axis=0)
    except KeyboardInterrupt:
        log.warning("interrupted: keeping the particle systems finished so far")
        return order, True
    except config.StudyError:  # already one line naming its key
        raise
    except (ValueError, TypeError, OverflowError) as exc:
        raise config.StudyError(f"[particles]: {exc}") from None
    return order, False
