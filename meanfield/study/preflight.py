"""Checks before the work: what a study will write and hold in memory, against what the machine has.

:func:`estimate` sizes a checked study from its tables alone (no solving): the
results file (density frames on the largest grid refinement may reach, the
particle trajectories, the distances) and the largest single array of the run
(the trajectories of one N, the optimal transport of the distances: exact up to
:data:`validation.wasserstein.EXACT_OT_MAX` cost entries, coarsened to that size beyond, with a certified
bound; the pairwise field sums are cut into row chunks and stay small). :func:`check` refuses, with one
line naming the estimate and the way out, a study whose largest array does not fit in the memory
available, or whose results do not fit on the disk of the output directory.

The estimates are upper bounds where the run can only shrink them (the grid
is sized at its refinement cap, files uncompressed).
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from validation.wasserstein import EXACT_OT_MAX, OT_BYTES_PER_ENTRY

from .. import domains
from ..io import check_output
from ..monitor import ResolutionMonitor
from . import build
from .config import StudyError

__all__ = ["Estimate", "estimate", "check", "output", "available_memory", "human"]

log = logging.getLogger("meanfield.study")

_FLOAT = 8  # bytes of a float64


def human(nbytes: float) -> str:
    """``nbytes`` as 1.2 GB, 340 MB, 12 kB."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{int(nbytes)} B"


@dataclass
class Estimate:
    """Sizes of a study in bytes: ``result`` (the file, uncompressed) and ``largest`` (one array, with
    ``largest_what`` saying which); ``ot_entries`` the largest exact-OT cost matrix (entries) and
    ``ot_where`` where it arises; ``notes`` what the estimate assumed."""

    result: float = 0.0
    largest: float = 0.0
    largest_what: str = ""
    ot_entries: int = 0
    ot_first: int = 0
    ot_where: str = ""
    notes: list = field(default_factory=list)

    def array(self, nbytes: float, what: str) -> None:
        if nbytes > self.largest:
            self.largest, self.largest_what = float(nbytes), what


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


def estimate(cfg: dict, grid=None) -> Estimate:
    """The sizes of a checked study (:func:`meanfield.study.config.read`), without running it (``grid``: its
    grid, when the caller has built it)."""
    est = Estimate()
    T = len(cfg["time"]["t_eval"])
    grid = build.build_grid(cfg) if grid is None else grid
    nodes = nodes0 = 0
    if grid is not None:
        nodes0 = int(np.prod(grid.shape))
        cap = _cap_grid(cfg, grid)
        nodes = int(np.prod(cap.shape))
        est.result += T * nodes * _FLOAT
        est.array(T * nodes * _FLOAT, f"the density frames on {cap!r}")
        if cap is not grid:
            est.notes.append(f"density frames sized on the refinement cap {cap!r}")
        steps = 10**4  # the step history (time, mass, energy per accepted step): an assumed count
        est.result += 3 * steps * _FLOAT
        if cfg["time"]["representation"] != "grid" and domains.get(cfg["domain"]).panels is not None:
            # Lagrangian frames: points, weight, log-density per point; the panels refine where the flow
            # map steepens, so the count is assumed, not bounded: 4 × the nodes (at least 512)
            points = max(4 * nodes, 512)
            frames = T * points * (cfg["dimension"] + 2) * _FLOAT
            est.result += frames
            est.array(frames, f"the Lagrangian frames ({T} × {points} points, assumed)")
            est.notes.append(f"Lagrangian frames sized at {points} points each and the step history at {steps} "
                             "steps (assumed counts: both grow as the run needs)")
    pc = cfg["particles"]
    if pc is not None:
        R, d = pc["repeats"], cfg["dimension"]
        for n in pc["n"]:
            traj = R * T * n * d * _FLOAT
            if pc["save_positions"]:
                est.result += traj
            est.array(traj, f"the trajectories of N = {n} ({R} × {T} × {n} × {d})")
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
                est.array(min(est.ot_entries, EXACT_OT_MAX) * OT_BYTES_PER_ENTRY, f"the optimal transport ({est.ot_where})")
    return est


def output(path, overwrite: bool, where: str) -> Path:
    """:func:`meanfield.io.check_output` as a study check: a path that cannot be written, or holds a complete
    result and ``overwrite`` is false, is a :class:`StudyError` prefixed by ``where`` (the key or option)."""
    try:
        return check_output(path, overwrite)
    except (ValueError, FileExistsError) as exc:
        raise StudyError(f"{where}: {exc}") from None


def available_memory() -> float:
    """Bytes of memory available to a new allocation (MemAvailable; psutil's figure; else inf)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import psutil

        return float(psutil.virtual_memory().available)
    except ImportError:
        return float("inf")


def check(cfg: dict, path=None) -> Estimate:
    """Refuse, before any work, a study that cannot finish on this machine; return its :class:`Estimate`.

    Raises
    ------
    StudyError
        One line: the initial density is not resolved on its grid, the largest array exceeds the memory
        available, or the results exceed the free disk space of the directory of ``path``.
    """
    grid = build.build_grid(cfg)
    est = estimate(cfg, grid)
    mu0 = None if grid is None else build.initial_density(cfg, grid)
    if mu0 is not None:  # the solver would refuse it at t = 0: say so before anything else runs
        reason = (build.build_monitor(cfg) or ResolutionMonitor()).check_state(grid, mu0.values)
        if reason is not None:
            raise StudyError(f"[grid]/[initial]: the initial density is not resolved: {reason}; use a finer grid"
                             + (" or loosen [time] tail_tol" if "tail" in reason else ""))
    if est.ot_entries > EXACT_OT_MAX:  # computed, not refused: coarsened to fit, each with its certified bound
        est.notes.append(f"distances beyond {EXACT_OT_MAX:.0e} cost entries (up to {est.ot_entries:.3g}) by coarsened "
                         "OT, each with its certified bound in `wasserstein_bound`")
    free = available_memory()
    if est.largest > free:
        raise StudyError(f"the study needs {human(est.largest)} for {est.largest_what}, more than the "
                         f"{human(free)} of memory available; lower [particles] n / repeats or [time] frames")
    if path is not None and path is not False:
        parent = Path(path).parent if str(Path(path).parent) else Path(".")
        disk = float(shutil.disk_usage(parent).free)
        if est.result > disk:
            raise StudyError(f"the results need up to {human(est.result)} (uncompressed) but {str(parent)!r} has "
                             f"{human(disk)} free; free some space, choose another output path, or set "
                             "[particles] save_positions = false")
    return est


