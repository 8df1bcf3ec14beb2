"""This tree against a git revision, side by side: the operations the closing notes timed.

Each round runs every operation once in a fresh process per tree (the trees
alternate first and second from round to round), after a warm-up in the same
process, as the best of a few repetitions; the figure for an operation is the
median over the rounds, and the ratio is this tree / the revision. The
revision is checked out with ``git worktree`` into a temporary directory and
imported from there (``PYTHONPATH``); its numba cache is its own.

Operations (the earlier closing notes' benchmarks): a circle right-hand side at
n = 1024 and solves to t = 10 (``bench_circle``); the fused pairwise field at
n = 4096, d = 3, on one and two threads, a plain NumPy field, the circle
spectral field of 10⁶ particles, an RK4 step of 4096 particles through
``simulate`` (``bench_particles``); an RK4 step on S² at lmax = 127 with each
backend (``bench_sphere``); finite-volume right-hand sides in R²
(``bench_euclidean``); circle W1/W2 of 10⁶ points against a density and exact
S² OT of 4000 points against a 64 × 128 grid measure (``bench_wasserstein``);
the phase diagram at 10 β × 1024 systems, serially (``scripts/phase_diagram``);
the quick-start study (``examples/circle_clusters.toml``).

With ``--numbers`` it compares results instead of times: ``benchmarks/_numbers.py``
(solves on every domain and strategy, particles on every strategy, kernels, sampling,
distances, stability, the mean-field limit, studies) runs in both trees and every array is
compared bit for bit.

Run:  python benchmarks/bench_revisions.py [--revision REV] [--rounds 5] [--only NAME,...] [--cpu N]
      python benchmarks/bench_revisions.py --numbers [--revision REV]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# One process: time every operation asked for and print {name: seconds} as JSON. Written against the
# public API both trees share; where a module moved, the older path is the fallback.
RUNNER = r'''
import json, os, sys, time
# an editable install's finder resolves meanfield.* names itself, so a module the revision lacks would
# silently come from this tree: import only from PYTHONPATH
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
import numpy as np

sys.path.insert(0, "benchmarks")  # each tree's own helpers: the timing rule and the perturbed uniform density
from _timing import best
from bench_circle import perturbed_uniform

import numba
import meanfield as mf
import particles as pt
try:
    from meanfield import kernels
except ImportError:
    from particles import kernels
try:  # since the representations (c2114be): the grid problem's right-hand side, as solve builds it
    from meanfield import strategies
    from meanfield.representations.grid import continuity

    def circle_rate(model, grid):
        strategy = strategies.resolve("auto", strategies.for_grid(model, grid), repr(grid))
        return continuity(grid.domain, model, grid, strategy)
    sphere_rate = circle_rate
except ImportError:
    try:  # the domain layer: Domain.rate
        from meanfield.domains import CIRCLE, SPHERE
        circle_rate, sphere_rate = CIRCLE.rate, SPHERE.rate
    except ImportError:
        from meanfield.continuity import circle_rate
        from meanfield.continuity_sphere import sphere_rate
try:
    from meanfield.domains.euclidean import FiniteVolume
    FV = {"fft": "spectral", "direct": "quadrature", "separable": "separable"}
except ImportError:
    from meanfield.continuity_euclidean import FiniteVolume
    FV = {"fft": "fft", "direct": "direct", "separable": "separable"}

only = set(sys.argv[1].split(",")) if len(sys.argv) > 1 and sys.argv[1] else None
res = {}

def op(name):
    def deco(fn):
        if only is None or name in only:
            res[name] = fn()
        return fn
    return deco

numba.set_num_threads(1)
mu0 = perturbed_uniform(1024)
model4 = mf.SelfAttention(4.0)

@op("circle_rhs_n1024")
def _():
    rate = circle_rate(model4, mu0.grid)
    y = mu0.values.copy()
    return best(lambda: rate.rate(y), repeat=5, number=500)

@op("circle_solve_rk4_t10")
def _():
    return best(lambda: mf.solve(model4, mu0, (0.0, 10.0), method="rk4", refine=False), repeat=3)

@op("circle_solve_rk45_t10")
def _():
    return best(lambda: mf.solve(model4, mu0, (0.0, 10.0), method="rk45", refine=False), repeat=3)

x = pt.uniform_sphere(4096, 3, rng=0)
w = np.full(4096, 1 / 4096)

@op("numpy_field_n4096")
def _():
    def f():
        G = x @ x.T
        E = np.exp(4.0 * (G - G.max(axis=1, keepdims=True)))
        U = (E @ x) / E.sum(axis=1, keepdims=True)
        return U - np.sum(U * x, axis=1, keepdims=True) * x
    return best(f, repeat=3)

@op("pairwise_field_n4096_1thread")
def _():
    numba.set_num_threads(1)
    return best(lambda: kernels.field(model4, x, w, x), repeat=5, number=3)

@op("pairwise_field_n4096_2threads")
def _():
    numba.set_num_threads(2)
    t = best(lambda: kernels.field(model4, x, w, x), repeat=5, number=3)
    numba.set_num_threads(1)
    return t

@op("simulate_rk4_step_n4096")
def _():
    numba.set_num_threads(1)
    h = 0.01
    return best(lambda: pt.simulate(model4, x, [0.0, h], dt=h), repeat=3)

@op("circle_spectral_field_1e6")
def _():
    th = np.random.default_rng(1).uniform(0, 2 * np.pi, 10**6)
    xc = np.stack([np.cos(th), np.sin(th)], -1)
    wc = np.full(10**6, 1e-6)
    return best(lambda: kernels.circle_spectral_field(xc, wc, xc, 4.0), repeat=3)

for backend in ("ducc0", "pyshtools"):
    @op(f"sphere_rk4_step_L127_{backend}")
    def _(backend=backend):
        g = mf.SphereGrid(127, backend=backend)
        d = mf.Density.from_function(g, lambda x: np.exp(2 * x[..., 2] + x[..., 0] * x[..., 1]))
        rate = sphere_rate(model4, g)
        y = d.values
        def step(h=1e-3):
            k1 = rate.rate(y); k2 = rate.rate(y + 0.5 * h * k1); k3 = rate.rate(y + 0.5 * h * k2)
            k4 = rate.rate(y + h * k3)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return best(step, repeat=3)

from meanfield import gaussian as G
from meanfield.models import L2, Softmax
m0, S0 = np.array([0.2, -0.1]), np.array([[0.3, 0.05], [0.05, 0.2]])
softmax = Softmax(Q=np.array([[0.5, 0.2], [0.0, 0.3]]))
for name, model, n, how in (("fv_l2_fft_256", L2(Q=np.diag([1.0, 0.7]), K=np.diag([1.0, 0.7])), 256, "fft"),
                            ("fv_softmax_direct_128", softmax, 128, "direct"),
                            ("fv_softmax_separable_128", softmax, 128, "separable")):
    @op(name)
    def _(model=model, n=n, how=how):
        g = mf.EuclideanGrid([(-4, 4), (-4, 4)], n)
        rho = G.gaussian_pdf(g.points, m0, S0)
        fv = FiniteVolume(g, model, FV[how])
        return best(lambda: fv.rate_and_speeds(rho), repeat=3)

from validation import w1, w2
from meanfield import exact

@op("w1_circle_1e6")
def _():
    d = mf.Density.from_function(mf.CircleGrid(256), lambda x: exact.wrapped_cauchy(np.arctan2(x[..., 1], x[..., 0]), 0.5))
    xs = pt.sample(d, 10**6, rng=1)
    return best(lambda: w1(d, xs), repeat=3)

@op("w2_circle_1e6")
def _():
    d = mf.Density.from_function(mf.CircleGrid(256), lambda x: exact.wrapped_cauchy(np.arctan2(x[..., 1], x[..., 0]), 0.5))
    xs = pt.sample(d, 10**6, rng=1)
    return best(lambda: w2(d, xs), repeat=3)

@op("ot_sphere_4000_vs_64x128")
def _():
    xg, wx = np.polynomial.legendre.leggauss(64)
    phi = 2 * np.pi * np.arange(128) / 128
    st = np.sqrt(1 - xg**2)
    pts = np.stack([np.outer(st, np.cos(phi)), np.outer(st, np.sin(phi)), np.outer(xg, np.ones(128))], -1).reshape(-1, 3)
    ww = np.outer(wx, np.full(128, 2 * np.pi / 128)).ravel() * np.exp(2.0 * pts[:, 2])
    ww /= ww.sum()
    y = pt.uniform_sphere(4000, 3, rng=2)
    w1(y[:10], (pts[:100], np.full(100, 0.01)))  # warm-up without the big OT
    t0 = time.perf_counter()
    w1(y, (pts, ww))
    return time.perf_counter() - t0

@op("phase_diagram_10beta_1024systems_serial")
def _():
    sys.path.insert(0, os.getcwd())
    from scripts.phase_diagram import run
    t = np.arange(0.0, 30.0 + 0.125, 0.25)
    run(32, 3, 16, [1.0], t[:5], 1e-3, 2.0, 0, progress=False, scheduler="serial")  # compile
    t0 = time.perf_counter()
    run(32, 3, 1024, np.linspace(0.1, 9.0, 10), t, 1e-3, 2.0, 0, progress=False, scheduler="serial")
    return time.perf_counter() - t0

@op("quick_start_study")
def _():
    from meanfield import study
    t0 = time.perf_counter()
    study.run("examples/circle_clusters.toml", output=False, progress=False)
    return time.perf_counter() - t0

print("RESULT " + json.dumps(res))
'''


def worktree(revision: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="meanfield-rev-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(path), revision], cwd=ROOT, check=True,
                   capture_output=True)
    return path


def measure(tree: Path, only: str, cpu: int | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    pin = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
    r = subprocess.run([sys.executable, "-c", RUNNER, only], cwd=tree, env=env, capture_output=True, text=True,
                       preexec_fn=pin)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"the benchmark failed in {tree}:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    return json.loads(line[len("RESULT "):])


def numbers(trees: dict) -> None:
    """Run benchmarks/_numbers.py (this tree's) in each tree and compare every array bit for bit."""
    out = {}
    for name, tree in trees.items():
        f = Path(tempfile.mkdtemp()) / "numbers.npz"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "_numbers.py"), str(f)], cwd=tree, env=env,
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"_numbers.py failed in {tree}:\n{r.stderr[-4000:]}")
        out[name] = np.load(f)
    a, b = out["revision"], out["this tree"]
    same = 0
    for key in sorted(set(a.files) | set(b.files)):
        if key not in a.files or key not in b.files:
            print(f"{key}: only in {'this tree' if key in b.files else 'the revision'}")
        elif a[key].shape != b[key].shape:
            print(f"{key}: shapes {a[key].shape} and {b[key].shape}")
        elif np.array_equal(a[key], b[key], equal_nan=True):
            same += 1
        else:
            print(f"{key}: differs by up to {np.nanmax(np.abs(a[key] - b[key])):.3g} (values up to "
                  f"{np.nanmax(np.abs(a[key])):.3g})")
    print(f"{same} of {len(set(a.files) | set(b.files))} arrays identical bit for bit")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--revision", default="f073e3b", help="the git revision to compare with (default: the commit "
                                                          "before the domain layer)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated operation names")
    ap.add_argument("--numbers", action="store_true", help="compare results bit for bit instead of times")
    ap.add_argument("--cpu", type=int, default=None, help="pin every process to this core (less noise; the "
                                                           "two-thread operation then runs on one core)")
    args = ap.parse_args(argv)
    before = worktree(args.revision)
    try:
        trees = {"revision": before, "this tree": ROOT}
        if args.numbers:
            return numbers(trees)
        for name, tree in trees.items():  # compile every kernel into each tree's numba cache first
            measure(tree, "circle_rhs_n1024,pairwise_field_n4096_1thread,w1_circle_1e6")
        runs = {name: [] for name in trees}
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for name in order:
                runs[name].append(measure(trees[name], args.only, args.cpu))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        ops = list(runs["this tree"][0])
        print(f"medians of {args.rounds} rounds (seconds); ratio = this tree / {args.revision}")
        print(f"{'operation':42s} {args.revision:>12s} {'this tree':>12s} {'ratio':>7s}   range of the ratio")
        for op in ops:
            a = np.array([run[op] for run in runs["revision"]])
            b = np.array([run[op] for run in runs["this tree"]])
            ratios = b / a
            print(f"{op:42s} {np.median(a):12.4g} {np.median(b):12.4g} {np.median(b) / np.median(a):7.3f}"
                  f"   {ratios.min():.3f}-{ratios.max():.3f}")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, capture_output=True)


if __name__ == "__main__":
    main()
