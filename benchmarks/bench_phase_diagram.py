"""The clustering phase diagram of GLPR Figure 3 in high dimension against the authors' torch code, in one run.

Both compute, for each β, the fraction of ordered pairs i ≠ j with ⟨x_i(t), x_j(t)⟩ >= 1 − δ (δ = 1e-3) over R
systems of n tokens iid uniform on S^{d-1}, SA with Q = K = V = I, at the 200 times at which the authors' script
records it (``torch.linspace(0, T, 200)``, each read at the first of its Euler steps at or past it).

- Ours, two ways, the same RK4 (dt = c/(1 + β), cut to land on those times; the fused zonal kernel in the
  n-dimensional span of each system, ``particles.span``):
  "positions": ``particles.simulate``, which maps every output back to R^d, and ``particles.clusters.
  pair_fraction`` of those positions, in chunks of ``--chunk`` systems (chunk × 200 × n × d doubles: writing
  and reading them, 6.7 GB a β, costs about as much as the integration here);
  "span": ``particles.simulate(..., span_coordinates=True, observe=...)``, the same run in the span coordinates
  c = x B (``particles.span.basis``) with ``pair_fraction`` of the coordinates, whose inner products are the
  positions' (B has orthonormal columns), taken at each output inside the run: no history in R^d, as the study
  runner computes it where positions are neither saved nor compared with a density (printed: its largest
  difference from the first way's, round-off at a threshold).
- The authors': ``phase-diagrams.py`` of the public GitHub repository borjanG/2023-transformers-rotf (projected
  Euler steps of size ``--authors-step``; float64, as it sets), run unmodified on the CPU: its source is executed
  as a module with its device 'cuda' read as 'cpu', and its ``do_single_beta`` called per β with
  ``--use_softmax --dmodel d --ntokens n --batch R --maxtime T``. Give its path with ``--authors PATH`` (or the
  environment variable PHASE_DIAGRAMS_PY); without it, or without torch, that part is skipped with a message.
  Never part of this repository.

Where the time went (``--kernels``): one RK4 step of one system (n = 32, SA β = 4), fused kernels on one thread,
medians of 5: the generic kernel in R^d (what d = 128 ran before: O(d²n) for βAᵀy and Vy, here forced by
Q = K = O, a random orthogonal matrix, which is the same model, QᵀK = I), the zonal two-product kernel in R^d,
and the zonal kernel in the span (n coordinates), against d.

Timings: per β, ours the median of ``--repeat`` runs (after a compiling warm-up), the authors' one run per β
(its cost does not depend on β: a fixed number of steps); both on the same threads (numba's count; torch set to
it). The full diagram's time is the sum over its β: ours measured for every β, the authors' measured on
``--authors-betas`` (indices; all with ``--authors-betas all``) and, where not all were run, estimated as their
median times the number of β (printed as such).

Agreement: the two estimates are independent (different initial draws), each a mean of R independent per-system
fractions in [0, 1]; their difference D is then a sum of 2R independent terms of range 1/R, and Hoeffding gives
P(|D − E D| >= ε) <= 2 exp(−R ε²): half-width ε = √(log(2/α)/R) at level α (0.060 for R = 1024, α = 0.05),
and √(log(2m/α)/R) for all m compared values at once (Bonferroni). Both converged in the step, E D = 0: the
check is max |D| <= the simultaneous half-width. ``--step-check`` also reruns one β with half the step, for both
codes from the same initial points (same seeds), and prints the largest change of each statistic.

Run:  python benchmarks/bench_phase_diagram.py --authors /path/to/phase-diagrams.py
      python benchmarks/bench_phase_diagram.py --systems 1024 --authors-betas all --authors PATH   (the full run)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time
import types
from pathlib import Path

import numba
import numpy as np

import meanfield as mf
import particles as pt
from particles import clusters

DELTA = 1e-3
CHECKPOINTS = 200  # the authors' torch.linspace(0, maxtime, 200)


def recorded_times(step: float, t_max: float, count: int = CHECKPOINTS) -> np.ndarray:
    """The times at which the authors' loop records its checkpoints: it adds ``step`` to a float clock and stores
    the statistic at each checkpoint t_k the clock has reached (t_k <= clock), so at the first step at or past
    t_k (at ``step`` for t_0 = 0); replayed here with the same float64 additions."""
    checkpoints = np.linspace(0.0, t_max, count)
    clock, k, out = 0.0, 0, []
    while True:
        clock += step
        while k < count and clock >= checkpoints[k]:
            out.append(clock)
            k += 1
        if clock >= t_max or k == count:
            return np.array(out)


def initial(n, d, systems, seed):
    return pt.uniform_sphere(n, d, rng=np.random.default_rng([seed, 3, n]), batch=systems)


def ours(beta, n, d, systems, times, dt, seed, chunk):
    """The statistic at ``times`` (shape (len(times),)) by particles.simulate (RK4 steps <= dt) +
    clusters.pair_fraction of the positions."""
    model = mf.SelfAttention(float(beta))
    x0 = initial(n, d, systems, seed)
    t_eval = np.concatenate([[0.0], times])
    total = np.zeros(t_eval.size)
    for start in range(0, systems, chunk):
        traj = pt.simulate(model, x0[start:start + chunk], t_eval, dt=dt, progress=False)
        total += clusters.pair_fraction(np.moveaxis(traj.x, 0, 1), DELTA).sum(axis=0)  # system-major: no copy
    return total[1:] / systems


def ours_span(beta, n, d, systems, times, dt, seed):
    """The same statistic as the study runner takes it where no positions are needed: ``particles.simulate(...,
    span_coordinates=True, observe=pair fraction)`` — the run reduced to each system's span and the statistic of its
    coordinates (inner products: the positions') taken at each output inside the run, no history kept."""
    model = mf.SelfAttention(float(beta))
    x0 = initial(n, d, systems, seed)
    t_eval = np.concatenate([[0.0], times])
    traj = pt.simulate(model, x0, t_eval, dt=dt, progress=False, span_coordinates=True,
                       observe=lambda c: clusters.pair_fraction(c, DELTA).mean())
    return traj.observed[1:]


def kernel_steps(n=32, dims=(32, 128), systems=256, steps=20, beta=4.0):
    """µs per system and RK4 step of particles.fused.rk4_small_systems (module docstring, ``--kernels``)."""
    from _timing import median
    from particles import fused, span

    rows = []
    for d in dims:
        x = pt.uniform_sphere(n, d, rng=0, batch=systems)
        O = np.linalg.qr(np.random.default_rng(1).standard_normal((d, d)))[0]
        ways = {"generic": (mf.SelfAttention(beta, Q=O, K=O), x), "zonal": (mf.SelfAttention(beta), x)}
        if n < d:
            ways["zonal, span"] = (mf.SelfAttention(beta), x @ span.basis(x))
        row = {name: median(lambda m=m, y=y: fused.rk4_small_systems(m, y, 0.01, steps)) / (systems * steps) * 1e6
               for name, (m, y) in ways.items()}
        rows.append((d, row))
        print(f"  d = {d:4d}: " + ", ".join(f"{k} {v:6.1f} µs" for k, v in row.items())
              + f"  (generic / fastest: {row['generic'] / min(row.values()):.1f}×)", flush=True)
    return rows


def load_authors(path):
    """The authors' script as a module, its CUDA device read as the CPU (the file itself is not changed)."""
    import torch  # noqa: F401  (ImportError: skipped by the caller)

    source = Path(path).read_text().replace("'cuda'", "'cpu'")
    module = types.ModuleType("authors_phase_diagrams")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def authors(module, betas, index, n, d, systems, t_max, step, seed):
    """The authors' statistic for β = betas[index] at its 200 checkpoints (its ``do_single_beta``)."""
    import torch

    args = argparse.Namespace(dmodel=d, ntokens=n, batch=systems, betamin=float(betas[0]), betamax=float(betas[-1]),
                              betas=len(betas), maxtime=t_max, step=step, use_softmax=True, randomV=0, randomKQ=0,
                              cluster_sizes=False, disable_tqdm=True, noanneal=0, rawstep=False, regen_period=0.0,
                              plotdim=False)
    module.args = args  # its step reads the command line's args as a global
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(seed)
    ret = {"betas_list": torch.tensor(np.asarray(betas, dtype=float)),
           "times_list": torch.linspace(0, t_max, CHECKPOINTS),
           "density_tensor": torch.zeros(len(betas), CHECKPOINTS),
           "cluster_tensor": torch.zeros(len(betas), CHECKPOINTS)}
    with contextlib.redirect_stdout(io.StringIO()):
        module.do_single_beta(args, index, ret)
    return ret["density_tensor"][index].numpy().astype(float)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--systems", type=int, default=1024)
    ap.add_argument("--betas", type=int, default=10, help="β values in [0.1, 9] (the authors' defaults)")
    ap.add_argument("--t-max", type=float, default=30.0)
    ap.add_argument("--c", type=float, default=2.0, help="our RK4 step factor: dt = c/(1 + β)")
    ap.add_argument("--authors", default=os.environ.get("PHASE_DIAGRAMS_PY"), help="the authors' phase-diagrams.py")
    ap.add_argument("--authors-step", type=float, default=0.01)
    ap.add_argument("--authors-betas", default="0,4,9", help="indices of the β the authors' code runs, or 'all'")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of ours per β (median)")
    ap.add_argument("--chunk", type=int, default=256, help="systems per call of ours")
    ap.add_argument("--step-check", action="store_true", help="rerun one β at half the step, both codes")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="threads of both codes (default numba's count)")
    ap.add_argument("--kernels", action="store_true", help="also time one RK4 step of each fused kernel")
    ap.add_argument("--ours-betas", default="all", help="indices of the β ours runs, or 'all' (the default)")
    args = ap.parse_args(argv)
    if args.threads is not None:
        numba.set_num_threads(args.threads)

    betas = np.linspace(0.1, 9.0, args.betas)
    times = recorded_times(args.authors_step, args.t_max)
    R, n, d = args.systems, args.n, args.d
    threads = numba.get_num_threads()
    if args.kernels:
        numba.set_num_threads(1)
        print(f"one RK4 step of one system, n = {n}, one thread (particles.fused.rk4_small_systems):")
        kernel_steps(n)
        numba.set_num_threads(threads)
    print(f"phase diagram, SA Q = K = V = I, n = {n}, d = {d}, {R} systems, {len(betas)} β in [0.1, 9], "
          f"T = {args.t_max:g}, δ = {DELTA:g}, {len(times)} recorded times; {threads} threads")

    ours(1.0, n, d, 4, times[:3], 1.0, args.seed, args.chunk)  # compile
    ours_span(1.0, n, d, 4, times[:3], 1.0, args.seed)
    p_ours, t_ours, t_span, gap = {}, {}, {}, 0.0
    mine = range(len(betas)) if args.ours_betas == "all" else [int(i) for i in args.ours_betas.split(",")]
    for i in mine:
        beta = betas[i]
        runs, span_runs = [], []
        for _ in range(args.repeat):  # the two ways in alternation
            t0 = time.perf_counter()
            p = ours(beta, n, d, R, times, args.c / (1 + beta), args.seed, args.chunk)
            runs.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            q = ours_span(beta, n, d, R, times, args.c / (1 + beta), args.seed)
            span_runs.append(time.perf_counter() - t0)
        gap = max(gap, float(np.max(np.abs(p - q))))
        p_ours[i], t_ours[i], t_span[i] = p, statistics.median(runs), statistics.median(span_runs)
        print(f"  ours     β = {beta:5.2f}: positions {t_ours[i]:7.2f} s, span {t_span[i]:7.2f} s (medians of "
              f"{args.repeat}; RK4 dt = {args.c / (1 + beta):.3f} cut to the recorded times)", flush=True)
    scale = len(betas) / len(mine)  # the whole diagram: measured, or the mean over the β run × their number
    how = "" if len(mine) == len(betas) else f" (estimated from {len(mine)} β)"
    whole_ours, whole_span = sum(t_ours.values()) * scale, sum(t_span.values()) * scale
    print(f"ours, the whole diagram: positions {whole_ours:.1f} s, span {whole_span:.1f} s{how} (the two statistics "
          f"differ by at most {gap:.1e})")

    if args.step_check:  # half the step taken (the output times cut dt = c/(1 + β) to at most their spacing)
        mid = len(betas) // 2 if len(betas) // 2 in p_ours else mine[0]
        taken = min(args.c / (1 + betas[mid]), float(np.median(np.diff(times))))  # the step inside an interval
        fine = ours(betas[mid], n, d, R, times, taken / 2, args.seed, args.chunk)
        change = np.max(np.abs(fine - p_ours[mid]))
        print(f"ours, step check at β = {betas[mid]:.2f}: max |p(h) − p(h/2)| = {change:.2e} (h = {taken:.3f}, same "
              "initial points)")

    module = None
    if args.authors is None or not Path(args.authors).is_file():
        print("authors' code: skipped (give the path of phase-diagrams.py with --authors or PHASE_DIAGRAMS_PY)")
    else:
        try:
            module = load_authors(args.authors)
        except ImportError as exc:
            print(f"authors' code: skipped ({exc}; `pip install torch` to run it)")
    if module is None:
        return

    import torch

    torch.set_num_threads(threads)
    chosen = range(len(betas)) if args.authors_betas == "all" else [int(i) for i in args.authors_betas.split(",")]
    chosen = [i for i in chosen if i in p_ours]
    p_auth, t_auth = {}, {}
    for i in chosen:
        t0 = time.perf_counter()
        p_auth[i] = authors(module, betas, i, n, d, R, args.t_max, args.authors_step, args.seed)
        t_auth[i] = time.perf_counter() - t0
        print(f"  authors' β = {betas[i]:5.2f}: {t_auth[i]:7.2f} s (Euler step {args.authors_step:g}, "
              f"{int(round(args.t_max / args.authors_step))} steps)", flush=True)
    if len(t_auth) == len(betas):
        full, how = sum(t_auth.values()), "measured"
    else:
        full = statistics.median(t_auth.values()) * len(betas)
        how = f"estimated: median of {len(t_auth)} β × {len(betas)}"
    print(f"authors', the whole diagram: {full:.1f} s ({how})")
    per_ours = statistics.median([t_ours[i] for i in chosen])
    per_span = statistics.median([t_span[i] for i in chosen])
    per_auth = statistics.median(t_auth.values())
    print(f"median per β over the β both ran: authors' {per_auth:.2f} s; ours {per_ours:.2f} s with positions "
          f"({per_auth / per_ours:.1f}× faster), {per_span:.2f} s from the span ({per_auth / per_span:.1f}×); whole "
          f"diagram {full / whole_ours:.1f}× and {full / whole_span:.1f}× (target >= 10×)")

    diff = np.array([p_ours[i] - p_auth[i] for i in chosen])
    m = diff.size
    eps = np.sqrt(np.log(2 / args.alpha) / R)
    eps_all = np.sqrt(np.log(2 * m / args.alpha) / R)
    worst = np.unravel_index(np.argmax(np.abs(diff)), diff.shape)
    print(f"agreement: max |p_ours − p_authors| = {np.max(np.abs(diff)):.4f} (β = {betas[list(chosen)[worst[0]]]:.2f}, "
          f"t = {times[worst[1]]:.2f}); mean |·| = {np.mean(np.abs(diff)):.4f}; Hoeffding half-width of the difference "
          f"√(log(2/α)/R) = {eps:.4f} pointwise, √(log(2m/α)/R) = {eps_all:.4f} for all m = {m} at once (α = "
          f"{args.alpha:g}): {'agree' if np.max(np.abs(diff)) <= eps_all else 'DISAGREE'}")

    if args.step_check:
        mid = len(betas) // 2
        a = authors(module, betas, mid, n, d, R, args.t_max, args.authors_step, args.seed)
        half_times = recorded_times(args.authors_step / 2, args.t_max)
        b = authors(module, betas, mid, n, d, R, args.t_max, args.authors_step / 2, args.seed)
        print(f"authors', step check at β = {betas[mid]:.2f}: max |p(h) − p(h/2)| = {np.max(np.abs(a - b)):.2e} "
              f"(same initial points; recorded times differ by at most {np.max(np.abs(half_times - times)):.3f})")


if __name__ == "__main__":
    main()
