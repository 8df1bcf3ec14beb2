"""The long-context sweep (issue 48, Performance; MATH.md §13): n = 10², …, 10⁶ iid tokens at β_n = γ log n.

For n iid uniform tokens on S¹ and on S² (seeded), the model SA with β = ContextScaling.log(γ) (β_n = γ log n,
read by the particles with their n), and for each n:

- β_n, the strategy ``auto`` takes (the point sums, "spectral", where ``Domain.point_sums(d).pays_off(n, β_n)``),
  the truncation degree L(β_n) of the point sums (``point_sums(d).degree``: the smallest L whose tail is <= 1e-17 of
  the kernel's scale) and their certified bound on the field's truncation (the max over the tokens of the bound that
  ``point_sums(d).field`` returns) — L grows with β_n, so with n;
- one layer of depth h = 1, θ' = N(θ + h X[μ^n](θ)) (post-LN): by the library's layer map
  (``particles.discrete_depth``, which sums all n² pairs: its ``quadrature``) up to ``--pairs-max``, and the same
  map with the field from ``particles.velocity`` (strategy ``auto``, the point sums at large n) for every n; where
  both run, their largest difference;
- a unit of depth, ``particles.simulate`` to t = 1 (RK4, its own step 0.05/rate scale, strategy ``auto``) up to
  ``--unit-max``: time, steps, field evaluations; beyond it the time extrapolated as (4 × the steps the step rule
  takes at β_n) × (the measured time of one field evaluation at that n) — stated as extrapolated;
- where the time goes: the top entries of cProfile of one field evaluation (tottime).

Timings are of one run on a machine that may be loaded (say so when quoting them); the first evaluation of each
compiled path is made before any timing (warm-up).

Run:  PYTHONPATH=. python benchmarks/bench_long_context.py            (about 3 minutes on two loaded cores)
      PYTHONPATH=. python benchmarks/bench_long_context.py --quick    (n up to 10⁵, units of depth up to 10³)
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import particles  # noqa: E402
from meanfield.domains import get  # noqa: E402
from meanfield.models import ContextScaling, SelfAttention, at_context, rate_scale  # noqa: E402

DOMAINS = {2: "circle", 3: "sphere"}


def tokens(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clock(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def layer_by_velocity(model, x, h=1.0):
    """θ' = N(θ + h X[μ^n](θ)), the field from particles.velocity (strategy auto)."""
    y = x + h * particles.velocity(model, x)
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def where_it_goes(fn, top: int = 3) -> str:
    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s)
    total = st.total_tt
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:top]
    parts = [f"{name if f == '~' else Path(f).stem + '.' + name} {tt / total:.0%}"
             for (f, _, name), (_, _, tt, _, _) in rows]
    return ", ".join(parts)


def steps_to_unit_depth(model_n) -> int:
    """The RK4 steps ``particles.simulate`` takes to t = 1 at its default step 0.05/rate scale
    (Domain.particle_step)."""
    return math.ceil(1.0 / (0.05 / rate_scale(model_n)) - 1e-9)


def sweep(d: int, ns, gamma: float, pairs_max: int, unit_max: int, profile_from: int) -> None:
    domain = get(DOMAINS[d])
    sums = domain.point_sums(d)
    model = SelfAttention(ContextScaling.log(gamma))
    # warm-up: the compiled paths (pairwise, point sums) once at small n
    xw = tokens(2000, d, 0)
    for strategy in ("pairwise", "spectral"):
        particles.velocity(model, xw, strategy=strategy)
    particles.discrete_depth(model, xw[:200], depth=1.0, layers=1)
    print(f"\n### S^{d - 1}: n iid uniform tokens, SA, β_n = {gamma:g} log n, one layer of depth 1 and a unit of "
          "depth\n")
    print("| n | β_n | auto | L(β_n) | bound (field) | layer: pairs | layer: auto | |pairs − auto| | "
          "unit depth: steps | unit depth: time | where one field evaluation goes |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|")
    t_pairs_last = n_pairs_last = None
    for n in ns:
        x = tokens(n, d, seed=n)
        model_n = at_context(model, n)
        beta = float(model_n.beta)
        L = sums.degree(beta)
        auto = "spectral" if sums.pays_off(n, beta) else "pairwise"
        w = np.full(n, 1.0 / n)
        if auto == "spectral":
            _, bound = sums.field(x, w, x, beta, True, 1.0)
            bound_text = f"{float(np.max(bound)):.1e}"
        else:
            bound_text = "0 (all pairs)"
        y_auto, t_auto = clock(lambda: layer_by_velocity(model, x))
        _, t_eval = clock(lambda: particles.velocity(model, x))
        if n <= pairs_max:
            y_pairs, t_pairs = clock(lambda: particles.discrete_depth(model, x, depth=1.0, layers=1).x[-1])
            pairs_text, diff_text = f"{t_pairs:.3g} s", f"{np.max(np.abs(y_pairs - y_auto)):.1e}"
        else:
            pairs_text = f"~{t_pairs_last * (n / n_pairs_last) ** 2:.3g} s (extrapolated ∝ n²)"
            diff_text = ""
        if n <= pairs_max:
            t_pairs_last, n_pairs_last = t_pairs, n
        steps = steps_to_unit_depth(model_n)
        if n <= unit_max:
            tr, t_unit = clock(lambda: particles.simulate(model, x, [0.0, 1.0], progress=False))
            assert tr.nsteps == steps, (tr.nsteps, steps)  # the step rule the extrapolation uses
            unit_text = f"{t_unit:.3g} s ({tr.strategy}, {tr.nfev} evaluations)"
        else:
            unit_text = f"~{4 * steps * t_eval:.3g} s (extrapolated: {4 * steps} × {t_eval:.3g} s)"
        split = where_it_goes(lambda: particles.velocity(model, x)) if n >= profile_from else ""
        print(f"| {n:.0e} | {beta:.2f} | {auto} | {L} | {bound_text} | {pairs_text} | {t_auto:.3g} s | {diff_text} | "
              f"{steps} | {unit_text} | {split} |", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n up to 10⁵, units of depth up to 10³")
    ap.add_argument("--gamma", type=float, default=1.0, help="γ in β_n = γ log n (default 1)")
    ap.add_argument("--pairs-max", type=int, default=None, help="largest n through the pair sums (10⁴; quick 10³)")
    ap.add_argument("--unit-max", type=int, default=None, help="largest n run to t = 1 (10⁴ on S², 10³ on S¹; "
                    "quick 10³)")
    args = ap.parse_args(argv)
    if not args.gamma > 0:
        ap.error(f"--gamma must be > 0, got {args.gamma}")
    top = 5 if args.quick else 6
    ns = [10 ** k for k in range(2, top + 1)]
    start = time.perf_counter()
    for d in (2, 3):
        pairs_max = args.pairs_max or (10 ** 3 if args.quick else 10 ** 4)
        unit_max = args.unit_max or (10 ** 3 if args.quick or d == 2 else 10 ** 4)
        sweep(d, ns, args.gamma, pairs_max, unit_max, profile_from=10 ** 4)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
