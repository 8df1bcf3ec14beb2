"""``meanfield run`` and ``meanfield sweep`` (see :mod:`meanfield.cli` for the exit codes)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _common(p):
    p.add_argument("study", type=Path, help="the study file (TOML; reference in the README, 'Study files')")
    p.add_argument("--output", type=Path, default=None, help="results file (.nc, or .zarr); default from the study")
    p.add_argument("--plot", action="store_true", help="write the figures next to the results file")
    p.add_argument("--quiet", action="store_true", help="no progress bars, warnings only")
    p.add_argument("--debug", action="store_true", help="debug logging, and tracebacks for errors")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="meanfield", description="Run study files and parameter sweeps.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run one study file", description="Run a study file: NetCDF results, figures.")
    _common(r)
    r.add_argument("--animation", choices=("gif", "mp4"), default=None, help="also write an animation")
    s = sub.add_parser(
        "sweep", help="run a study over a parameter grid (dask.distributed)",
        description="Run a study at every point of a parameter grid on dask.distributed and gather one Dataset. "
                    "KEY is beta, n, d, seed, lmax, repeats, t_end or section.key; SPEC is start:stop:num "
                    "(num values, both ends included) or a,b,c.")
    _common(s)
    s.add_argument("--over", action="append", required=True, metavar="KEY=SPEC",
                   help="a swept key, e.g. beta=0.1:9:90 (repeat --over for a product grid)")
    s.add_argument("--repeats", type=int, default=None, help="replace [particles] repeats")
    s.add_argument("--workers", type=int, default=None, help="processes of the local cluster (default: cores)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="a running dask scheduler (tcp://host:8786) instead of a local cluster")
    where.add_argument("--serial", action="store_true", help="no dask: run the tasks one after the other")
    return p


def main(argv) -> int:
    from ..cli import _logging

    parser = _parser()
    args = parser.parse_args(argv)  # exits with 2 and one line on bad arguments
    _logging(args)
    import matplotlib

    matplotlib.use("Agg")
    from . import StudyError, StudyInterrupted
    from .runner import run
    from .sweep import sweep

    progress = not args.quiet and sys.stderr.isatty()
    try:
        if args.command == "sweep" and args.workers is not None and args.workers < 1:
            raise StudyError(f"--workers: must be a positive integer, got {args.workers}")
        if args.command == "run":
            kwargs = {"output": args.output} if args.output is not None else {}
            ds = run(args.study, progress=progress, plot=True if args.plot else None, animation=args.animation,
                     **kwargs)
        else:
            scheduler = "serial" if args.serial else args.scheduler
            ds = sweep(args.study, args.over, repeats=args.repeats, scheduler=scheduler, workers=args.workers,
                       output=args.output, progress=progress, plot=args.plot)
    except StudyError as exc:
        if args.debug:
            raise
        print(f"meanfield: error: {exc}", file=sys.stderr)
        return 2
    except StudyInterrupted:
        print("meanfield: interrupted; the results computed so far were written", file=sys.stderr)
        return 130
    except OSError as exc:  # an output path that cannot be written
        if args.debug:
            raise
        print(f"meanfield: error: {exc}", file=sys.stderr)
        return 2
    _summary(ds)
    return 1 if ds.attrs.get("status") == "resolution lost" else 0


def _summary(ds) -> None:
    lines = [f"study        {ds.attrs.get('title', '')}: {ds.attrs.get('model', '')}",
             f"domain       {ds.attrs.get('domain')}, d = {ds.attrs.get('dimension')}",
             f"status       {ds.attrs.get('status')}" + (f" (t reached {ds.attrs['t_reached']:g})"
                                                       if "t_reached" in ds.attrs else "")]
    if "message" in ds.attrs and ds.attrs.get("status") != "success":
        lines.append(f"message      {ds.attrs['message']}")
    if "status" in ds and ds["status"].ndim:
        lost = int((ds["status"] != "success").sum())
        lines.append(f"tasks        {ds['status'].size} ({lost} not successful)")
    if "rate" in ds and ds["rate"].ndim == 2:
        for a, p in enumerate(ds["p"].values):
            r = ds["rate"].isel(p=a, time=-1).item()
            lo, hi = ds["rate_low"].isel(p=a, time=-1).item(), ds["rate_high"].isel(p=a, time=-1).item()
            lines.append(f"rate         W{p:g} ~ N^{r:.3f}, 95% interval [{lo:.3f}, {hi:.3f}] at t = "
                         f"{ds['time'][-1].item():g}")
    print("\n".join(lines))
