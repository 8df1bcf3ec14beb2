"""Checks before the work: what the run will refuse, and what a study will write and hold in memory, against what
the machine has.

:func:`solver` asks :func:`meanfield.solvers.solve.prepare` — the checks and the plan that :func:`meanfield.solve` runs
before any work — about the study's density with the options the run will give it, so ``meanfield check`` refuses
exactly the studies whose solve would refuse them (tests/study/test_check_means_run.py generates studies over the
schema and asserts it).

:func:`estimate` sizes a checked study from its tables alone (no solving): the
results file (density frames on the largest grid refinement may reach, the
particle trajectories, the distances) and the largest single array of the run
(the trajectories of one N, the optimal transport of the distances: exact up to
:data:`validation.wasserstein.EXACT_OT_MAX` cost entries, coarsened to that size beyond, with a certified
bound; the pairwise field sums are cut into row chunks and stay small), and the memory the run holds at once
(``peak``: the particles' trajectories, every N's kept for the results, with the working arrays of the largest
N's run, :data:`PARTICLE_WORK` copies of its state). :func:`check` refuses, with one line naming the estimate and
the way out, a study whose peak exceeds its memory budget (:func:`memory_budget`: ``MEANFIELD_MEMORY``, else
:data:`MEMORY_SHARE` of the machine's physical memory — a stated figure, never the memory free at the moment: a
study sized against whatever other processes left free passes on an idle machine and is then refused, or worse
runs, beside them), or whose results do not fit on the disk of the output directory.

It also says what the grid will do: the resolution refinement can reach (:func:`reach`: doublings of the
initial one, so the largest n·2^k or lmax·2^k <= [time] max_n), and on S² with general Q, K, V the
spherical-harmonic degree the kernel e^{β⟨Qx,Ky⟩} needs at t = 0 against the grid's lmax
(:func:`kernel_degree`), which :func:`check` logs before a run starts. :func:`existing` reports a complete
result at the output path (``meanfield check`` says so; ``meanfield run`` refuses it without --overwrite).

:func:`run_times` (``meanfield check``; ``check(..., timing=True)``) says how long the run will step: the density's
steps where [time] dt fixes them, and each [particles] n's RK4 steps (dt, or the default step of the model's rate
scale), each with the seconds a step takes, measured on a few of the run's own first steps
(:func:`meanfield.solvers.solve.run_estimate`, :func:`particles.system.run_estimate`), not guessed.

The estimates are upper bounds where the run can only shrink them (the grid
is sized at its refinement cap, files uncompressed).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from particles.system import run_estimate as particle_estimate
from validation.wasserstein import EXACT_OT_MAX, OT_BYTES_PER_ENTRY

from .. import domains
from ..models import at_context
from ..domains.sphere.moments import moment_degree
from ..domains.sphere.transforms import dealiased_degree
from ..core.io import REPLACEABLE, check_output, status_of
from ..integrate.monitor import ResolutionMonitor
from ..integrate.trackers import RunEstimate
from ..solvers.solve import Prepared, prepare
from ..solvers.solve import run_estimate as solve_estimate
from . import build, stationary
from .config import StudyError

__all__ = ["Estimate", "estimate", "solver", "check", "output", "existing", "reach", "kernel_degree", "memory_budget",
           "physical_memory", "human", "run_times", "MEMORY_SHARE", "PARTICLE_WORK"]

log = logging.getLogger("meanfield.study")

_FLOAT = 8  # bytes of a float64

#: Without ``MEANFIELD_MEMORY`` a study may hold this share of the machine's physical memory (the rest: the
#: interpreter, the libraries, the other processes of a shared machine)
MEMORY_SHARE = 0.5

#: A particle run of R × N × d floats (one state) holds, besides its output frames, at most this many copies of its
#: state. Measured as the growth of resident memory (VmHWM) over one state, at T = 2 and 10 output frames: drawing
#: the initial particles peaks at 2 (S¹⁵, uniform) to 9 (S¹, from a grid density) copies, a run's stages, fields
#: and pair sums at 6 (S¹⁵) to 10 (S¹) and 18 (S² with noise: the splitting's increments) beyond its frames; the
#: allocator need not return the first peak's memory before the second (glibc keeps freed blocks of tens of MB in
#: its heap: 23 copies through ``meanfield check`` on S¹, T = 2; 4 through check and run of a d = 128 phase diagram's
#: systems, whose statistics are taken inside the run). 32 bounds their sum with a margin
#: (tests/study/test_preflight.py asserts the bound on a measured check and run).
PARTICLE_WORK = 32


def human(nbytes: float) -> str:
    """``nbytes`` as 1.2 GB, 340 MB, 12 kB."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{int(nbytes)} B"


@dataclass
class Estimate:
    """Sizes of a study in bytes: ``result`` (the file, uncompressed) and ``largest`` (one array, with
    ``largest_what`` saying which); ``kept`` what the run keeps to the end (density frames, trajectories) and
    ``work`` the largest working set beside it (one particle run's, or one optimal transport's, ``work_what``
    saying which), so that ``peak`` = kept + work bounds the memory the run holds at once (:func:`check` compares it
    with the budget); ``ot_entries`` the largest exact-OT cost matrix (entries) and
    ``ot_where`` where it arises; ``notes`` what the estimate assumed; ``refinement`` the resolution refinement
    can reach (:func:`reach`) and ``kernel`` the degree the kernel needs at t = 0 (:func:`kernel_degree`), each a
    sentence or ""; ``runs`` what each run will step, (what, :class:`~meanfield.integrate.trackers.RunEstimate`)
    pairs (:func:`run_times`: filled by ``check(..., timing=True)``, empty otherwise)."""

    result: float = 0.0
    largest: float = 0.0
    largest_what: str = ""
    kept: float = 0.0
    work: float = 0.0
    work_what: str = ""
    ot_entries: int = 0
    ot_first: int = 0
    ot_where: str = ""
    notes: list = field(default_factory=list)
    refinement: str = ""
    kernel: str = ""
    runs: list = field(default_factory=list)

    def array(self, nbytes: float, what: str) -> None:
        if nbytes > self.largest:
            self.largest, self.largest_what = float(nbytes), what

    def working(self, nbytes: float, what: str) -> None:
        """A working set of ``nbytes`` held beside what is kept, while ``what`` runs (the largest is the peak's)."""
        if nbytes > self.work:
            self.work, self.work_what = float(nbytes), what

    @property
    def peak(self) -> float:
        """Bytes the run holds at once, at most: what it keeps plus its largest working set."""
        return self.kept + self.work

    @property
    def peak_what(self) -> str:
        """What the peak is made of, in words."""
        parts = [f"{human(self.kept)} kept (density frames, trajectories)"] if self.kept else []
        if self.work:
            parts.append(f"{human(self.work)} for {self.work_what}")
        return " and ".join(parts) or "nothing"


def _cap_grid(cfg, grid):
    """The grid refinement may reach: doublings of ``grid`` up to [time] max_n (the domain's cap by default)."""
    dom = domains.get(cfg["domain"])
    if dom.default_max_n is None or cfg["time"]["refine"] is False:
        return grid
    cap = cfg["time"]["max_n"] or dom.default_max_n
    factor = 1
    while grid.n * factor * 2 <= cap:
        factor *= 2
    return grid if factor == 1 else grid.refined(factor)


def reach(cfg: dict, grid=None) -> str:
    """The resolution refinement can reach, in words ("" without a grid): refinement doubles the resolution
    (n on the circle, lmax on S²), so it stops at the largest n·2^k <= max_n, which max_n itself need not be
    (lmax 24 and max_n = 128 reach lmax 96)."""
    grid = build.build_grid(cfg) if grid is None else grid
    if grid is None:
        return ""
    dom = domains.get(cfg["domain"])
    name = grid.resolution_name
    if dom.default_max_n is None:
        return f"{name} {grid.n} throughout (finite volumes are not refined)"
    if cfg["time"]["refine"] is False:
        return f"{name} {grid.n} throughout ([time] refine = false)"
    given = cfg["time"]["max_n"]
    cap = given or dom.default_max_n
    top = _cap_grid(cfg, grid).n
    where = f"max_n = {cap}" + ("" if given else " by default")
    if top == cap:
        return f"{name} {grid.n} → at most {top} ({where})"
    return (f"{name} {grid.n} → at most {top} ({where}: refinement doubles {name}, so it stops at the largest "
            f"{grid.n}·2^k <= {cap})")


def kernel_degree(cfg: dict, model=None, grid=None) -> str:
    """On S² with a kernel that is not zonal (general Q, K, V), the spherical-harmonic degree D the kernel
    e^{β⟨Qx,Ky⟩} needs at t = 0 for the moments strategy against the grid's lmax, in words; "" elsewhere.

    D is :func:`meanfield.domains.sphere.moments.moment_degree` of s = ‖βKᵀQ‖₂ (the largest over the heads): the
    truncation of the kernel's expansion at relative 1e-16. The moments path applies on a grid whose dealiased
    degree ⌈3 lmax/2⌉ reaches D (the quadrature sums, O(lmax⁴) per step, until then); the field then carries
    degrees well above those of the density, so such runs typically refine at t = 0 — to at least the first
    lmax·2^k whose dealiased degree reaches D, and up to the cap of :func:`reach`. An a priori estimate: nothing
    is solved."""
    grid = build.build_grid(cfg) if grid is None else grid
    if grid is None:  # particles only
        return ""
    model = build.build_model(cfg) if model is None else model
    if getattr(model, "time_dependent", False):
        model = model.at(0.0)
    attention = getattr(model, "attention", model)  # a Transformer's attention (None: feed-forward blocks only)
    if attention is None:
        return ""
    offered = grid.domain.grid_strategies(attention, grid)  # the domain's strategies and their refusals
    if "moments" not in offered or offered.get("spectral", "") is None:  # no moments path; a zonal kernel's spectral
        return ""
    general = [h for h in getattr(attention, "heads", ()) if getattr(h, "exp_kernel", False)
               and h.dim in (None, 3)]
    if not general:
        return ""
    norms = []
    for h in general:
        Q, K, _ = h.matrices(3)
        norms.append(float(np.linalg.norm(h.beta * (K.T @ Q), 2)))
    s = max(norms)
    L = grid.lmax
    need = moment_degree(s, L)
    have = dealiased_degree(L)
    cap = _cap_grid(cfg, grid).n
    head = f"the kernel e^(β⟨Qx,Ky⟩) (‖βKᵀQ‖₂ = {s:.3g}) needs degree ~{need} at t = 0 (moments strategy)"
    if need <= have:
        return f"{head}, within the grid's lmax {L} (dealiased degree {have}): the moments path applies from t = 0"
    first = L
    while dealiased_degree(first) < need:
        first *= 2
    if first > cap:
        stop = "is not refined" if cap == L else f"is refined to lmax {cap} at most"
        return (f"{head}, above the grid's lmax {L} (dealiased degree {have}), and the grid {stop}: the quadrature "
                f"sums (O(lmax⁴) per step) throughout, and a likely loss of resolution at t = 0 where the field's "
                f"degrees exceed lmax {cap}")
    return (f"{head}, above the grid's lmax {L} (dealiased degree {have}): the grid will refine at t = 0 to "
            f"lmax {first} at least (the first dealiased degree >= {need}), and may reach lmax {cap}; a grid of "
            f"lmax {first} from the start avoids the quadrature sums (O(lmax⁴) per step) until then")


def existing(path, overwrite: bool = False) -> str:
    """What a complete result at ``path`` means for a run, in words ("" where nothing is in the way): a check
    reports it rather than failing, and ``meanfield run`` refuses it without --overwrite."""
    status = status_of(path)
    if status is None or status in REPLACEABLE:
        return ""
    what = "a file that is not a results file" if status == "unreadable" else f"a complete result (status {status!r})"
    if overwrite:
        return f"{str(path)!r} holds {what}: --overwrite replaces it"
    return f"{str(path)!r} holds {what}: `meanfield run` would refuse it without --overwrite"


def solver(cfg: dict, model=None, grid=None, mu0=None) -> Prepared | None:
    """What :func:`meanfield.solve` will run for the study's density, asked of solve itself: its
    :func:`~meanfield.solvers.solve.prepare` (the checks and the plan ``solve`` runs first) of the study's model, initial
    density and [time] options (:func:`meanfield.study.build.solve_options`, which the run hands to ``solve``), so
    that a study ``meanfield check`` accepts is one whose solve starts. None where the study solves no density
    (particles only, or a [stationary] study). ``model``, ``grid``, ``mu0``: built here where not given.

    Raises
    ------
    StudyError
        Naming the [time] key solve refuses (e.g. "[time] method: 'dop853' cannot step the noise ...").
    """
    if cfg.get("stationary") is not None:
        return None
    grid = build.build_grid(cfg) if grid is None else grid
    if grid is None:
        return None
    model = build.build_model(cfg) if model is None else model
    mu0 = build.initial_density(cfg, grid) if mu0 is None else mu0
    t_eval = cfg["time"]["t_eval"]
    noise = build.common_noise(cfg, grid)  # [common_noise]: refused here with the grid's reason where it has none
    try:
        return prepare(model, mu0, (0.0, float(t_eval[-1])), t_eval=t_eval, common_noise=noise,
                       **build.solve_options(cfg))
    except (ValueError, TypeError, OverflowError) as exc:
        raise build.solver_error(exc, model) from None


def estimate(cfg: dict, grid=None, prepared: Prepared | None = None) -> Estimate:
    """The sizes of a checked study (:func:`meanfield.study.config.read`), without running it (``grid``: its
    grid, when the caller has built it; ``prepared``: its :func:`solver`, whose chain says whether Lagrangian
    frames are written; asked here where not given). A [stationary] study solves no density: its grid is where
    stability is checked, and its results are the branch and the particles' order parameters."""
    est = Estimate()
    T = len(cfg["time"]["t_eval"])
    grid = build.build_grid(cfg) if grid is None else grid
    nodes = nodes0 = 0
    if cfg.get("stationary") is not None:
        _estimate_stationary(cfg, est, T)
        return est
    if grid is not None:
        prepared = solver(cfg, grid=grid) if prepared is None else prepared
        nodes0 = int(np.prod(grid.shape))
        cap = _cap_grid(cfg, grid)
        nodes = int(np.prod(cap.shape))
        est.result += T * nodes * _FLOAT
        est.kept += T * nodes * _FLOAT
        est.array(T * nodes * _FLOAT, f"the density frames on {cap!r}")
        if cap is not grid:
            est.notes.append(f"density frames sized on the refinement cap {cap!r}")
        steps = 10**4  # the step history (time, mass, energy per accepted step): an assumed count
        est.result += 3 * steps * _FLOAT
        if prepared.representations != ("grid",):
            # Lagrangian frames: points, weight, log-density per point; the panels refine where the flow
            # map steepens, so the count is assumed, not bounded: 4 × the nodes (at least 512)
            points = max(4 * nodes, 512)
            frames = T * points * (cfg["dimension"] + 2) * _FLOAT
            est.result += frames
            est.kept += frames
            est.array(frames, f"the Lagrangian frames ({T} × {points} points, assumed)")
            est.notes.append(f"Lagrangian frames sized at {points} points each and the step history at {steps} "
                             "steps (assumed counts: both grow as the run needs)")
        est.refinement = reach(cfg, grid)
    pc = cfg["particles"]
    if pc is not None:
        R, d = pc["repeats"], cfg["dimension"]
        for n in pc["n"]:
            traj = R * T * n * d * _FLOAT
            if pc["save_positions"]:
                est.result += traj
            est.array(traj, f"the trajectories of N = {n} ({R} × {T} × {n} × {d})")
        # the runner keeps no positions where they are neither saved nor compared with a density on unit vectors:
        # the statistics are taken inside the run (runner._particles)
        history = not (domains.get(cfg["domain"]).particle_domain(d).unit_vectors and not pc["save_positions"]
                       and (grid is None or not cfg["distances"]["p"]))
        _hold_particles(est, pc["n"], R, T, d, kept=history, frames=history)
        est.result += 3 * len(pc["n"]) * R * T * _FLOAT  # pair fractions, energies
        ps = cfg["distances"]["p"]
        if ps:
            est.result += len(ps) * len(pc["n"]) * R * T * _FLOAT
            # exact OT (a dense cost matrix) unless the points have intrinsic dimension 1 (the circle, R¹:
            # validation.wasserstein's CDF and quantile formulas)
            exact = domains.get(cfg["domain"]).intrinsic_dimension(cfg["dimension"]) >= 2
            if exact and grid is not None:
                n = max(pc["n"])
                est.ot_entries, est.ot_first = nodes * n, nodes0 * n
                est.ot_where = (f"W_p between the density on {nodes} grid nodes and N = {n} particles"
                                if nodes == nodes0 else
                                f"W_p between the density on {nodes0} to {nodes} grid nodes (as the grid is refined) "
                                f"and N = {n} particles")
                # beyond EXACT_OT_MAX entries the measures are coarsened to it: the transport never grows past
                ot = min(est.ot_entries, EXACT_OT_MAX) * OT_BYTES_PER_ENTRY
                est.array(ot, f"the optimal transport ({est.ot_where})")
                est.working(ot, f"the optimal transport ({est.ot_where})")
    return est


def _hold_particles(est: Estimate, ns, R: int, T: int, d: int, kept: bool = True, frames: bool = True) -> None:
    """The particles' memory into ``est``: each N's trajectories (R × T × N × d floats) kept to the end where
    ``kept`` (the runner stores every N's for its statistics and the file), and beside them one run's working set — its own
    trajectories where it records ``frames`` and :data:`PARTICLE_WORK` copies of its state — at the largest N."""
    if not ns:  # [particles] n = []: no particle runs
        return
    if kept:
        est.kept += sum(R * T * n * d * _FLOAT for n in ns)
    n, T = max(ns), T if frames else 0
    est.working((T + PARTICLE_WORK) * R * n * d * _FLOAT,
                f"the run of N = {n} ({T} frames and {PARTICLE_WORK} working copies of {R} × {n} × {d} floats)")


def _estimate_stationary(cfg: dict, est: Estimate, T: int) -> None:
    """A [stationary] study's sizes into ``est``: the branch (r, D and the growth rate at each point), the states at
    each noise (at most one per point of the branch), the transition's points (D_c, the folds: at most one per point
    of the branch, the zonal degrees' bifurcation points: at most stationary.MAX_DEGREE), the particles' order parameters; the
    largest array is one N's trajectories (held while their order parameter is taken, never written)."""
    sc, pc = cfg["stationary"], cfg["particles"]
    est.result += (3 + 2 * len(sc["noise"])) * sc["points"] * _FLOAT
    est.result += (1 + 2 * sc["points"] + stationary.MAX_DEGREE) * _FLOAT
    est.array(3 * sc["points"] * _FLOAT, f"the branch ({sc['points']} points)")
    est.notes.append("a [stationary] study solves no density: [grid] is where the states' stability is checked")
    if pc is not None:
        R, d = pc["repeats"], cfg["dimension"]
        est.result += len(sc["noise"]) * len(pc["n"]) * R * _FLOAT
        for n in pc["n"]:
            est.array(R * T * n * d * _FLOAT, f"the trajectories of N = {n} ({R} × {T} × {n} × {d}; not written)")
        _hold_particles(est, pc["n"], R, T, d, kept=False)


def output(path, overwrite: bool, where: str) -> Path:
    """:func:`meanfield.core.io.check_output` as a study check: a path that cannot be written, or holds a complete
    result and ``overwrite`` is false, is a :class:`StudyError` prefixed by ``where`` (the key or option)."""
    try:
        return check_output(path, overwrite)
    except (ValueError, FileExistsError) as exc:
        raise StudyError(f"{where}: {exc}") from None


def physical_memory() -> float:
    """Bytes of physical memory of this machine (pages × page size; inf where the system does not say). A fixed
    figure: not what is free at the moment."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return float("inf")


_UNITS = {"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
          "tib": 2**40}


def memory_budget() -> tuple[float, str]:
    """The memory a study may hold at once, in bytes, and where the figure comes from, in words.

    ``MEANFIELD_MEMORY`` (bytes, or a number with a unit: "8GB", "512 MiB") where set — a batch job's allocation, a
    shared machine's share; else :data:`MEMORY_SHARE` of the machine's physical memory (:func:`physical_memory`).
    Never the memory free at the moment: a check against it passes or fails with whatever else runs beside it
    (issue 50: generated studies passed such a check on an idle CI machine and then held 21 GB).

    Raises
    ------
    StudyError
        ``MEANFIELD_MEMORY`` is not a positive size.
    """
    given = os.environ.get("MEANFIELD_MEMORY", "").strip()
    if given:
        match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?|[0-9]+\.)\s*([a-z]*)", given.lower())
        value = float(match.group(1)) * _UNITS[match.group(2)] if match and match.group(2) in _UNITS else -1.0
        if not value > 0:
            raise StudyError(f"MEANFIELD_MEMORY: a positive size in bytes, or with a unit (e.g. 8GB, 512MiB), "
                             f"got {given!r}")
        return value, f"MEANFIELD_MEMORY = {given}"
    total = physical_memory()
    return MEMORY_SHARE * total, (f"{MEMORY_SHARE:.0%} of this machine's {human(total)}; set MEANFIELD_MEMORY to "
                                  "change it")


def run_times(cfg: dict, model=None, grid=None, mu0=None, prepared: Prepared | None = None,
              budget: float = 0.05, notes: list | None = None) -> list[tuple[str, RunEstimate]]:
    """What the study's runs will step, each as (what, :class:`~meanfield.integrate.trackers.RunEstimate`): the
    density's solve (:func:`meanfield.solvers.solve.run_estimate` of its :func:`solver`: the count where [time] dt fixes the
    step, else the steps follow the solution) and the particles of each [particles] n
    (:func:`particles.system.run_estimate` of the run's own initial particles, step and noise stream: their RK4
    steps, or None for an adaptive method), each with the seconds of a step measured on a few first steps (about
    2·``budget`` seconds each, plus two steps: a study whose single step takes seconds takes as long to check).
    A [stationary] study's runs (one particle system per noise) are not estimated: an empty list.

    The timing is advisory: a run whose first steps fail is reported uncounted in time (a sentence in ``notes``),
    not refused here — the run says what failed; the checks of the particles' run itself (its step, strategy,
    sizes) are refused as the run would refuse them (``StudyError`` naming [particles])."""
    if cfg.get("stationary") is not None:
        return []
    notes = [] if notes is None else notes
    grid = build.build_grid(cfg) if grid is None else grid
    model = build.build_model(cfg) if model is None else model
    runs = []

    def timed(what, estimate):
        try:
            runs.append((what, estimate(True)))
        except Exception as exc:  # noqa: BLE001 (advisory: what the first steps raise, the run reports)
            runs.append((what, estimate(False)))
            notes.append(f"{what}: the first steps could not be timed ({type(exc).__name__}: {exc})")

    if grid is not None:
        mu0 = build.initial_density(cfg, grid) if mu0 is None else mu0
        prepared = solver(cfg, model, grid, mu0) if prepared is None else prepared
        timed("density", lambda timing: solve_estimate(prepared, timing, budget))
    pc = cfg["particles"]
    if pc is not None:
        t_eval = cfg["time"]["t_eval"]
        noise = build.common_noise(cfg)  # the run's common path (runner._particles)
        for n in pc["n"]:
            x0 = build.initial_particles(cfg, mu0, n)
            model_n = at_context(model, n)  # [model] beta_scaling: β_n of these N tokens (MATH.md §13)
            dt = build.particle_step(cfg, model_n)

            def estimate(timing, x0=x0, n=n, model_n=model_n, dt=dt):
                rng = np.random.default_rng([cfg["seed"], 4, n])  # the run's noise stream (runner._particles)
                return particle_estimate(model_n, x0, t_eval, method=pc["method"], dt=dt, rng=rng, timing=timing,
                                         budget=budget, common_noise=noise)

            try:
                estimate(False)  # the run's own checks, before any step
            except (ValueError, TypeError, OverflowError) as exc:
                raise StudyError(f"[particles]: {exc}") from None
            timed(f"particles N = {n} ({x0.shape[0]} × {n})", estimate)
    return runs


def check(cfg: dict, path=None, *, announce: bool = True, timing: bool = False,
          memory: float | None = None) -> Estimate:
    """Refuse, before any work, a study that cannot finish on this machine; return its :class:`Estimate`.

    With ``announce`` (what a run does) the degree the kernel needs at t = 0 (:func:`kernel_degree`) is logged, so
    that an expensive run says what the grid will do before it starts. With ``timing`` (``meanfield check``) the
    estimate's ``runs`` says what each run will step and how long a step takes (:func:`run_times`: a fraction of
    a second per run, measured). ``memory``: the budget in bytes (default :func:`memory_budget`), which the study's
    peak (:attr:`Estimate.peak`) must not exceed; it is checked before any particle is drawn or step timed.

    Raises
    ------
    StudyError
        One line: the initial density is not resolved on its grid, the density's solve refuses the study's
        model or [time] options (:func:`solver`: solve's own checks, which the run's solve repeats), the memory
        the run holds at once exceeds the budget, or the results exceed the free disk space of the directory of
        ``path``.
    """
    grid = build.build_grid(cfg)
    solves = grid is not None and cfg.get("stationary") is None  # a density solve ([stationary]: none)
    mu0 = build.initial_density(cfg, grid) if solves else None
    if mu0 is not None:  # the solver would refuse it at t = 0: say so before anything else runs
        reason = (build.build_monitor(cfg) or ResolutionMonitor()).check_state(grid, mu0.values)
        if reason is not None:
            raise StudyError(f"[grid]/[initial]: the initial density is not resolved: {reason}; use a finer grid"
                             + (" or loosen [time] tail_tol" if "tail" in reason else ""))
    model = build.build_model(cfg)
    build.common_noise(cfg, grid if solves else None)  # [common_noise] where the tokens and the grid take it
    prepared = solver(cfg, model, grid, mu0) if solves else None  # what the run's solve asks first
    if cfg.get("stationary") is not None:
        stationary.prepare(cfg, model, grid)  # what the bifurcation study asks first
        if cfg["particles"] is not None:
            stationary.initial_density(cfg)  # what its particles are drawn from
    if cfg["particles"] is not None:
        for n in cfg["particles"]["n"]:  # the particles' step, as the run forms it (β_n for each N)
            build.particle_step(cfg, at_context(model, n))
    est = estimate(cfg, grid, prepared)
    if solves:
        est.kernel = kernel_degree(cfg, model, grid)
        if est.kernel and announce:
            log.info("cost estimate: %s", est.kernel)
    if est.ot_entries > EXACT_OT_MAX:  # computed, not refused: coarsened to fit, each with its certified bound
        est.notes.append(f"distances beyond {EXACT_OT_MAX:.0e} cost entries (up to {est.ot_entries:.3g}) by coarsened "
                         "OT, each with its certified bound in `wasserstein_bound`")
    budget, source = memory_budget() if memory is None else (float(memory), "as given")
    if est.peak > budget:
        raise StudyError(f"the study needs about {human(est.peak)} of memory at once ({est.peak_what}), more than its "
                         f"budget of {human(budget)} ({source}); lower [particles] n / repeats or [time] frames")
    if path is not None and path is not False:
        parent = Path(path).parent if str(Path(path).parent) else Path(".")
        disk = float(shutil.disk_usage(parent).free)
        if est.result > disk:
            raise StudyError(f"the results need up to {human(est.result)} (uncompressed) but {str(parent)!r} has "
                             f"{human(disk)} free; free some space, choose another output path, or set "
                             "[particles] save_positions = false")
    if timing:
        est.runs = run_times(cfg, model, grid, mu0, prepared, notes=est.notes)
    return est


