"""Long contexts (MATH.md §13): the one-layer limit at β_n = γ log n, and the critical scale of iid keys.

1. One attention layer θ' = N(A(θ)) on n equiangular tokens (⟨θ_i, θ_j⟩ = ρ) at β_n = γ log n, for n = 10², …, 10⁶
   and the three regimes a = γ(1 − ρ) < 1, = 1, > 1 (Chen, Lin, Polyanskiy & Rigollet, arXiv 2510.05554): the limit
   is 1, 4ρ/(1 + 3ρ), ρ (:func:`meanfield.analysis.exact.one_layer_limit`). Every n <= ``--particle-max`` (10⁶) is
   measured from particles through the library's own layer map (:func:`meanfield.solvers.depth.layer_map`, the one
   ``particles.discrete_depth`` calls, of nGPT's layer at hα = 1, which is θ' = N(A(θ)); β_n a ``ContextScaling``
   resolved with the n keys), and checked against the exact finite-n formula
   (:func:`meanfield.analysis.exact.one_layer_equiangular`); beyond it the value is that formula. The tokens need
   d = n + 1 dimensions (their Gram matrix (1 − ρ)I + ρ11ᵀ has rank n), but they have two non-zeros each: they are
   held sparse, and the layer is evaluated at three tokens (the first, middle and last: ``at=``), whose outputs need
   every key but no other output — O(n) time and memory (:func:`validation.long_context.one_layer_at`). The table
   prints per row the seconds (tokens and layer) and the memory NumPy/SciPy held at once (tracemalloc). The rate:
   the slope of |ρ'_n − limit| against n, fitted over the table's n, with the local slopes between consecutive n,
   against the predicted 2(1 − a), 1, a − 1 (:func:`meanfield.analysis.exact.one_layer_rate`).
2. iid keys on S^{d-1}, d = 2, 3, 4 (Bruno, Chen, Lin, Polyanskiy & Rigollet, arXiv 2605.08505): the β*(n) at which
   the mean largest attention weight E[p_(1)] is ½, for n = 10², 10^2.5, …, 10⁶, and the exponent of β*(n) fitted,
   with its 95 % interval from 10 independent groups of draws, against 2/(d − 1) (:mod:`validation.long_context`:
   the K nearest keys drawn exactly in law).

Run:  python scripts/long_context.py                 (particles to n = 10⁶; about a second a regime at 10⁶ and
                                                     0.3 GB; the iid keys take most of the run)
      python scripts/long_context.py --top 7         (n to 10⁷, particles too: 2.3 GB and 8-35 s a regime
                                                     on two loaded cores)
      python scripts/long_context.py --quick         (n up to 10⁵, fewer draws: about twenty seconds)
      python scripts/long_context.py --timing        (medians of 5: the sparse layer at n = 2000, 10⁵, 10⁶ against
                                                     the dense all-pairs one at n = 2000, in one process)
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from meanfield.analysis import exact
from validation import observed_order
from validation import long_context as lc

#: (γ, ρ) of the three regimes a = γ(1 − ρ) = 0.8, 1, 1.5: predicted rates n^-0.4, n^-1, n^-0.5 (distinct, so the
#: measured rate tells the regimes apart)
REGIMES = ((1.6, 0.5), (2.0, 0.5), (3.0, 0.5))


def peak_gb() -> float:
    """The process's peak resident memory (ru_maxrss: kB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def one_layer(ns, particle_max: int) -> None:
    for gamma, rho in REGIMES:
        a = gamma * (1.0 - rho)
        rows = lc.one_layer_table(ns, gamma, rho, particle_max)
        fit = observed_order(1.0 / np.array([r["n"] for r in rows], dtype=float), [r["error"] for r in rows])
        print(f"\nγ = {gamma:g}, ρ = {rho:g}: a = γ(1 − ρ) = {a:g}; limit {rows[0]['limit']:.10g}; "
              f"predicted rate n^-{exact.one_layer_rate(gamma, rho):g}")
        print(f"{'n':>9}  {'how':<9} {'ρ′_n':>18}  {'|ρ′_n − lim|':>12}  {'local rate':>10}  "
              f"{'|particles − formula|':>21}  {'spread, 3 pairs':>15}  {'seconds':>8}  {'memory':>9}")
        for i, r in enumerate(rows):
            local = "" if i == 0 else f"{fit.local_orders[i - 1]:.4f}"
            gap = "" if r["formula_gap"] is None else f"{r['formula_gap']:.1e}"
            spread = "" if r["spread"] is None else f"{r['spread']:.1e}"
            took = "" if r["seconds"] is None else f"{r['seconds']:.3g}"
            mem = "" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 1e6:.3g} MB"
            print(f"{r['n']:>9}  {r['how']:<9} {r['value']:18.15f}  {r['error']:12.4e}  {local:>10}  {gap:>21}  "
                  f"{spread:>15}  {took:>8}  {mem:>9}")
        print(f"fitted rate over n = {ns[0]:g}…{ns[-1]:g}: {fit.order:.4f} ± {fit.order_stderr:.4f} (regression "
              f"standard error; the sequence is deterministic, the local rates show the approach)")
        far = np.array([1e8, 1e10, 1e12])
        e = np.abs(exact.one_layer_equiangular(far, gamma, rho) - rows[0]["limit"])
        print(f"the formula further out, local rates between n = 1e8, 1e10, 1e12: "
              f"{np.round(-np.diff(np.log(e)) / np.diff(np.log(far)), 4)}")
    print(f"(peak resident memory of this process so far {peak_gb():.2f} GB)")


def iid_keys(ns, draws: int) -> None:
    print(f"\niid keys on S^(d-1): β*(n) with E[p_(1)] = 1/2 ({draws} draws per n, K = 256 nearest keys)")
    ends = f"β*(n) at n = {ns[0]}, {ns[-1]}"
    print(f"{'d':>2}  {'2/(d−1)':>8}  {'fitted exponent':>15}  {'95 % interval':>20}  {ends:>28}  local exponents")
    for d in (2, 3, 4):
        f = lc.critical_exponent(ns, d, draws=draws, groups=10, rng=d)
        lo, hi = f.interval
        print(f"{d:>2}  {2 / (d - 1):8.4f}  {f.exponent:15.4f}  [{lo:.4f}, {hi:.4f}]  "
              f"{f.beta[0]:12.4g}, {f.beta[-1]:12.4g}  {np.round(f.local, 3)}")


def timing(repeats: int = 5) -> None:
    """Medians of ``repeats`` runs, in one process: the dense layer map over all n² pairs at n = 2000 (the anchor:
    ``one_layer_pair_stats``, O(n³)) against the sparse layer at three tokens (``one_layer_at``) at n = 2000, 10⁵,
    10⁶ (O(n))."""
    def median(f):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    dense = median(lambda: lc.one_layer_pair_stats(2000, 2.0, 0.5))
    print(f"\ntiming (γ = 2, ρ = 0.5; medians of {repeats}): the dense layer map, all pairs, n = 2000: {dense:.3g} s")
    for n in (2000, 10 ** 5, 10 ** 6):
        t = median(lambda: lc.one_layer_at(n, 2.0, 0.5))
        print(f"  sparse, at 3 tokens, n = {n:>7}: {t:.3g} s = {t / dense:.3g} × the dense n = 2000 layer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n up to 10⁵, 500 draws")
    parser.add_argument("--top", type=int, default=None, help="n up to 10^top (6; 5 with --quick)")
    parser.add_argument("--particle-max", type=float, default=None,
                        help="largest n run as particles (default: every n of the table)")
    parser.add_argument("--timing", action="store_true",
                        help="only the timing: dense all pairs at n = 2000 against sparse at 3 tokens, medians of 5")
    args = parser.parse_args()
    start = time.perf_counter()
    if args.timing:
        timing()
        return
    top = args.top or (5 if args.quick else 6)
    particle_max = args.particle_max or 10 ** top
    one_layer([10 ** k for k in range(2, top + 1)], particle_max)
    iid_keys(np.round(np.logspace(2, top, 2 * (top - 2) + 1)).astype(np.int64), 500 if args.quick else 2000)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
