"""Interrupts under load (issue 39, item 7): SIGINT at random moments of real ``meanfield`` processes.

1. Nothing is lost. An uninterrupted reference of a small single run and of a small sweep on a dask LocalCluster
   (the study of tests/study/test_interrupts.py: the circle, a density refined 64 → 128, particles N = 100, 300,
   W1 distances; the sweep over β = 1, 2, 3 on 2 workers), then ``--signals`` SIGINTs (default 100; 3 in 4 to
   single runs, the rest to sweeps) at moments drawn uniformly over [0, 0.95 × the reference's length] from the
   start of ``meanfield run`` / ``meanfield sweep`` (seeded: ``--seed``); a moment the process did not live to see
   sends nothing, and another is drawn until that many SIGINTs were sent; ``--jobs`` (default 2) commands run at
   once, each with its own moment and files. Every other single run starts with a
   complete result at its path and ``--overwrite`` (as the tests do): the complete file must stay untouched. After
   each: exit code 0 or 130 and no traceback; the results file written loads (a file missing or unreadable, or a
   complete file replaced, counts as lost); the finished work equals the reference bit for bit (``np.array_equal``
   on every stored number that was computed: density frames, the step history, particle statistics, distances; the
   sweep's finished points); no dask worker outlives a sweep.
2. Latency: SIGINT to process exit, at random moments after the computation began (the log line the run writes
   first: "simulating …", "solving the density …"), uniformly over ``--window`` seconds:
   - particles at n = 10⁵ on S² (``meanfield run``: SA β = 4, RK4 steps on the spectral sums, then the pair
     fraction and E_β of the systems at each output, n² pairs each),
   - a density on S² at lmax 256 (``meanfield run``: SA β = 4, RK4, refinement capped at 256),
   - with ``--cases`` also ``pairwise`` (a Python driver running ``particles.simulate(..., strategy="pairwise")`` at
     n = 10⁵ under ``meanfield.core.interrupts.deferred()`` as the command line does: one field evaluation is 10¹⁰
     pairs) and ``moments`` (the S² density at lmax 256 of a model with Q ≠ I: the moments path).
   Each interrupted run's results file must load and say "interrupted".

``--load K`` (default 2) background processes burn a CPU each for the whole benchmark (the machine has two
cores: the runs share them). The table: per case the runs, the SIGINTs sent, where they landed, the latency
median / p90 / max, files lost and runs whose finished work differs from the reference.

Run:  python benchmarks/bench_interrupts.py                      (about 15 min on two cores under --load 2)
      python benchmarks/bench_interrupts.py --signals 20 --moments 4 --window 10        (about 4 min)
      python benchmarks/bench_interrupts.py --part latency --cases particles,s2,pairwise,moments
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

#: the single run and the sweep: the study of tests/study/test_interrupts.py
STUDY = (Path(__file__).resolve().parents[1] / "tests" / "study" / "interrupt_study.toml").read_text()
SWEEP = ["--over", "beta=1,2,3", "--workers", "2"]

#: particles at n = 10⁵ on S² (no grid: sampled from the uniform law); about a minute uninterrupted
PARTICLES = """
domain = "sphere"
seed = 0
[model]
beta = 4.0
[initial]
kind = "uniform"
[time]
t_end = 0.2
frames = 2
[particles]
n = [100000]
"""

#: a density on S² at lmax 256 (SA, the zonal path: a step is one transform each way per stage)
S2 = """
domain = "sphere"
seed = 0
[grid]
lmax = 256
[model]
beta = 4.0
[time]
t_end = 6.0
frames = 5
max_n = 256
"""

#: the same with Q ≠ I: the moment-generating-function path, O(L³) per step
MOMENTS = """
domain = "sphere"
seed = 0
[grid]
lmax = 256
[model]
beta = 2.0
Q = [[1.0, 0.2, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.8]]
[time]
t_end = 1.0
frames = 3
max_n = 256
"""

#: particles at n = 10⁵ with the pairwise kernel, under deferred interrupts as the command line runs
PAIRWISE = """
import sys
import meanfield as mf
import particles
from meanfield import interrupts

x0 = particles.uniform_sphere(100_000, 3, rng=0)
try:
    with interrupts.deferred():
        print("simulating the pairwise field", file=sys.stderr, flush=True)
        particles.simulate(mf.SelfAttention(4.0), x0, [0.0, 0.01], strategy="pairwise", dt=0.01)
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr, flush=True)
    sys.exit(130)
"""

#: case → (study or script, marker in the log that the computation began, label)
CASES = {
    "particles": (PARTICLES, "simulating", "particles n = 1e5, S² (meanfield run)"),
    "s2": (S2, "solving the density", "S² density lmax 256 (meanfield run)"),
    "pairwise": (PAIRWISE, "simulating", "particles n = 1e5, pairwise field (driver)"),
    "moments": (MOMENTS, "solving the density", "S² lmax 256, Q ≠ I: moments (meanfield run)"),
}


# ---------------------------------------------------------------- processes
@contextlib.contextmanager
def burners(k: int):
    """``k`` background processes burning a CPU each; stopped (by their pids) on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(k)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


class Run:
    """A ``meanfield`` command (or a Python script) in a subprocess, its standard error read line by line."""

    def __init__(self, args, cwd, marker=None, script=False):
        cmd = [sys.executable, *args] if script else [sys.executable, "-m", "meanfield_command", *args]
        self.start = time.monotonic()
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines, self.marker, self.began = [], marker, None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            if self.began is None and self.marker is not None and self.marker in line:
                self.began = time.monotonic()
            self.lines.append(line)

    def wait_until(self, deadline) -> bool:
        """Sleep until ``deadline`` (monotonic) unless the process ends first; whether it still runs."""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            time.sleep(0.005)
        return self.proc.poll() is None

    def wait_for_marker(self, timeout=600.0) -> bool:
        end = time.monotonic() + timeout
        while self.began is None and time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            time.sleep(0.005)
        return self.began is not None

    def interrupt(self, children: bool = False):
        """SIGINT now if still running; (sent, seconds from the signal to the exit, pids of its descendants)."""
        if self.proc.poll() is not None:
            return False, None, []
        pids = []
        if children:
            import psutil

            with contextlib.suppress(psutil.Error):
                pids = [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)]
        sent = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        return True, sent, pids

    def finish(self, timeout=600.0) -> int:
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        try:
            code = self.proc.wait()  # a blocking waitpid: the exit time to the scheduler's resolution
        finally:
            timer.cancel()
        self.end = time.monotonic()
        self.reader.join(timeout=10)
        return code

    @property
    def stderr(self) -> str:
        return "".join(self.lines)


def reference(args, cwd):
    """An uninterrupted run: its length in seconds (it must succeed)."""
    run = Run(args, cwd)
    code = run.finish()
    if code != 0:
        raise SystemExit(f"the reference run {args} failed ({code}):\n{run.stderr}")
    return run.end - run.start


# ---------------------------------------------------------------- checks
def _digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def differences(part, full) -> list[str]:
    """The variables whose computed numbers (finite in ``part``) are not bit for bit the reference's.

    A variable of the step history may be shorter (a prefix); density frames computed before a refinement the
    reference went through are compared on its grid after the same exact resampling the runner applies
    (zero-padded spectra), so they too must be equal bit for bit."""
    import meanfield as mf

    bad = []
    for name, var in part.data_vars.items():
        if var.dtype.kind != "f":
            continue
        if name not in full:
            if name != "density_last_resolved":  # an interrupted run's state between two output times
                bad.append(f"{name} (not in the reference)")
            continue
        a, b = np.asarray(var.values), np.asarray(full[name].values)
        if name == "density" and a.shape != b.shape and a.ndim == 2:  # the circle: (time, theta)
            fine = b.shape[-1]
            a = np.stack([mf.CircleGrid(a.shape[-1]).resample(f, fine) if np.all(np.isfinite(f))
                          else np.full(fine, np.nan) for f in a])
        if a.shape != b.shape:  # the step history: a prefix
            if a.shape[1:] != b.shape[1:] or a.shape[0] > b.shape[0]:
                bad.append(f"{name} (shape {a.shape} against {b.shape})")
                continue
            b = b[: a.shape[0]]
        done = np.isfinite(a)
        if not np.array_equal(a[done], b[done]):
            bad.append(name)
    return bad


def early(code: int, stderr: str) -> bool:
    """Whether the signal came before the program's first instruction: Python's own startup (the interpreter, its
    site packages, ``runpy``; the first ~40 ms), where only Python's default handler can answer — exit 1 with its
    ``KeyboardInterrupt`` traceback, no frame of the library in it, nothing computed and no results file."""
    lines = stderr.strip().splitlines()
    frames = [line for line in lines if line.lstrip().startswith("File ")]
    return (code == 1 and bool(lines) and lines[-1] == "KeyboardInterrupt"
            and not any(f"{os.sep}{pkg}{os.sep}" in f for f in frames for pkg in ("meanfield", "particles")))


def check_run(out: Path, code: int, stderr: str, full, protected: str | None):
    """(outcome, lost, differing variables) of one interrupted single run: outcome "landed" (an interrupted
    file), "after" (a complete file: the signal came after the work), "early" (:func:`early`) or "error"."""
    import meanfield as mf

    if early(code, stderr) and not out.with_name(f"{out.stem}.interrupted.nc").exists():
        lost = int(protected is not None and _digest(out) != protected)
        return "early", lost, []
    if code not in (0, 130) or "Traceback" in stderr:
        return "error", 1, [f"exit {code}: {stderr.strip().splitlines()[-1:]}"]
    beside = out.with_name(f"{out.stem}.interrupted.nc")
    target = beside if beside.exists() else out
    try:
        ds = mf.load(target)
    except Exception as exc:  # noqa: BLE001  (any failure to load is a lost file)
        return "error", 1, [f"{target.name} does not load: {exc}"]
    lost = 0
    status = ds.attrs.get("status")
    if protected is not None and _digest(out) != protected:
        lost += 1  # a complete result replaced
    if code == 0 and status != "success":
        return "error", lost + 1, [f"exit 0 with status {status!r}"]
    return ("landed" if status == "interrupted" else "after"), lost, differences(ds, full)


def check_sweep(out: Path, code: int, stderr: str, full, pids):
    import psutil

    import meanfield as mf

    if early(code, stderr) and not out.exists():
        return "early", 0, [], 0
    if code not in (0, 130) or "Traceback" in stderr:
        return "error", 1, [f"exit {code}: {stderr.strip().splitlines()[-1:]}"], 0
    try:
        ds = mf.load(out)
    except Exception as exc:  # noqa: BLE001
        return "error", 1, [f"{out.name} does not load: {exc}"], 0
    statuses = set(np.asarray(ds.status.values).ravel())
    bad = [] if statuses <= {"success", "not run"} else [f"point statuses {sorted(statuses)}"]
    done = [b for b, s in zip(ds.beta.values, ds.status.values) if s == "success"]
    if done:
        bad += differences(ds.sel(beta=done), full.sel(beta=done))
    time.sleep(1.0)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    return ("landed" if ds.attrs.get("status") == "interrupted" else "after"), 0, bad, len(alive)


# ---------------------------------------------------------------- the two parts
class Row:
    def __init__(self, label):
        self.label, self.runs, self.sent, self.landed, self.after, self.early = label, 0, 0, 0, 0, 0
        self.latency, self.lost, self.differing, self.orphans, self.notes = [], 0, 0, 0, []

    def add(self, sent, latency, outcome, lost, bad, orphans=0):
        self.runs += 1
        self.sent += bool(sent)
        if latency is not None:
            self.latency.append(latency)
        self.landed += outcome == "landed"
        self.after += outcome == "after"
        self.early += outcome == "early"
        self.lost += lost
        self.differing += bool(bad)
        self.orphans += orphans
        if bad:
            self.notes.append(bad)


def _one_signal(k, kind, delay, tmp: Path, full, complete: bytes):
    """Start run or sweep ``k``, SIGINT it ``delay`` s after its start, check what it left (a thread of part 1)."""
    out = tmp / f"{kind}{k}.nc"
    protected = None
    if kind == "run" and k % 2 == 1:  # a complete result already at the path, and --overwrite
        out.write_bytes(complete)
        protected = _digest(out)
    args = (["run", "s.toml"] if kind == "run" else ["sweep", "s.toml", *SWEEP]) + ["--output", out.name, "--quiet"]
    if protected is not None:
        args.append("--overwrite")
    run = Run(args, tmp)
    run.wait_until(run.start + delay)
    sent, at, pids = run.interrupt(children=kind == "sweep")
    code = run.finish()
    latency = run.end - at if sent else None
    if kind == "run":
        outcome, lost, bad = check_run(out, code, run.stderr, full, protected)
        orphans = 0
    else:
        outcome, lost, bad, orphans = check_sweep(out, code, run.stderr, full, pids)
    for f in (out, out.with_name(f"{out.stem}.interrupted.nc")):
        f.unlink(missing_ok=True)
    return sent, latency, outcome, lost, bad, orphans, code


def signals_part(count, jobs, rng, tmp: Path, verbose):
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    import meanfield as mf

    (tmp / "s.toml").write_text(STUDY)
    print("references (uninterrupted): ", end="", flush=True)
    length = {"run": reference(["run", "s.toml", "--output", "full.nc", "--quiet"], tmp),
              "sweep": reference(["sweep", "s.toml", *SWEEP, "--output", "fullsweep.nc", "--quiet"], tmp)}
    print(f"single run {length['run']:.1f} s, sweep {length['sweep']:.1f} s", flush=True)
    full = {"run": mf.load(tmp / "full.nc"), "sweep": mf.load(tmp / "fullsweep.nc")}
    complete = (tmp / "full.nc").read_bytes()
    # SIGINTs still to send, by kind: a moment after the process ended sends none, and another is drawn
    quota = {"run": count - count // 4, "sweep": count // 4}
    flying = {"run": 0, "sweep": 0}
    rows = {"run": Row("single runs (circle; refined, particles, W1)"),
            "sweep": Row("sweeps, LocalCluster 2 workers (β = 1, 2, 3)")}
    moments = {"run": [], "sweep": []}
    k, futures = -1, {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while True:
            # keep ``jobs`` commands running while SIGINTs remain to be sent (the moments drawn here, in order)
            while len(futures) < jobs and k < 3 * count:
                left = {kind: quota[kind] - flying[kind] for kind in quota}
                if sum(left.values()) <= 0:
                    break
                k += 1
                kind = "run" if rng.uniform() * sum(left.values()) < left["run"] else "sweep"
                delay = rng.uniform(0.0, 0.95 * length[kind])
                moments[kind].append(delay / length[kind])
                flying[kind] += 1
                futures[pool.submit(_one_signal, k, kind, delay, tmp, full[kind], complete)] = (k, kind, delay)
            if not futures:
                break
            done, _ = wait(futures, return_when=FIRST_COMPLETED)
            for f in done:
                j, kind, delay = futures.pop(f)
                sent, latency, outcome, lost, bad, orphans, code = f.result()
                flying[kind] -= 1
                quota[kind] -= bool(sent)
                rows[kind].add(sent, latency, outcome, lost, bad, orphans)
                if verbose or bad or lost or orphans:
                    print(f"  {kind:5s} {j:3d}  at {delay:6.2f} s  exit {code:3d}  {outcome:6s}  "
                          + (f"latency {latency:5.2f} s" if sent else "(ended before)") + (f"  {bad}" if bad else "")
                          + (f"  LOST {lost}" if lost else "") + (f"  {orphans} workers left" if orphans else ""),
                          flush=True)
    for kind in rows:
        m = np.array(moments[kind])
        rows[kind].moments = f"{m.min():.2f}–{m.max():.2f} of the run" if m.size else "-"
    return list(rows.values())


def latency_part(cases, moments, window, rng, tmp: Path, verbose):
    import meanfield as mf

    rows = []
    for case in cases:
        text, marker, label = CASES[case]
        script = case == "pairwise"
        name = f"{case}.py" if script else f"{case}.toml"
        (tmp / name).write_text(text)
        row = Row(label)
        row.moments = f"0–{window:g} s after '{marker}'"
        for k in range(moments):
            delay = rng.uniform(0.0, window)
            out = tmp / f"{case}{k}.nc"
            run = Run([name] if script else ["run", name, "--output", out.name], tmp, marker=marker, script=script)
            if not run.wait_for_marker():
                code = run.finish()
                row.add(False, None, "error", 1, [f"no '{marker}' (exit {code}): {run.stderr[-300:]}"])
                continue
            run.wait_until(run.began + delay)
            sent, at, _ = run.interrupt()
            code = run.finish()
            latency = run.end - at if sent else None
            if script:
                ok = code == 130 and "Traceback" not in run.stderr
                outcome, lost, bad = ("landed" if ok else "error"), 0, ([] if ok else [run.stderr[-300:]])
            else:
                try:
                    status = mf.load(out).attrs.get("status") if code in (0, 130) else None
                    lost, bad = (0, []) if status in ("interrupted", "success") else (1, [f"exit {code}"])
                except Exception as exc:  # noqa: BLE001
                    status, lost, bad = None, 1, [f"does not load: {exc}"]
                if "Traceback" in run.stderr:
                    bad.append("traceback")
                outcome = {"interrupted": "landed", "success": "after"}.get(status, "error")
                out.unlink(missing_ok=True)
            row.add(sent, latency, outcome, lost, bad)
            if verbose or bad or lost:
                print(f"  {case:9s} {k:3d}  at {delay:6.2f} s  exit {code:3d}  {outcome:6s}  "
                      + (f"latency {latency:5.2f} s" if sent else "(ended before)") + (f"  {bad}" if bad else ""),
                      flush=True)
        rows.append(row)
    return rows


def quantiles(values):
    if not values:
        return "-", "-", "-"
    v = np.asarray(values)
    return f"{statistics.median(v):.2f}", f"{np.quantile(v, 0.9):.2f}", f"{v.max():.2f}"


def table(rows):
    head = (f"{'case':46s} {'runs':>4s} {'SIGINTs':>7s} {'landed':>6s} {'after':>5s} {'early':>5s}  {'moments':32s}"
            f" {'median':>6s} {'p90':>6s} {'max':>6s} {'lost':>4s} {'differ':>6s}")
    lines = [head, "-" * len(head)]
    for r in rows:
        med, p90, mx = quantiles(r.latency)
        lines.append(f"{r.label:46s} {r.runs:4d} {r.sent:7d} {r.landed:6d} {r.after:5d} {r.early:5d}  {r.moments:32s}"
                     f" {med:>6s} {p90:>6s} {mx:>6s} {r.lost:4d} {r.differing:6d}"
                     + (f"  ({r.orphans} workers outlived a sweep)" if r.orphans else ""))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--signals", type=int, default=100, help="SIGINTs of part 1 (3 in 4 to single runs)")
    p.add_argument("--jobs", type=int, default=2, help="part 1's commands running at once (each with its own "
                   "moment and files; more load)")
    p.add_argument("--moments", type=int, default=10, help="SIGINTs per latency case")
    p.add_argument("--window", type=float, default=15.0, help="seconds after the computation began within which "
                   "the latency cases' moments fall")
    p.add_argument("--cases", default="particles,s2", help=f"latency cases, of {','.join(CASES)}")
    p.add_argument("--load", type=int, default=2, help="background CPU-burning processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--part", choices=("both", "signals", "latency"), default="both")
    p.add_argument("--verbose", action="store_true", help="a line per interrupted run")
    args = p.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        p.error(f"unknown cases {sorted(unknown)}; the cases: {', '.join(CASES)}")
    rng = np.random.default_rng(args.seed)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs), "
          f"{args.load} burner(s) added", flush=True)
    t0 = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_interrupts_") as tmp, burners(args.load):
        tmp = Path(tmp)
        if args.part in ("both", "signals") and args.signals > 0:
            rows += signals_part(args.signals, args.jobs, rng, tmp, args.verbose)
        if args.part in ("both", "latency") and args.moments > 0:
            rows += latency_part(cases, args.moments, args.window, rng, tmp, args.verbose)
        load_end = os.getloadavg()
    print()
    print(table(rows))
    print("\nlatency (s): from SIGINT to the process's exit; landed: the results file says interrupted; after: the work "
          "was complete (a complete file); early: the signal came during Python's own startup, before the program's "
          "first instruction (exit 1, nothing computed, no file); lost: results files missing or unreadable, or a "
          "complete one replaced; differ: runs whose finished work is not the reference's bit for bit")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in load_end)} (with the burners); "
          f"wall time {time.monotonic() - t0:.0f} s; seed {args.seed}")
    for r in rows:
        for note in r.notes[:5]:
            print(f"  {r.label}: {note}")
    failed = any(r.lost or r.differing or r.orphans for r in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
