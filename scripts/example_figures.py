"""Every example study's figures for print (this tree) beside the figures of an earlier revision.

For each ``examples/<name>.toml`` (or those named by ``--only``):

After
    This tree runs the study with its figures as PDF,
    ``meanfield run examples/<name>.toml --output OUT/after/<name>.nc --format pdf --dpi 300 --overwrite``,
    then draws the same results file again as PNG at 300 dpi,
    ``meanfield plot OUT/after/<name>.nc --format png --dpi 300``. The run's and the redraw's wall times are
    recorded.
Before
    The revision (``--revision``, default ``54fc58a^``, the tree before "Figures for print", whose only output
    was PNG at a fixed 110 dpi) is checked out with ``git worktree add --detach`` into a temporary directory
    (the working tree of this checkout is not touched) and imported from there, in a subprocess whose
    ``PYTHONPATH`` is the worktree and whose editable-install finder is removed from ``sys.meta_path`` (as
    ``benchmarks/bench_revisions.py`` does), so every ``meanfield`` module is the revision's own. First the
    cheap way: the revision's ``meanfield.study.figures.write_figures`` draws this tree's results file
    (``redrawn``). Where that fails, the revision runs its own copy of the example with its own command line
    (``meanfield run … --plot``; ``re-run``). An example the revision does not have, or that neither way
    draws, gets no before figures (``none``) and the reason.

``OUT/index.md`` holds one row per example: the wall times, the after files (PDF, PNG), the before files and
where they came from, and notes (failures with a one-line reason; the full output is in ``OUT/logs``).

Run (the examples take about 25 minutes on two cores; metastability and metastability_sphere about five
each, phase_diagram_d128, layers and compare_sphere one to two)::

    python scripts/example_figures.py [--out DIR] [--only a,b] [--revision REV | --no-before]

On a shared machine, one core at the lowest priority::

    nice -n 19 env OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        python scripts/example_figures.py

With ``--only``, the rows of the other examples already in ``OUT/index.md`` are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Imports from the tree at ``sys.argv[1]`` only (the editable install's finder removed), checks that it did
_OLD_IMPORTS = r"""
import sys
tree = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path.insert(0, tree)
import matplotlib
matplotlib.use("Agg")
import meanfield
assert meanfield.__file__.startswith(tree), f"meanfield imported from {meanfield.__file__}, not {tree}"
"""

#: The revision's figures of a results file: ``python -c OLD_REDRAW TREE RESULTS TARGET``
OLD_REDRAW = _OLD_IMPORTS + r"""
from meanfield.study import figures
results, target = sys.argv[1:3]
try:
    from meanfield import load
except ImportError:
    import xarray as xr

    def load(path):
        return xr.load_dataset(path, engine="h5netcdf")
ds = load(results)
for f in figures.write_figures(ds, target):
    print(f)
"""

#: The revision's command line: ``python -c OLD_CLI TREE ARGS...``
OLD_CLI = _OLD_IMPORTS + r"""
from meanfield import cli
sys.exit(cli.main(sys.argv[1:]))
"""


def _environment(tree: Path | None = None) -> dict:
    """The environment of a subprocess: ``PYTHONPATH`` the revision's tree (before) or unchanged (after)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _last_line(log: Path) -> str:
    """The last non-empty line of a log: the one-line reason of a failure."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return (lines[-1] if lines else "(no output)").replace("|", "\\|")[:300]


def _run(command: list[str], cwd: Path, log: Path, env: dict, timeout: float) -> tuple[bool, float, str]:
    """Run ``command``, its output to ``log``.

    Returns
    -------
    ok : bool
        Whether it exited with 0.
    seconds : float
        Its wall time.
    reason : str
        Empty if ok, else the exit status and the log's last line.
    """
    start = time.perf_counter()
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(log, "w") as out:
            out.write("$ " + " ".join(command) + "\n")
            out.flush()
            code = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return False, time.perf_counter() - start, f"over {timeout:.0f} s"
    seconds = time.perf_counter() - start
    if code == 0:
        return True, seconds, ""
    return False, seconds, f"exit {code}: {_last_line(log)}"


def _figures(folder: Path, name: str, suffix: str) -> list[str]:
    """The figure files ``<name>-*.<suffix>`` in ``folder``."""
    return sorted(p.name for p in folder.glob(f"{name}-*.{suffix}"))


def after(name: str, out: Path, logs: Path, timeout: float) -> dict:
    """This tree: the run with PDF figures, then the same results drawn as PNG at 300 dpi.

    Parameters
    ----------
    name : str
        The example (``examples/<name>.toml``).
    out : Path
        The folder of the results and the figures.
    logs : Path
        The folder of the logs.
    timeout : float
        Seconds allowed to each command.

    Returns
    -------
    dict
        ``run_s``, ``plot_s`` (wall times, None if not run), ``results`` (the results file or None),
        ``pdf``, ``png`` (file names) and ``notes`` (list of str).
    """
    out.mkdir(parents=True, exist_ok=True)
    results = out / f"{name}.nc"
    for old in out.glob(f"{name}-*"):  # an earlier attempt's figures would pass for this one's
        old.unlink()
    row = {"run_s": None, "plot_s": None, "results": None, "notes": []}
    env = _environment()
    ok, row["run_s"], reason = _run(
        [sys.executable, "-m", "meanfield.cli", "run", str(ROOT / "examples" / f"{name}.toml"), "--output",
         str(results), "--format", "pdf", "--dpi", "300", "--overwrite", "--quiet"],
        ROOT, logs / f"{name}-after-run.log", env, timeout)
    if not ok:
        row["notes"].append(f"after run failed ({reason})")
    if results.exists():
        row["results"] = results
        ok, row["plot_s"], reason = _run(
            [sys.executable, "-m", "meanfield.cli", "plot", str(results), "--format", "png", "--dpi", "300",
             "--quiet"], ROOT, logs / f"{name}-after-plot.log", env, timeout)
        if not ok:
            row["notes"].append(f"after PNG redraw failed ({reason})")
    row["pdf"], row["png"] = _figures(out, name, "pdf"), _figures(out, name, "png")
    return row


def before(name: str, tree: Path, results: Path | None, out: Path, logs: Path, timeout: float) -> dict:
    """The revision: its figure code on this tree's results, else its own run of the example.

    Parameters
    ----------
    name : str
        The example.
    tree : Path
        The revision's worktree.
    results : Path or None
        This tree's results file of the example (None: the after run wrote none).
    out : Path
        The folder of the before figures (and of the revision's results, where it runs the example).
    logs : Path
        The folder of the logs.
    timeout : float
        Seconds allowed to each command.

    Returns
    -------
    dict
        ``source`` (``redrawn``, ``re-run`` or ``none``), ``seconds`` (wall time of what drew them),
        ``png`` (file names) and ``notes``.
    """
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(f"{name}-*"):
        old.unlink()
    row = {"source": "none", "seconds": None, "png": [], "notes": []}
    study = tree / "examples" / f"{name}.toml"
    if not study.exists():
        row["notes"].append(f"no before: examples/{name}.toml does not exist at the revision")
        return row
    env = _environment(tree)
    redraw_failed = "no results file of this tree to redraw"
    if results is not None:
        ok, seconds, reason = _run([sys.executable, "-c", OLD_REDRAW, str(tree), str(results), str(out / f"{name}.nc")],
                                   tree, logs / f"{name}-before-redraw.log", env, timeout)
        files = _figures(out, name, "png")
        if ok and files:
            row.update(source="redrawn", seconds=seconds, png=files)
            return row
        redraw_failed = reason if not ok else "the revision's write_figures wrote no figure"
        for partial in out.glob(f"{name}-*"):
            partial.unlink()
    row["notes"].append(f"redraw failed ({redraw_failed})")
    ok, seconds, reason = _run(
        [sys.executable, "-c", OLD_CLI, str(tree), "run", str(study), "--output", str(out / f"{name}.nc"), "--plot",
         "--overwrite", "--quiet"], tree, logs / f"{name}-before-run.log", env, timeout)
    files = _figures(out, name, "png")
    if files:
        row.update(source="re-run", seconds=seconds, png=files)
        if not ok:
            row["notes"].append(f"the revision's run: {reason}")
    else:
        row["notes"].append(f"no before: the revision's run drew nothing ({reason or 'no figure'})")
    return row


def _cell(files: list[str], folder: str) -> str:
    return "<br>".join(f"[{f}]({folder}/{f})" for f in files) or "—"


def _seconds(s: float | None) -> str:
    return "—" if s is None else f"{s:.1f}"


def write_index(out: Path, rows: dict, revision: str, total: float | None) -> Path:
    """Write ``out/index.md``: one row per example.

    Parameters
    ----------
    out : Path
        The output folder.
    rows : dict
        ``{name: {"after": dict, "before": dict}}``, as :func:`after` and :func:`before` return (``results``
        dropped).
    revision : str
        The before revision, as asked and as resolved.
    total : float or None
        The wall time of the whole script run, seconds.

    Returns
    -------
    Path
        The index.
    """
    lines = [f"# Example figures: this tree (after) and {revision} (before)", "",
             "After: `meanfield run … --format pdf --dpi 300` (run s), then "
             "`meanfield plot … --format png --dpi 300` (PNG s). Before: the revision's `write_figures` on the after "
             "results (redrawn), else the revision's own run of the example (re-run), PNG at its fixed 110 dpi. "
             "Logs in `logs/`.", "",
             "| example | run s | PNG s | after PDF | after PNG (300 dpi) | before | before s | before PNG | notes |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in sorted(rows):
        a, b = rows[name]["after"], rows[name]["before"]
        notes = "; ".join(a["notes"] + b["notes"]) or ""
        lines.append(f"| {name} | {_seconds(a['run_s'])} | {_seconds(a['plot_s'])} | {_cell(a['pdf'], 'after')} | "
                     f"{_cell(a['png'], 'after')} | {b['source']} | {_seconds(b['seconds'])} | "
                     f"{_cell(b['png'], 'before')} | {notes} |")
    runs = sum(r["after"]["run_s"] or 0 for r in rows.values())
    plots = sum(r["after"]["plot_s"] or 0 for r in rows.values())
    befores = sum(r["before"]["seconds"] or 0 for r in rows.values())
    lines += ["", f"Sum over the examples: after runs {runs:.0f} s, PNG redraws {plots:.0f} s, before {befores:.0f} s."]
    if total is not None:
        lines.append(f"Wall time of the last invocation of the script: {total:.0f} s.")
    index = out / "index.md"
    index.write_text("\n".join(lines) + "\n")
    (out / "index.json").write_text(json.dumps(rows, indent=1, default=str))
    return index


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("example-figures"), help="output directory")
    parser.add_argument("--only", help="comma-separated example names (default: every examples/*.toml)")
    parser.add_argument("--revision", default="54fc58a^", help="the 'before' revision (default 54fc58a^)")
    parser.add_argument("--no-before", action="store_true", help="draw this tree's figures only")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed to each command")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else sorted(p.stem for p in (ROOT / "examples").glob("*.toml"))
    unknown = [n for n in names if not (ROOT / "examples" / f"{n}.toml").exists()]
    if unknown:
        parser.error(f"--only: no example named {', '.join(unknown)} in examples/")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    logs = out / "logs"
    rows = {}
    saved = out / "index.json"
    if args.only and saved.exists():  # keep the other examples' rows
        rows = {k: v for k, v in json.loads(saved.read_text()).items() if k not in names}
    start = time.perf_counter()
    revision = args.revision
    with tempfile.TemporaryDirectory(prefix="example-figures-") as tmp:
        tree = None
        if not args.no_before:
            tree = Path(tmp) / "before"
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.revision], cwd=ROOT, check=True,
                           capture_output=True)
            sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True,
                                 text=True).stdout.strip()
            revision = f"{args.revision} ({sha})"
        try:
            for name in names:
                a = after(name, out / "after", logs, args.timeout)
                if tree is not None:
                    b = before(name, tree, a.pop("results"), out / "before", logs, args.timeout)
                else:
                    a.pop("results")
                    b = {"source": "none", "seconds": None, "png": [], "notes": ["no before: --no-before"]}
                rows[name] = {"after": a, "before": b}
                print(f"{name}: run {_seconds(a['run_s'])} s, PNG {_seconds(a['plot_s'])} s, "
                      f"{len(a['pdf'])} PDF, {len(a['png'])} PNG; before {b['source']} "
                      f"({_seconds(b['seconds'])} s, {len(b['png'])} PNG) {'; '.join(a['notes'] + b['notes'])}",
                      flush=True)
                write_index(out, rows, revision, None)  # a partial index while the rest run
        finally:
            if tree is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
                shutil.rmtree(tree, ignore_errors=True)
    total = time.perf_counter() - start
    index = write_index(out, rows, revision, total)
    print(f"wrote {index} ({total:.0f} s)")
    return 0 if all(not r["after"]["notes"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
