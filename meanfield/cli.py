"""The ``meanfield`` command: run study files, sweep them, or run the bundled demo.

``meanfield run STUDY.toml``
    Run a study file (:mod:`meanfield.study`), write its NetCDF results and,
    with ``--plot``, its figures.
``meanfield sweep STUDY.toml --over beta=0.1:9:90 [--repeats R]``
    Run it over a parameter grid on dask.distributed (a LocalCluster here, or
    ``--scheduler ADDRESS``) and gather one Dataset.
``meanfield plot RESULTS.nc [--format pdf] [--dpi 300]``
    Write the figures of a results file again beside it, in another format
    or resolution (``run`` and ``sweep`` take ``--format`` and ``--dpi`` too).
``meanfield check STUDY.toml``
    Validate it, build its model, grid and initial density, and estimate the
    size of its results and largest array against this machine (nothing run).
``meanfield keys [SECTION]``
    Print the study-file keys (all sections, or one: model, grid, time, …,
    ``top`` for the top level): type, default and meaning, from the schema.
``meanfield demo [options]`` (or plain ``meanfield [options]``)
    The bundled study (``meanfield/study/demos/circle.toml``, or ``sphere.toml``
    with ``--domain sphere``): SA with β = 4 from a slightly perturbed uniform
    density — the uniform state is unstable, a few clusters emerge
    (metastability, GLPR §6.3) and the grid is refined as they sharpen. The
    options replace keys of the study; it writes ``<domain>.nc``, a figure
    ``<domain>.png`` and the data as ``<domain>.npz`` into ``--output``.

Exit codes: 0 done; 1 the density lost resolution (results up to then are
written); 2 bad arguments or a bad study file (one line naming the problem;
the traceback with ``--debug``); 130 interrupted by Ctrl-C (what was computed
is written).

This is the application layer's front: it imports the study layer and is
imported by nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import tomllib
from importlib.resources import files
from pathlib import Path

import numpy as np

log = logging.getLogger("meanfield")

COMMANDS = ("run", "sweep", "check", "plot", "keys", "demo")


def configure_logging(quiet: bool, debug: bool) -> None:
    """The meanfield logger's level from --quiet/--debug; noisy libraries kept to warnings."""
    level = logging.DEBUG if debug else logging.WARNING if quiet else logging.INFO
    logging.basicConfig(level=level, format="%(message)s")  # no-op where the caller configured logging
    logging.getLogger("meanfield").setLevel(level)
    for noisy in ("distributed", "numba", "matplotlib", "h5py", "fsspec", "fontTools"):  # fontTools: PDF fonts
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


# --------------------------------------------------------------------- the parser
def _common(p):
    p.add_argument("--quiet", action="store_true", help="no progress bars, warnings only")
    p.add_argument("--debug", action="store_true", help="debug logging, and tracebacks for errors")


def _study_options(p):
    p.add_argument("study", type=Path, help="the study file (TOML; its keys: 'meanfield keys [SECTION]', which "
                   "prints them, as does the documentation site's page 'Study file reference')")
    p.add_argument("--output", type=Path, default=None, help="results file (.nc, or .zarr); default from the study")
    p.add_argument("--plot", action="store_true", help="write the figures next to the results file")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a complete result at the output path (otherwise refused before any work)")
    _figure_options(p)
    _common(p)


def _figure_options(p):
    """--format and --dpi: the figures' file format and resolution, replacing the study's [output] keys."""
    from .study.config import FIGURE_FORMATS, MAX_DPI, MIN_DPI

    p.add_argument("--format", choices=FIGURE_FORMATS, default=None,
                   help="the figures' file format: png, or vector pdf or svg for print (default the study's "
                        "[output] format, png); implies --plot")
    p.add_argument("--dpi", type=int, default=None,
                   help=f"dots per inch of PNG figures, of rasterised parts of vector ones and of the animation, "
                        f"{MIN_DPI} to {MAX_DPI} (default the study's [output] dpi, 150; print: 300); implies --plot")


def _print_options(args):
    """The context in which figures are written with the command line's --format and --dpi (checked: a dpi out
    of range is refused in one line naming --dpi)."""
    from .study import StudyError
    from .study.config import MAX_DPI, MIN_DPI
    from .study.figures import output_options

    if args.dpi is not None and not MIN_DPI <= args.dpi <= MAX_DPI:
        raise StudyError(f"--dpi: must be from {MIN_DPI} to {MAX_DPI} (300 is print quality), got {args.dpi}")
    return output_options(format=args.format, dpi=args.dpi)


def demos() -> tuple[str, ...]:
    """The domains with a bundled demo study (``meanfield/study/demos/<domain>.toml``), in the registry's order."""
    from .domains import DOMAINS

    here = Path(__file__).parent / "study" / "demos"
    return tuple(d.name for d in DOMAINS if (here / f"{d.name}.toml").is_file())


def _demo_options(p):
    names = demos()
    p.add_argument("--domain", choices=names, default=names[0],
                   help=f"where the tokens live: the bundled study {' or '.join(f'{n}.toml' for n in names)} "
                        f"(default {names[0]})")
    p.add_argument("--beta", type=float, default=None, help="inverse temperature β (default 4; β < 0, repulsive, on the circle only)")
    p.add_argument("--usa", action="store_true", help="unnormalised attention (USA) instead of SA")
    p.add_argument("--n", type=int, default=None, help="initial number of grid nodes on the circle (default 128)")
    p.add_argument("--lmax", type=int, default=None, help="initial spherical-harmonic degree on S² (default 24)")
    p.add_argument("--t-end", type=float, default=None, help="final time (default 7 on the circle, 3.5 on S²)")
    p.add_argument("--frames", type=int, default=None, help="number of output times (default 141 circle, 7 S²)")
    p.add_argument("--init", choices=("noise", "cauchy", "vonmises"), default="noise",
                   help="initial density: uniform + random low modes of amplitude --amplitude (default), the "
                        "wrapped Cauchy / Möbius law with |a| = --amplitude, or two von Mises bumps")
    p.add_argument("--amplitude", type=float, default=None,
                   help="size of the initial perturbation (default 0.05 circle, 1 S²)")
    p.add_argument("--seed", type=int, default=None, help="seed of the random initial perturbation (default 0)")
    p.add_argument("--method", choices=("rk4", "ssprk3", "rk45", "dop853"), default=None,
                   help="time integrator (default rk45)")
    p.add_argument("--no-refine", dest="refine", action="store_false",
                   help="stop with an error instead of refining when resolution is lost (refinement is on otherwise)")
    p.add_argument("--max-n", type=int, default=None,
                   help="largest n (circle, default 4096) or lmax (S², default 128) refinement may reach")
    p.add_argument("--output", type=Path, default=Path("meanfield-output"),
                   help="output directory (default meanfield-output)")
    p.add_argument("--plot", action="store_true", help="accepted for compatibility: the demo always draws its figure")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a complete result of an earlier demo in --output (otherwise refused before any work)")
    _common(p)


class _Parser(argparse.ArgumentParser):
    """argparse with "did you mean …?" after an invalid choice (a mistyped command or option value)."""

    def error(self, message):
        import difflib
        import re

        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.5)
            if close:
                message += f"; did you mean '{close[0]}'?"
        super().error(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="meanfield",
        description=(
            "The mean-field dynamics of self-attention, d/dt mu + div(mu X[mu]) = 0. Commands: 'run' a study "
            "file, 'sweep' it over parameters, 'check' it without running, 'plot' a results file's figures again "
            "(--format pdf --dpi 300 for print), 'keys' to list a study file's keys, or 'demo' (also plain "
            "'meanfield [options]', the options below) "
            "the bundled clustering example on the circle or S²."
        ),
        epilog="Exit codes: 0 done, 1 resolution lost (results written), 2 bad input, 130 interrupted.",
    )
    _demo_options(p)
    sub = p.add_subparsers(dest="command", metavar="{run,sweep,check,plot,keys,demo}", parser_class=_Parser)
    r = sub.add_parser("run", help="run one study file", description="Run a study file: NetCDF results, figures.")
    _study_options(r)
    r.add_argument("--animation", choices=("gif", "mp4"), default=None, help="also write an animation")
    s = sub.add_parser(
        "sweep", help="run a study over a parameter grid (dask.distributed)",
        description="Run a study at every point of a parameter grid on dask.distributed and gather one Dataset. "
                    "KEY is beta, n, d, seed, lmax, repeats, t_end or section.key; SPEC is start:stop:num "
                    "(num values, both ends included) or a,b,c.")
    _study_options(s)
    s.add_argument("--over", action="append", required=True, metavar="KEY=SPEC",
                   help="a swept key, e.g. beta=0.1:9:90 (repeat --over for a product grid)")
    s.add_argument("--repeats", type=int, default=None, help="replace [particles] repeats")
    s.add_argument("--workers", type=int, default=None, help="processes of the local cluster (default: cores)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="a running dask scheduler (tcp://host:8786) instead of a local cluster")
    where.add_argument("--serial", action="store_true", help="no dask: run the tasks one after the other")
    c = sub.add_parser("check", help="check a study file and estimate its size, without running it",
                       description="Validate a study file, build its model, grid and initial density, and print "
                                   "the estimated size of its results and the memory it holds at once against "
                                   "its memory budget (MEANFIELD_MEMORY, else half the machine's) and the disk, "
                                   "the resolution refinement can reach and (S², general Q, K, V) the degree the "
                                   "kernel needs at t = 0 (exit 0), or refuse it in one line (exit 2). "
                                   "A complete result at the output path is reported, not refused.")
    c.add_argument("study", type=Path, help="the study file (TOML; its keys: 'meanfield keys [SECTION]', which "
                   "prints them, as does the documentation site's page 'Study file reference')")
    c.add_argument("--output", type=Path, default=None, help="results file to check (default from the study)")
    c.add_argument("--overwrite", action="store_true",
                   help="as for run: say that a complete result there would be replaced")
    _common(c)
    f = sub.add_parser("plot", help="draw the figures of a results file again (another format, dpi)",
                       description="Write the figures of a results file (.nc or .zarr, from run or sweep) beside "
                                   "it, in the format and resolution asked: e.g. 'meanfield plot r.nc --format pdf "
                                   "--dpi 300' for print, without running the study again.")
    f.add_argument("results", type=Path, help="a results file written by 'meanfield run' or 'meanfield sweep'")
    f.add_argument("--animation", choices=("gif", "mp4"), default=None, help="also write an animation")
    _figure_options(f)
    _common(f)
    k = sub.add_parser("keys", help="print the keys a study file may set (type, default, meaning)",
                       description="Print the study-file reference: for each section (or the one named) its keys, "
                                   "type, default and meaning, as a Markdown table generated from the schema (the "
                                   "documentation site's page 'Study file reference' is the same text).")
    k.add_argument("section", nargs="?", default=None,
                   help="one section: top (the top-level keys), model, grid, initial, time, particles, output, …")
    _common(k)
    d = sub.add_parser("demo", help="the bundled clustering study (the default command)",
                       description="Run the bundled study on the circle or S², write results, a figure and NPZ.")
    _demo_options(d)
    return p


# --------------------------------------------------------------------- main
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)  # exits with 2 and one line on bad arguments
    configure_logging(args.quiet, args.debug)
    import matplotlib

    matplotlib.use("Agg")
    from contextlib import nullcontext

    from .core import checks, interrupts
    from .study import StudyError, StudyInterrupted

    try:
        # Ctrl-C and SIGTERM honoured at safe points (meanfield.core.interrupts); --quiet: no "auto" progress bars
        with interrupts.deferred(), checks.quiet() if args.quiet else nullcontext():
            if args.command == "check":
                code = _check(args)
            elif args.command in ("run", "sweep"):
                with _print_options(args):
                    code = _study_command(args)
            elif args.command == "keys":
                from .study.reference import reference_markdown

                code = _page(reference_markdown(args.section))
            elif args.command == "plot":
                with _print_options(args):
                    code = _plot(args)
            else:
                code = _demo(args)
            interrupts.check()  # a signal no loop honoured (during 'check', a summary): still exit 130
            return code
    except StudyError as exc:
        if args.debug:
            raise
        print(f"meanfield: error: {_naming_the_study(args, exc)}", file=sys.stderr)
        return 2
    except StudyInterrupted as exc:
        where = exc.path
        print("meanfield: interrupted; the results computed so far were written"
              + (f" to {where}" if where else ""), file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # before the study started, or a second Ctrl-C
        print("meanfield: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # an output path that cannot be written
        if args.debug:
            raise
        print(f"meanfield: error: {exc}", file=sys.stderr)
        return 2
    finally:
        interrupts.clear()  # honoured (the exit code says it)


def _page(text: str) -> int:
    """Print ``text``; a reader that stops early (``meanfield keys | head``) closes the pipe, which is no error."""
    import os

    try:
        print(text, flush=True)
    except BrokenPipeError:  # Python's advice: point stdout at devnull, so that the exit's flush is silent too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _naming_the_study(args, exc) -> str:
    """The message of a study error, prefixed by the study file where it does not name it already (an error found
    after the file was read — its initial law, its size — would otherwise name neither the study nor the file)."""
    study = getattr(args, "study", None)
    message = str(exc).replace("--overwrite (overwrite=True)", "--overwrite")  # the library's words for both callers
    if study is None or str(study) in message:
        return message
    return f"{study}: {message}"


def _check(args) -> int:
    """``meanfield check``: the study read, built and sized, nothing run. A complete result at the output path is
    reported (``run`` would need --overwrite), not refused: the check is of the study."""
    from .study import read
    from .study.build import build_grid, build_model
    from .study.preflight import check, existing, human, memory_budget, output

    cfg = read(args.study)
    # writable (a bad path is refused); what is there already is reported below
    path = output(cfg["output"]["path"] if args.output is None else args.output, True, "[output] path")
    # builds the grid and the initial density, checks them, and times a few first steps of each run
    est = check(cfg, path, announce=False, timing=True)
    model, grid = build_model(cfg), build_grid(cfg)
    lines = [f"study        {cfg['name']}: {' '.join(repr(model).split())}",
             f"grid         {grid!r}" if grid is not None else "grid         none (particles only)"]
    if est.refinement:
        lines.append(f"refinement   {est.refinement}")
    if est.kernel:
        lines.append(f"kernel       {est.kernel}")
    lines += [f"results      up to {human(est.result)} (uncompressed) at {path}",
              f"largest      {human(est.largest)}: {est.largest_what}" if est.largest else "largest      -"]
    budget, source = memory_budget()
    lines.append(f"memory       about {human(est.peak)} at once ({est.peak_what}); budget {human(budget)} ({source})")
    if est.ot_where:
        lines.append(f"exact OT     {est.ot_entries:.3g} cost entries at most ({est.ot_where})")
    lines += _run_time_lines(est.runs)
    lines += [f"note         {n}" for n in est.notes]
    there = existing(path, args.overwrite)
    if there:
        lines.append(f"output       {there}")
    lines.append("ok           the study can run here")
    print("\n".join(lines))
    return 0


def _run_time_lines(runs) -> list[str]:
    """``meanfield check``'s lines on the steps of each run (:func:`meanfield.study.preflight.run_times`) and the run
    time they add up to, measured on a few first steps: where a run's steps follow the solution its count is not
    known ahead, and the total says what it leaves out."""
    from .integrate.trackers import duration

    if not runs:
        return []
    lines = [f"steps        {what}: {est.summary()}" for what, est in runs]
    known = sum(est.seconds for _, est in runs if est.seconds is not None)
    open_ended = [what for what, est in runs if est.steps is None]
    total = f"about {duration(known)} of stepping" if len(open_ended) < len(runs) else ""
    if open_ended:
        total += (" for the fixed steps; " if total else "") + \
            f"{', '.join(open_ended)}: steps chosen as the run goes (a step's cost above)"
    return lines + [f"run time     {total}; distances, statistics and figures not counted"]


def _study_command(args) -> int:
    from .study import StudyError, run, sweep

    progress = not args.quiet and sys.stderr.isatty()
    if args.command == "sweep" and args.workers is not None and args.workers < 1:
        raise StudyError(f"--workers: must be a positive integer, got {args.workers}")
    plot = args.plot or args.format is not None or args.dpi is not None  # a format asked for is a figure asked for
    if args.command == "run":
        kwargs = {"output": args.output} if args.output is not None else {}
        # None, not False, without a terminal: bars there, periodic progress lines in a batch job's log
        ds = run(args.study, progress=False if args.quiet else None, plot=True if plot else None,
                 animation=args.animation,
                 overwrite=args.overwrite, **kwargs)
        from .study import read
        from .study.build import build_model

        cfg = read(args.study)
        direction = _energy_direction(build_model(cfg), cfg)
    else:
        scheduler = "serial" if args.serial else args.scheduler
        ds = sweep(args.study, args.over, repeats=args.repeats, scheduler=scheduler, workers=args.workers,
                   output=args.output, progress=progress, plot=plot, overwrite=args.overwrite)
        direction = None  # the model changes over the sweep
    _summary(ds, direction)
    return _exit_code(ds.attrs.get("status"))


def _plot(args) -> int:
    """``meanfield plot``: the figures of a results file written again beside it (format, dpi, animation)."""
    from .core.io import load
    from .study import StudyError
    from .study.figures import write_figures

    path = args.results
    if not path.exists():
        raise StudyError(f"{path}: no such results file")
    try:
        ds = load(path)
    except Exception as exc:  # not NetCDF / Zarr, or not readable: say so in one line
        raise StudyError(f"{path}: cannot read it as a results file ({type(exc).__name__}: {exc})") from None
    if "study" not in ds.attrs:
        raise StudyError(f"{path}: not a study's results file (no 'study' attribute): nothing to draw")
    written = write_figures(ds, path, plots=True, animation=args.animation)
    print("\n".join(f"wrote        {f}" for f in written) if written else "no figure applies to these results")
    return 0


def _energy_direction(model, cfg=None) -> float:
    """+1 (non-decreasing) or −1 (non-increasing) where E_β is the Lyapunov functional the solver monitors for
    ``model`` (a zonal kernel with V = cI, c ≠ 0, no noise, constant weights: GLPR Lemma 3.7), else 0; 0 too where
    the study ``cfg`` has a common noise whose Σ_k are not all skew (a shared linear layer moves E_β either way; a
    rotation leaves the zonal E_β unchanged, MATH.md §13)."""
    zonal = getattr(model, "zonal", None)
    if zonal is None or getattr(model, "time_dependent", False) or float(getattr(model, "noise", 0.0) or 0.0):
        return 0.0
    if cfg is not None and cfg.get("common_noise") is not None:
        from .study.build import common_sigmas

        S = common_sigmas(cfg)
        if not np.array_equal(S, -np.swapaxes(S, -1, -2)):
            return 0.0
    return float(np.sign(zonal.c))


def _energy_line(t, energy, direction) -> str | None:
    """E_β first → last, and whether it was monotone: in the monitored direction ``direction`` (±1) up to 1e-9 of
    its size, or, where it is not monitored (0), that it is not (None: no energy)."""
    t, energy = np.asarray(t, dtype=float), np.asarray(energy, dtype=float)
    done = np.isfinite(energy)
    if not np.any(done):
        return None
    t, e = t[done], energy[done]
    line = f"energy E_β   {e[0]:.10g} → {e[-1]:.10g}"
    if not direction:
        return line + " (not monitored: E_β is no Lyapunov functional of this model)"
    word = "non-decreasing" if direction > 0 else "non-increasing"
    step = -direction * np.diff(e)  # > 0 where it moved against the monitored direction
    worst = int(np.argmax(step)) if step.size else 0
    if not step.size or step[worst] <= 1e-9 * max(float(np.max(np.abs(e))), 1e-300):
        return line + f" (monotone: {word}, as monitored)"
    return line + (f" (NOT monotone: {word} expected, moved by {-direction * step[worst]:.3g} between t = "
                   f"{t[worst]:g} and {t[worst + 1]:g})")


def _summary(ds, direction: float | None = None) -> None:
    """The closing lines of ``run``/``sweep``: study, status, and (a run) steps, mass drift, energy, hand-overs."""
    lines = [f"study        {ds.attrs.get('title', '')}: {ds.attrs.get('model', '')}",
             f"domain       {ds.attrs.get('domain')}, d = {ds.attrs.get('dimension')}",
             f"status       {ds.attrs.get('status')}" + (f" (t reached {ds.attrs['t_reached']:g})"
                                                       if "t_reached" in ds.attrs else "")]
    if "message" in ds.attrs and ds.attrs.get("status") != "success":
        lines.append(f"message      {ds.attrs['message']}")
    if "nsteps" in ds.attrs:
        grid = (ds.attrs['grid'] + (f" → {ds.attrs['grid_final']}" if ds.attrs.get("grid_final", ds.attrs[
            "grid"]) != ds.attrs["grid"] else "")) if "grid" in ds.attrs else ""
        # the representations the steps were taken on, in order (grid, panels, nodes: a Lagrangian study may never
        # step on its grid, which then only holds the initial density and the frames' cell averages)
        rep = ds.attrs.get("representation")  # absent from results files written before it was recorded
        where = f" on {rep}" if rep else f" on {grid}" if grid else ""
        lines.append(f"steps        {ds.attrs['nsteps']} ({ds.attrs.get('nfev', '?')} field evaluations, "
                     f"{ds.attrs.get('solver_method', '?')}){where}")
        if rep and grid:
            lines.append(f"grid         {grid}")
    if "mass" in ds and ds["mass"].size:
        mass = ds["mass"].values
        finite = mass[np.isfinite(mass)]
        if finite.size:
            lines.append(f"mass         drift max |mass − 1| = {float(np.max(np.abs(finite - 1.0))):.1e}")
    if "energy" in ds and ds["energy"].dims == ("time",):
        line = _energy_line(ds["time"].values, ds["energy"].values, direction or 0.0)
        if line is not None:
            lines.append(line)
    if "branch_r" in ds:  # a [stationary] study: the transition, folds and bifurcation points
        from .study.stationary import summary_lines

        lines.extend(summary_lines(ds))
    if "handovers" in ds.attrs:
        handovers = json.loads(ds.attrs["handovers"])
        lines.append("hand-overs   " + ("none" if not handovers else "; ".join(
            f"{source} → {target} at t = {t:.6g} ({reason})" for t, source, target, reason in handovers)))
    if "status" in ds and ds["status"].ndim:
        lost = int((ds["status"] != "success").sum())
        lines.append(f"tasks        {ds['status'].size} ({lost} not successful)")
    if "rate" in ds and ds["rate"].ndim == 2:
        for a, p in enumerate(ds["p"].values):
            r = ds["rate"].isel(p=a, time=-1).item()
            lo, hi = ds["rate_low"].isel(p=a, time=-1).item(), ds["rate_high"].isel(p=a, time=-1).item()
            scaled = f"W{p:g}/√(log N)" if "log N" in ds["rate"].attrs.get("law", "") else f"W{p:g}"
            lines.append(f"rate         {scaled} ~ N^{r:.3f}, 95% interval [{lo:.3f}, {hi:.3f}] at t = "
                         f"{ds['time'][-1].item():g}")
    print("\n".join(lines))


# --------------------------------------------------------------------- the demo
def demo_study(args) -> dict:
    """The bundled study of ``args.domain`` with the options given replacing its keys (a dict of tables).

    The demo file's ``[demo]`` table (not a study key) holds the other initial laws of ``--init``:
    ``cauchy_direction`` (the Poisson-kernel law of a = ``--amplitude`` × it) and ``vonmises`` (an [initial]
    table). The grid's resolution is the option named after the domain's required grid parameter
    (``--n``, ``--lmax``)."""
    from .domains import get

    study = tomllib.loads(files("meanfield.study").joinpath("demos", f"{args.domain}.toml").read_text())
    demo = study.pop("demo", {})
    domain = get(study["domain"])
    model, grid, time_, initial = study["model"], study["grid"], study["time"], study["initial"]
    resolution = [(grid, key, getattr(args, key, None)) for key, required in domain.grid_parameters.items()
                  if required]
    for table, key, value in ((model, "beta", args.beta), *resolution,
                              (time_, "t_end", args.t_end), (time_, "frames", args.frames),
                              (time_, "method", args.method), (time_, "max_n", args.max_n), (study, "seed", args.seed)):
        if value is not None:
            table[key] = value
    model["normalized"] = not args.usa
    time_["refine"] = args.refine
    if args.amplitude is not None:
        initial["amplitude"] = args.amplitude
    amplitude = initial["amplitude"]
    if args.init == "cauchy":
        study["initial"] = {"kind": "poisson", "a": [amplitude * c for c in demo["cauchy_direction"]]}
    elif args.init == "vonmises":
        study["initial"] = dict(demo["vonmises"])
    study["output"] = {"path": str(args.output / f"{args.domain}.nc")}
    return study


def _one_title(fig):
    """``fig`` with its title said once: an axes title that repeats the figure's suptitle keeps only what it adds
    (the demo's overview drew the study's title above the figure and again above its heat map)."""
    top = fig.get_suptitle().strip()
    if not top:
        return fig
    for ax in fig.axes:
        title = ax.get_title()
        if title.strip().startswith(top):
            ax.set_title(title.strip()[len(top):].strip(" \n·:"), fontsize=ax.title.get_fontsize())
    return fig


# The demo's options by the study keys they set (demo_study): the demo's errors name the option the user typed,
# not a key of a study file the user never wrote.
DEMO_FLAGS = {"[grid] n": "--n", "[grid] lmax": "--lmax", "[model] beta": "--beta", "[model] normalized": "--usa",
              "[time] t_end": "--t-end", "[time] frames": "--frames", "[time] method": "--method",
              "[time] max_n": "--max-n", "[time] refine": "--no-refine", "[output] path": "--output",
              "[initial] amplitude": "--amplitude",
              "[initial] a": "--amplitude (--init cauchy: a = --amplitude × the demo's direction)", "seed": "--seed"}
# Phrases of study errors that name what the demo has no option for, in the demo's words (after DEMO_FLAGS).
DEMO_PHRASES = (("[initial]: `amplitude`", "--amplitude"), ("another rng", "another --seed"),
                ("[grid]/[initial]", "--n/--lmax or --init/--amplitude"),
                ("use a finer grid", "use a finer grid (--n, --lmax)"), (" or loosen [time] tail_tol", ""),
                ("[initial]", "--init/--amplitude"), (" with a [grid] on domain", " with --domain"),
                (" (drop [grid] to run the particles alone)", " (--domain circle takes it)"))


def demo_message(message: str) -> str:
    """A study error raised while the demo builds, checks or runs its study, in the demo's options: a key the demo
    sets (:data:`DEMO_FLAGS`), ``[grid] n: must be >= 4, got 3``, is ``--n: must be >= 4, got 3``; phrases naming
    what no option sets (:data:`DEMO_PHRASES`; ``modes = 6``, the demo file's) in the demo's words."""
    import re

    def flag(m):
        return DEMO_FLAGS.get(m[1], m[0])

    message = re.sub(r"(\[\w+\] \w+|^\w+)(?=[: ])", flag, message)  # "[section] key" or a leading top-level key
    modes = re.search(r"`modes` = (\d+)", message)
    if modes:
        message = message.replace(f"with `modes` = {modes[1]}", f"with the demo's {modes[1]} random modes")
        message = message.replace("amplitude < 1/modes", f"--amplitude < 1/{modes[1]}")
    for phrase, said in DEMO_PHRASES:
        message = message.replace(phrase, said)
    return message


def _demo(args) -> int:
    """``meanfield demo``: the bundled study validated and checked (its options, its output directory) before the
    directory is created or anything is solved; its errors name the options (:func:`demo_message`)."""
    from .study import StudyError

    try:
        return _run_demo(args)
    except StudyError as exc:
        raise StudyError(demo_message(str(exc))) from None


def _run_demo(args) -> int:
    from .core.io import beside, save
    from .study import read, run_config
    from .study.build import build_grid, build_model
    from .study.figures import plot_overview
    from .study.preflight import check, output

    study = demo_study(args)
    target = str(Path.cwd() / study["output"]["path"])  # where read() puts a relative path
    created = not args.output.is_dir()
    if created:  # checked as a file of the working directory: the directory is made once all else is checked
        study["output"]["path"] = Path(target).name
    cfg = read(study)
    cfg["output"]["path"] = target
    check(cfg, None, announce=False)  # the grid, initial density and solver options (--max-n …) before any work
    if not created:
        output(cfg["output"]["path"], args.overwrite, "--output")  # a complete result there: refused, nothing made
    args.output.mkdir(parents=True, exist_ok=True)
    output(cfg["output"]["path"], args.overwrite, "--output")
    grid0 = build_grid(cfg)
    m = cfg["model"]
    stem = Path(cfg["output"]["path"]).stem
    log.info("demo: %s with β = %g on the %s (%r), t in [0, %g]; writing %s.nc, %s.png and %s.npz into %s%s "
             "(--output chooses the directory)", "SA" if m["normalized"] else "USA", m["beta"], cfg["domain"], grid0,
             cfg["time"]["t_end"], stem, stem, stem, f"{args.output}/", " (created)" if created else "")
    start = time.perf_counter()
    ds, interrupted = run_config(cfg, progress=False if args.quiet else None)
    elapsed = time.perf_counter() - start
    path = beside(cfg["output"]["path"], ds)
    save(ds, path)
    png = path.with_suffix(".png")
    _one_title(plot_overview(ds)).savefig(png, dpi=120)
    npz = path.with_suffix(".npz")
    space = {k: ds[k].values for k in ds["density"].dims[1:]}
    np.savez(npz, t=ds["time"].values, rho=ds["density"].values, mass=ds["mass"].values,
             energy=ds["energy"].values if "energy" in ds else np.full(ds.sizes["time"], np.nan), **space)
    if interrupted:
        from .study import StudyInterrupted

        raise StudyInterrupted(ds, path)
    done = np.isfinite(ds["mass"].values)
    rho, mass = ds["density"].values[done], ds["mass"].values[done]
    refinements = len(json.loads(ds.attrs.get("refinements", "[]")))
    name = grid0.resolution_name
    lines = [
        f"model        {ds.attrs['model']} ({ds.attrs['solver_strategy']} strategy)",
        f"grid         {name} = {ds.attrs['resolution']} → {ds.attrs['resolution_final']}"
        + (f" ({refinements} refinement{'s' if refinements > 1 else ''})" if refinements else ""),
        f"time         reached t = {ds.attrs['t_reached']:g} of {cfg['time']['t_end']:g} in {ds.attrs['nsteps']} steps "
        f"({ds.attrs['nfev']} field evaluations, {elapsed:.2f} s, {ds.attrs['solver_method']})",
        f"mass         {mass[0]:.15f} → {mass[-1]:.15f} (drift max |mass − 1| = {np.max(np.abs(mass - 1.0)):.1e})",
        f"max density  {np.max(rho[0]):.4g} → {np.max(rho[-1]):.4g}",
    ]
    if "energy" in ds:
        line = _energy_line(ds["time"].values, ds["energy"].values, _energy_direction(build_model(cfg), cfg))
        if line is not None:
            lines.append(line)
    lines.append(f"wrote        {png}, {path} and {npz}")
    print("\n".join(lines))
    return _exit_code(ds.attrs["status"])


def _exit_code(status) -> int:
    """1 where the density's solve stopped short (resolution lost, or failed: e.g. mass left a box of R^d past its
    monitor's ``outflow_stop``), else 0 (success, an event, or no density)."""
    return 1 if status in ("resolution lost", "failed") else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
