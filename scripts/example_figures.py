"""Every example study's figures for print, beside those of an earlier revision (issue 39, "figures for print").

After: this tree runs each ``examples/*.toml`` with its figures as PDF (``meanfield run … --format pdf --dpi
300``), then draws the same results file again as PNG at 300 dpi (``meanfield plot … --format png --dpi 300``).
Before (``--revision``, default ``54fc58a^``, the tree before "Figures for print"): the revision is checked out
with ``git worktree`` into a temporary directory and runs its own copy of each example that it has, with the
figures it drew then (PNG at a fixed 110 dpi); it is imported from there (the editable install's finder removed),
so its numba cache is its own. Each run's wall time and status go to ``OUT/index.md``, one row per example.

Run:  python scripts/example_figures.py [--out DIR] [--only a,b] [--revision REV | --no-before]

Two cores run all seventeen examples in about 25 minutes a tree (metastability and metastability_sphere take
about five each, phase_diagram_d128, layers and compare_sphere one to two).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Runs the ``meanfield`` command line of the tree at ``sys.argv[1]`` (not the editable install's)
OLD_CLI = r"""
import sys
tree = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path.insert(0, tree)
import meanfield
from meanfield import cli
assert meanfield.__file__.startswith(tree), meanfield.__file__
sys.exit(cli.main(sys.argv[1:]))
"""


def _run(command, cwd, log, timeout=1800) -> tuple[str, float]:
    start = time.perf_counter()
    try:
        with open(log, "a") as out:
            code = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        status = "ok" if code == 0 else f"exit {code} (see {log.name})"
    except subprocess.TimeoutExpired:
        status = f"over {timeout} s"
    return status, time.perf_counter() - start


def after(name: str, out: Path) -> tuple[str, float, list[str]]:
    """This tree: the run with PDF figures, then the PNGs at 300 dpi from its results file."""
    out.mkdir(parents=True, exist_ok=True)
    log, results = out / f"{name}.log", out / f"{name}.nc"
    status, seconds = _run(["meanfield", "run", str(ROOT / "examples" / f"{name}.toml"), "--output", str(results),
                            "--format", "pdf", "--dpi", "300", "--overwrite", "--quiet"], ROOT, log)
    if status == "ok":
        status, more = _run(["meanfield", "plot", str(results), "--format", "png", "--dpi", "300", "--quiet"], ROOT, log)
        seconds += more
    return status, seconds, sorted(p.name for p in out.glob(f"{name}-*"))


def before(name: str, tree: Path, out: Path) -> tuple[str, float, list[str]]:
    """The revision's tree: its own copy of the example with the figures it drew."""
    out.mkdir(parents=True, exist_ok=True)
    study = tree / "examples" / f"{name}.toml"
    if not study.exists():
        return "no such example at the revision", 0.0, []
    status, seconds = _run([sys.executable, "-c", OLD_CLI, str(tree), "run", str(study), "--output",
                            str(out / f"{name}.nc"), "--plot", "--overwrite", "--quiet"], tree, out / f"{name}.log")
    return status, seconds, sorted(p.name for p in out.glob(f"{name}-*"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("example-figures"), help="output directory")
    parser.add_argument("--only", help="comma-separated example names (default: every examples/*.toml)")
    parser.add_argument("--revision", default="54fc58a^", help="the 'before' revision")
    parser.add_argument("--no-before", action="store_true", help="draw this tree's figures only")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else sorted(p.stem for p in (ROOT / "examples").glob("*.toml"))
    unknown = [n for n in names if not (ROOT / "examples" / f"{n}.toml").exists()]
    if unknown:
        parser.error(f"--only: no example named {', '.join(unknown)} in examples/")
    out = args.out.resolve()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tree = None
        if not args.no_before:
            tree = Path(tmp) / "before"
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.revision], cwd=ROOT, check=True,
                           capture_output=True)
        try:
            for name in names:
                a = after(name, out / "after")
                b = before(name, tree, out / "before") if tree is not None else ("not asked", 0.0, [])
                rows.append((name, a, b))
                print(f"{name}: after {a[0]} in {a[1]:.0f} s; before {b[0]} in {b[1]:.0f} s", flush=True)
        finally:
            if tree is not None:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    lines = [f"# Example figures: this tree (after) and {args.revision} (before)", "",
             "| example | after: run + PNG redraw | after files | before | before files |", "|---|---|---|---|---|"]
    for name, (sa, ta, fa), (sb, tb, fb) in rows:
        lines.append(f"| {name} | {sa}, {ta:.0f} s | {' '.join(fa)} | {sb}" + (f", {tb:.0f} s" if tb else "")
                     + f" | {' '.join(fb)} |")
    (out / "index.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'index.md'}")
    return 0 if all(a[0] == "ok" for _, a, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
