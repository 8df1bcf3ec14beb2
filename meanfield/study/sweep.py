"""Sweeps: one study run over a grid of parameter values, on dask.distributed.

Each point of the grid (the Cartesian product of the ``over`` values) is one
task: the study with those keys replaced, run by :func:`run_config` on a
worker. Seeds are part of the study (streams ``[seed, ...]``, see
:mod:`meanfield.study.build`), never of the worker, so a sweep gives the same
numbers on a cluster as run serially, in any order. Every task returns the
study's time series (mass, energy, pair fractions, particle energies,
distances, rates) and its solver status; grid fields and trajectories stay on
the worker (run a single point with ``meanfield run`` to keep them). The
results are gathered into one Dataset with a dimension per swept key
(``beta`` for ``model.beta``, ``n_particles`` for ``particles.n``, ...).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm.auto import tqdm

from ..core import interrupts
from ..core.io import prepare
from . import config, preflight
from .build import build_model
from .runner import StudyInterrupted, run_config, show_progress, versions, write_results

__all__ = ["sweep", "dimension_name"]

log = logging.getLogger("meanfield.study")

_DROP_PREFIX = ("positions_", "step_")
_TASK_ATTRS = ("status", "message", "t_reached", "nfev", "nsteps")
_QUIET_WORKERS = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
                  "distributed.worker.memory.monitor-interval": "2s",
                  "distributed.admin.system-monitor.interval": "5s",
                  "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1,
                                                          "OPENBLAS_NUM_THREADS": 1}}


def dimension_name(dotted: str) -> str:
    """The Dataset dimension of a swept key: ``model.beta`` → ``beta``, ``particles.n`` → ``n_particles``."""
    return "n_particles" if dotted == "particles.n" else dotted.rpartition(".")[2]


def _summary(ds: xr.Dataset) -> xr.Dataset:
    """Drop grid fields and trajectories; turn the per-run attributes into variables."""
    drop = [v for v in ds.data_vars if v.startswith(("density",) + _DROP_PREFIX)]
    out = ds.drop_vars(drop)
    used = {d for v in out.data_vars.values() for d in v.dims}
    out = out.drop_vars([c for c in out.coords if not set(out[c].dims) <= used])
    for key in _TASK_ATTRS:
        if key in ds.attrs:
            out[key] = ((), ds.attrs[key])
    out.attrs = {}
    return out


def _task(cfg: dict) -> xr.Dataset:
    """One sweep point (runs on a worker)."""
    try:  # one numba thread per dask thread: the workers already use the cores
        from distributed import get_worker

        nthreads = get_worker().state.nthreads
        import numba

        numba.set_num_threads(max(1, min(nthreads, numba.config.NUMBA_NUM_THREADS)))
    except (ImportError, ValueError, AttributeError):
        pass
    ds, _ = run_config(cfg, progress=False)
    return _summary(ds)


def _points(over) -> tuple[list[str], list[list]]:
    if isinstance(over, dict):
        keys, values = [], []
        for k, v in over.items():
            section, key = config.resolve_key(k)
            keys.append(f"{section}.{key}" if section else key)
            values.append(list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v])
    else:
        parsed = [config.parse_over(s) for s in ([over] if isinstance(over, str) else over)]
        keys, values = [k for k, _ in parsed], [v for _, v in parsed]
    if not keys:
        raise config.StudyError("--over: give at least one key=values to sweep")
    if len(set(keys)) != len(keys):
        raise config.StudyError(f"--over: a key is swept twice ({keys})")
    for k, v in zip(keys, values):
        if not v:
            raise config.StudyError(f"--over {k}: no values")
    return keys, values


@contextlib.contextmanager
def _connect(scheduler, workers):
    """A distributed Client: to the scheduler at ``scheduler``, or to a LocalCluster of ``workers`` processes.

    Yields ``(client, cluster)`` (``cluster`` None for a running scheduler) and
    closes both on exit (the worker processes are stopped, running tasks with them).
    """
    from distributed import Client, LocalCluster

    # distributed sets its own loggers to INFO on import; keep them to warnings unless debugging
    if logging.getLogger().level > logging.DEBUG:
        for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.core",
                     "distributed.worker", "distributed.http.proxy"):
            logging.getLogger(name).setLevel(logging.WARNING)
    if scheduler is not None:
        with Client(scheduler) as client:
            yield client, None
        return
    import dask

    n = workers or os.cpu_count() or 1
    # the workers run long numerical tasks: no statistical profiler (it samples the task thread's
    # stack every 10 ms, holding the GIL), slower monitoring ticks, and glibc's own malloc trimming
    # (dask sets MALLOC_TRIM_THRESHOLD_, which also fixes the mmap threshold, so every array of more
    # than 128 KiB is mapped and unmapped afresh: page faults on every FFT buffer)
    # worker logs at CRITICAL only: a task's error reaches the client through its result, and a
    # cluster stopped by Ctrl-C while its workers compute makes them log heartbeat tracebacks
    with dask.config.set(_QUIET_WORKERS):
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=logging.CRITICAL)
    with cluster, Client(cluster) as client:
        yield client, cluster


def sweep(study, over, *, repeats: int | None = None, scheduler: str | None = None, workers: int | None = None,
          output=None, progress: bool | None = None, plot: bool = False, overwrite: bool = False) -> xr.Dataset:
    """Run a study at every point of a parameter grid and gather the results.

    Parameters
    ----------
    study : path or dict
        The study file (or its tables).
    over : dict or sequence of str
        ``{"beta": [0.5, 1, 2]}`` or ``["beta=0.1:9:90", "seed=0,1"]``
        (``start:stop:num`` includes both ends). Keys: ``beta``, ``n``
        (particle number), ``d`` (dimension), ``seed``, ``lmax``, ``repeats``,
        ``t_end`` or any ``section.key`` of the study file.
    repeats : int, optional
        Replace ``[particles] repeats``.
    scheduler : str, optional
        ``None``: a LocalCluster of ``workers`` one-thread worker processes
        on this machine (default: one per core); ``"serial"``: no dask, one task after the
        other in this process; otherwise the address of a running scheduler
        (``tcp://host:8786``).
    workers : int, optional
        Processes of the LocalCluster.
    output : path or False, optional
        Results file; default ``<study name>-sweep-<keys>-<digest>.nc`` next to [output] path,
        the digest (8 hex digits) that of the swept values, the repeats and the study, so
        different sweeps never share a file.
    progress : bool, optional
        A progress bar over the tasks (default: when stderr is a terminal).
    plot : bool
        Write the sweep's figures next to the results file.
    overwrite : bool
        Replace a complete result at the output path (else refused before any
        work; an interrupted sweep never replaces one, see :func:`meanfield.study.run`).

    Returns
    -------
    xarray.Dataset
        One dimension per swept key, plus ``status``/``t_reached``/... per point.
    """
    raw, base, name = config.read_raw(study)
    keys, values = _points(over)
    if repeats is not None:
        if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
            raise config.StudyError(f"--repeats: must be a positive integer, got {repeats!r}")
        raw = config.override(raw, "particles.repeats", repeats)
    grid = list(itertools.product(*values))
    cfgs = []
    for point in grid:
        r = raw
        for k, v in zip(keys, point):
            r = config.override(r, k, v)
        cfgs.append(config.validate(r, base=base, name=name))  # every point checked before any runs
    base_cfg = cfgs[0]
    path = None
    if output is not False:
        path = Path(output) if output is not None else Path(base_cfg["output"]["path"]).with_name(
            default_name(base_cfg["name"], keys, values, repeats, raw))
        path = preflight.output(path, overwrite, "--output")
    for cfg in cfgs:  # every point must fit this machine (a scheduler elsewhere has its own memory)
        preflight.check(cfg, None)
    log.info("sweep of %s: %d tasks over %s", base_cfg["name"], len(cfgs), ", ".join(keys))
    progress = show_progress(progress)

    results: list = [None] * len(cfgs)
    if path is not None:
        prepare(path)  # the write's first-use imports now, not after a Ctrl-C
    with interrupts.deferred():
        interrupted = _run_tasks(cfgs, results, scheduler, workers, progress)
        ds = _gather(results, keys, values, grid)
        ds.attrs.update({"title": f"{base_cfg['name']} sweep", "study": config.to_json(base_cfg),
                         "domain": base_cfg["domain"], "dimension": base_cfg["dimension"],
                         "model": " ".join(repr(build_model(base_cfg)).split()) + f", swept over {', '.join(keys)}",
                         "sweep": json.dumps({"over": dict(zip(keys, values)), "repeats": repeats,
                                              "scheduler": scheduler or "local", "tasks": len(cfgs)}),
                         "sweep_dims": " ".join(dimension_name(k) for k in keys), **versions(),
                         "status": "interrupted" if interrupted else "success"})
        target = None if path is None else write_results(ds, path, plots=plot)
        interrupted = interrupted or interrupts.pending()
        interrupts.clear()
    if interrupted:
        raise StudyInterrupted(ds, target)
    return ds


def default_name(name, keys, values, repeats, raw) -> str:
    """``<name>-sweep-<keys>-<digest>.nc``: the swept keys, and 8 hex digits of a hash of the swept values,
    the repeats and the study's tables, so that two different sweeps of one study never share a file."""
    import hashlib

    spec = json.dumps({"over": dict(zip(keys, [list(map(str, v)) for v in values])), "repeats": repeats,
                       "study": raw}, sort_keys=True, default=str)
    digest = hashlib.sha256(spec.encode()).hexdigest()[:8]
    return f"{name}-sweep-{'-'.join(dimension_name(k) for k in keys)}-{digest}.nc"


def _run_tasks(cfgs, results, scheduler, workers, progress) -> bool:
    """Run the tasks into ``results`` (in place); True if interrupted (the finished tasks are kept).

    Serial: a task interrupted half-way keeps its partial result. Distributed: the main process polls
    for a deferred Ctrl-C (:mod:`meanfield.core.interrupts`) every half second while it waits; leaving the
    cluster's context then stops the worker processes with their running tasks.
    """
    if scheduler == "serial":
        try:
            for i, cfg in enumerate(tqdm(cfgs, desc="sweep", disable=not progress)):
                interrupts.check()
                results[i] = _task(cfg)
            interrupts.check()  # the last task may have stopped on the signal
        except KeyboardInterrupt:
            return True
        return False
    from distributed import wait

    try:
        with _connect(scheduler, workers) as (client, _), \
                tqdm(total=len(cfgs), desc="sweep", disable=not progress) as bar:
            futures = client.map(_task, cfgs, pure=False)
            index = {f.key: i for i, f in enumerate(futures)}
            remaining = list(futures)
            while remaining:
                interrupts.check()
                try:
                    done, not_done = wait(remaining, timeout=0.5, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    continue
                for fut in done:
                    results[index[fut.key]] = fut.result()
                    bar.update()
                remaining = list(not_done)
    except KeyboardInterrupt:
        return True
    return False


def _gather(results, keys, values, grid) -> xr.Dataset:
    done = [r for r in results if r is not None]
    if not done:  # interrupted before any task finished: the grid, every point "not run"
        dims = [dimension_name(k) for k in keys]
        return xr.Dataset({"status": (dims, np.full([len(v) for v in values], "not run", dtype=object))},
                          coords={d: v for d, v in zip(dims, values)})
    template = done[0]
    items = []
    for res, point in zip(results, grid):
        if res is None:  # not run (interrupted): NaN, status "not run"
            res = xr.Dataset({k: xr.full_like(v, np.nan, dtype=float) if v.dtype.kind in "fiu" else xr.full_like(v, "")
                              for k, v in template.data_vars.items()}, coords=template.coords)
            res["status"] = ((), "not run")
        for k, v in zip(keys, point):
            if k == "particles.n":
                continue  # the run already has the dimension n_particles, of length 1
            res = res.expand_dims({dimension_name(k): [v]})
        items.append(res)

    def nest(flat, shape):
        if len(shape) == 1:
            return flat
        step = len(flat) // shape[0]
        return [nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]

    nested = nest(items, [len(v) for v in values])
    # "minimal": a sweep over particles.n concatenates the particle variables along n_particles and
    # keeps one copy of the density variables (equal across N: same seed, same density, checked)
    return xr.combine_nested(nested, concat_dim=[dimension_name(k) for k in keys], data_vars="minimal",
                             coords="minimal", compat="equals", join="outer", combine_attrs="drop")
