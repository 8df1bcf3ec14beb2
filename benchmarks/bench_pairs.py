"""Pair sums against the machine's limit: pairs per second per core beside the roofline, in one run.

The fused pairwise field X_i = P_{x_i}⊥ Σ_j w_j e^{β⟨x_i,x_j⟩ − s_i} x_j / Σ_j w_j e^{β⟨x_i,x_j⟩ − s_i} of
n = 4096 particles on S^{d−1} (SA, β = 4; :func:`meanfield.kernels.field`) for d = 2, 3, 16, 128, on one and two
threads: the default kernel (the anchor: d <= 8 one query per pass over the keys, unrolled; d > 8 blocks of 16
queries over blocks of 256 keys), the same at LLVM's own vector width ('256-bit':
:data:`meanfield.kernels.pairwise.WIDE_VECTORS` off — 256-bit vectors on AVX-512 cores, the kernel before), the
unrolled kernel over blocks of 2 and 4 queries (d <= 8: :data:`meanfield.kernels.pairwise.QUERY_BLOCK`), single
precision ('single': float32 exponentials of float64 scores, float64 sums; and for d <= 8 'float32', the float32
kernel before it: :data:`meanfield.kernels.pairwise.SINGLE_SUMS_IN_DOUBLE` off), and plain NumPy (Gram matrix, exp,
matmul); then the anchor's speed-up on two threads against one. Timings of one row are interleaved
(:func:`_timing.interleaved`: a burst of load hits every variant alike), so the ratios to the anchor are meaningful
on a loaded machine where the absolute rates are not.

Two threads against one (:func:`thread_scaling`): ``--repeat`` pairs of blocks, a block being one warm-up call then
the calls that last ~0.2 s on one thread count, the two blocks of a pair in alternating order (1, 2 then 2, 1); the
figure is the median over the pairs of t(1 thread) / t(2 threads), with its range. A block measures the steady
state of each thread count (the pool's threads awake, the caches warm), which the alternating single calls of
``interleaved`` mixed with the switch between counts (their figure varied 1.65-1.82 run to run on a quiet machine
where blocks gave 1.85-1.90 at d = 3).

Flops per pair, as the kernels compute them (d_v = d, the values V x_j):

    dot product ⟨Qx_i, Kx_j⟩          d FMAs                              2d
    shift  − s_i                                                          1
    exponential (fastexp.vexp)        clamp (min, max)                    2
                                      k = ⌊x log₂e + ½⌋ (FMA, floor)       3
                                      r = x − k c₁ − k c₂ (two FMAs)      4
                                      degree-11 polynomial (Horner FMAs)  22
                                      × 2^k (exponent bits: integer ops)   1
    weight  w_j · e                                                       1
    row sum  z += e                                                       1
    value sums  s_a += e · v_a        d_v FMAs                            2d
                                                                          ─────
                                                                          4d + 35

(uniform weights drop the weight product: 4d + 34 — the unrolled kernel, d <= 8, multiplies once per row; the
blocked kernel, d > 8, keeps the product: 4d + 35; not counted: loads, the integer work of 2^k, the float→int
conversion of k). d = 3: 46 flops.

Roofline = clock × flops per cycle / flops per pair, flops per cycle = 2 (FMA) × 2 (FMA units: AMD Zen 2–5, Intel
server cores; an assumption, stated: Xeons with one 512-bit FMA unit have half this roofline at 8 lanes) × lanes;
the lanes of the machine from its flags (avx512f: 8 doubles, avx2: 4, else 2), and of the code as compiled (zmm
registers in the kernel's assembly: 8, else ymm: 4 — LLVM compiles for 256-bit vectors on most AVX-512 cores,
``prefer-256-bit``, unless the kernel asks for 512: :func:`meanfield.core.vectors.wide_vectors`), the clock
from ``lscpu`` (max MHz) or /proc/cpuinfo (the nominal clock: a core that turbos above it runs above its roofline
share as printed). Every flop counts alike, though the exponential's 2^k and rounding are not FMAs: a pair at d = 3
is ~30 vector instructions on the FP ports for 46 flops, so ~75 % of this roofline is the most the kernel's
instruction mix allows on two FP ports.

Correctness: each variant's field against plain NumPy's, max |ΔX| / max |X| <= 1e-11 in double precision (error
model: each of the n positive terms of a row's sums carries ~1 ulp from vexp and the sums' reassociation adds at
most n·u ≈ 9e-13 relative to Σ_j |terms| at n = 4096 (u = 1.1e-16); NumPy's own error is of the same order; 10×
margin), and single precision's, max |ΔX| / max |X| (uniform points: the field cancels to |X| ~ 0.01–0.04 of its
terms), judged against :data:`meanfield.kernels.pairwise.SINGLE_PRECISION_ERROR` (its error model there); beside it
max_i |ΔX_i| / T_i with T_i = Σ_j p_ij |x_j| = 1 (unit points: the scale of the terms; column 'err/terms').

With ``--compare-rounds`` the same figure also with the static round of :func:`meanfield.kernels.threads.run_tasks`
before its claimed chunks (:func:`static_round`), blocks of one thread, two threads static and two claimed
alternating.

Run:  python benchmarks/bench_pairs.py [--n 4096] [--repeat 7] [--dims 2,3,16,128] [--threads-only]
      [--compare-rounds]
"""

import argparse
import math
import os
import re
import shutil
import subprocess
import time

import numba
import numpy as np

import meanfield as mf
from meanfield import kernels
from meanfield.kernels import pairwise
from particles import uniform_sphere
from _timing import interleaved

BETA = 4.0
DOUBLE_TOL = 1e-11


def flops_per_pair(d: int, uniform: bool = True) -> int:
    """Flops of one pair (module docstring): 4d + 35, one less for uniform weights."""
    return 4 * d + 35 - (1 if uniform else 0)


def machine():
    """(clock in Hz, lanes of the machine's widest vectors, where the clock came from)."""
    clock, source = None, ""
    if shutil.which("lscpu"):
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        m = re.search(r"CPU max MHz:\s*([0-9.]+)", out)
        if m:
            clock, source = float(m.group(1)) * 1e6, "lscpu max MHz"
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if clock is None and line.startswith("cpu MHz"):
                clock, source = float(line.split(":")[1]) * 1e6, "/proc/cpuinfo cpu MHz"
            if line.startswith("flags"):
                flags = set(line.split(":")[1].split())
    lanes = 8 if "avx512f" in flags else 4 if "avx2" in flags else 2
    return clock, lanes, source


def compiled_lanes() -> int:
    """The vector width (doubles) of the unrolled kernel as LLVM compiled it: zmm registers in its assembly → 8."""
    x = uniform_sphere(64, 3, rng=0)
    pairwise.pairwise_sums(x, np.full(64, 1 / 64), x, BETA)
    asm = "".join(next(iter(pairwise._FUSED.values())).inspect_asm().values())
    return 8 if "zmm" in asm else 4 if "ymm" in asm else 2


def numpy_field(x, w, beta):
    """The plain NumPy sum: Gram matrix, shifted exp, matmul, tangent projection."""
    G = x @ x.T
    E = np.exp(beta * (G - G.max(axis=1, keepdims=True))) * w
    U = (E @ x) / E.sum(axis=1, keepdims=True)
    return U - np.sum(U * x, axis=1, keepdims=True) * x


def variant(model, x, w, block=1, precision="double", wide=True, sums_in_double=True):
    def run():
        pairwise.QUERY_BLOCK, pairwise.WIDE_VECTORS, pairwise.SINGLE_SUMS_IN_DOUBLE = block, wide, sums_in_double
        try:
            return kernels.field(model, x, w, x, precision=precision)
        finally:
            pairwise.QUERY_BLOCK, pairwise.WIDE_VECTORS, pairwise.SINGLE_SUMS_IN_DOUBLE = 1, True, True
    return run


def thread_scaling(fn, repeat: int, block_time: float = 0.2):
    """t(1 thread) / t(2 threads) of ``fn``: per pair of blocks (module docstring), the ratio of the mean times per
    call of a block on one thread and a block on two, the blocks of a pair in alternating order. Returns the ratios."""
    def block(threads, number):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        fn()  # the warm-up call of the block
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number

    number = max(1, min(50, math.ceil(block_time / block(1, 1))))
    ratios = []
    for k in range(repeat):
        t = {threads: block(threads, number) for threads in ((1, 2) if k % 2 == 0 else (2, 1))}
        ratios.append(t[1] / t[2])
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return ratios


def static_round(kernel, args, start, stop, nthreads, costs):
    """:func:`meanfield.kernels.threads._round` before the claimed chunks: one static chunk per thread (equal
    counts), submitted to the pool while the calling thread waits (the comparison of ``--compare-rounds``)."""
    import itertools

    from meanfield.core.pool import executor

    if nthreads <= 1 or stop - start <= 1:
        kernel(*args, start, stop)
        return
    bounds = [start + (stop - start) * c // nthreads for c in range(nthreads + 1)]
    for f in [executor(nthreads).submit(kernel, *args, a, b) for a, b in itertools.pairwise(bounds)]:
        f.result()


def compare_rounds(fn, repeat: int):
    """t(1 thread) / t(2 threads) with the static round and with the claimed chunks, in alternating blocks of ~0.2 s
    (the 1-thread block shared): medians over ``repeat`` rounds of the three blocks."""
    from meanfield.kernels import threads

    claimed = threads._round

    def on(threads_, rnd):
        def run():
            threads._round = rnd
            numba.set_num_threads(min(threads_, numba.config.NUMBA_NUM_THREADS))
            try:
                return fn()
            finally:
                threads._round = claimed
        return run

    fns = {"one": on(1, claimed), "static": on(2, static_round), "claimed": on(2, claimed)}
    number = None
    times = {k: [] for k in fns}
    for r in range(repeat):
        for k in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
            fns[k]()
            if number is None:
                t0 = time.perf_counter()
                fns[k]()
                number = max(1, min(50, math.ceil(0.2 / (time.perf_counter() - t0))))
            t0 = time.perf_counter()
            for _ in range(number):
                fns[k]()
            times[k].append((time.perf_counter() - t0) / number)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return {k: [a / b for a, b in zip(times["one"], times[k])] for k in ("static", "claimed")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dims", default="2,3,16,128", help="comma-separated dimensions d (default 2,3,16,128)")
    ap.add_argument("--threads-only", action="store_true", help="only the anchor's two threads against one")
    ap.add_argument("--compare-rounds", action="store_true",
                    help="two threads against one with the static round (before) and the claimed chunks (now)")
    args = ap.parse_args()
    n = args.n
    clock, lanes, source = machine()
    built = compiled_lanes()
    per_cycle = {"machine": 2 * 2 * lanes, "compiled": 2 * 2 * built}
    print(f"clock {clock / 1e9:.3g} GHz ({source}); vectors: {lanes} doubles (flags), {built} as compiled; "
          f"{per_cycle['machine']} / {per_cycle['compiled']} flops per cycle per core (2 FMA units assumed); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"n = {n}, SA β = {BETA}, uniform weights; rates in 10⁹ pairs/s per core (two threads: per core = "
          "total / 2); ratio: time of the anchor / time of the variant, interleaved medians")
    print(f"{'d':>4} {'thr':>3} {'variant':<14} {'rate/core':>9} {'% roof':>7} {'% roof c':>8} {'× anchor':>8} "
          f"{'max|ΔX|/max|X|':>15} {'err/terms':>9}")
    model = mf.SelfAttention(BETA)
    for d in (int(a) for a in args.dims.split(",")):
        x = uniform_sphere(n, d, rng=1)
        w = np.full(n, 1.0 / n)
        ref = numpy_field(x, w, BETA)
        scale = np.max(np.abs(ref))
        fpp = flops_per_pair(d, uniform=d <= pairwise.UNROLL_MAX)  # the blocked kernel keeps w_j per pair
        roof = {k: clock * v / fpp for k, v in per_cycle.items()}
        cands = [("anchor", variant(model, x, w)), ("256-bit", variant(model, x, w, wide=False))]
        if d <= pairwise.UNROLL_MAX:
            cands += [("block 2", variant(model, x, w, 2)), ("block 4", variant(model, x, w, 4))]
        cands.append(("single", variant(model, x, w, 1, "single")))
        if d <= pairwise.UNROLL_MAX:
            cands.append(("float32", variant(model, x, w, 1, "single", sums_in_double=False)))
        cands.append(("numpy", lambda: numpy_field(x, w, BETA)))
        for threads in ((1, 2) if not args.threads_only else ()):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            anchor = cands[0][1]
            for name, fn in cands:
                got = fn()
                err = np.max(np.abs(got - ref)) / scale
                terms = np.max(np.linalg.norm(got - ref, axis=-1))  # T_i = Σ_j p_ij |x_j| = 1
                if name == "anchor":
                    ta, tb, _ = interleaved(anchor, anchor, repeat=args.repeat, min_time=0.2)
                    t = min(ta, tb)
                    ratio = 1.0
                else:
                    ta, t, ratios = interleaved(anchor, fn, repeat=args.repeat, min_time=0.2)
                    ratio = float(np.median(ratios))
                rate = n * n / t / threads / 1e9
                ok = "" if name in ("single", "float32", "numpy") or err <= DOUBLE_TOL else "  FAILS 1e-11"
                if name == "single" and err > pairwise.SINGLE_PRECISION_ERROR:
                    ok = f"  FAILS {pairwise.SINGLE_PRECISION_ERROR:g}"
                print(f"{d:>4} {threads:>3} {name:<14} {rate:9.3f} {100 * rate * 1e9 / roof['machine']:6.1f}% "
                      f"{100 * rate * 1e9 / roof['compiled']:7.1f}% {ratio:8.2f} {err:15.1e} {terms:9.1e}{ok}")
        if args.compare_rounds:
            for k, r in compare_rounds(cands[0][1], args.repeat).items():
                print(f"     two threads against one, d = {d}, {k} round: {np.median(r):.2f}x [{min(r):.2f}, "
                      f"{max(r):.2f}]; load average {os.getloadavg()[0]:.1f}")
        ratios = thread_scaling(cands[0][1], args.repeat)
        print(f"     two threads against one, d = {d} (anchor; median of {args.repeat} pairs of ~0.2 s blocks, "
              f"[range]): {np.median(ratios):.2f}x [{min(ratios):.2f}, {max(ratios):.2f}]; load average "
              f"{os.getloadavg()[0]:.1f}")
        print(f"     roofline d = {d}: {fpp} flops/pair → {roof['machine'] / 1e9:.3f} (machine), "
              f"{roof['compiled'] / 1e9:.3f} (as compiled) 10⁹ pairs/s per core")


if __name__ == "__main__":
    main()
