"""A million particles on S¹ and S² (issue 50, item 2): one RK4 step of SA β = 4 by the point sums, its time split
into set-up, transforms and the rest, against the transforms' own cost measured in the same process.

The run: n = 10⁶ uniform random unit vectors (seeded), SelfAttention(β = 4) (Q = K = V = I), one RK4 step of
``particles.simulate(..., strategy="spectral")`` after a warm-up step; the median of ``--repeat`` (>= 5) steps, each
split into

- set-up: ``particles.system._plan`` (every check and choice before the first stage);
- transforms: the point sums' transforms themselves, 4 stages of them — on S¹ the compiled moments and series
  (``lane_moments``, ``lane_field``), on S² the non-uniform spherical-harmonic transforms
  (``nonuniform_moments``: ducc0's adjoint synthesis; ``nonuniform_synthesis``: its scalar and spin-1 syntheses);
  on an older tree without these names, the functions it calls instead (``fourier_moments`` and
  ``fourier.series``; ducc0's ``adjoint_synthesis_general``/``synthesis_general``);
- the rest: the RK4 combinations, the retraction, angles, assembling the field and its bound, Python.

The anchor, "the transforms' own cost", is measured alone in the same process, with the same sizes and accuracy,
one stage of it after each step (alternating: a shared machine's drifts hit both alike; the ratio is the median of
the pairs'):

- S¹: a type-1 NUFFT (n points → the 2L + 1 moments) and one type-2 NUFFT (2L + 1 modes → n points; the field's
  numerator and denominator are the real and imaginary parts of one complex series) by ducc0.nufft at the
  accuracy ``NUFFT_EPSILON`` = 2.5e-13 (the tolerance of the circle NUFFT the library used before; finufft
  where it imports), nthreads = numba's;
- S²: ducc0's ``adjoint_synthesis_general`` (n points → a_lm), ``synthesis_general`` of spin 0 (U) and spin 1 in
  mode "DERIV1" (∇U) at lmax = L, epsilon = ``NONUNIFORM_EPSILON``, one call each on the whole arrays,
  nthreads = numba's.

It prints step / (4 × anchor): how far a step is from four stages of bare transforms. Then the field's error against
the direct sum at 10³ random queries (numpy, float64, all 10⁶ points) beside the truncation bound the library
states and the transforms' own tolerance.

Run:  PYTHONPATH=. python benchmarks/bench_million.py            (add --profile for cProfile's top entries of one step,
      --n 100000 --repeat 5 for a quick look, --only S1 or S2 for one sphere; the absolute figures are for a quiet
      machine; the step's CPU time, all threads, is printed beside its wall time)
"""

import argparse
import cProfile
import io
import pstats
import statistics
import time

import numba
import numpy as np

import meanfield as mf
import particles
import particles.system as psys
from meanfield.domains.circle import fourier
from meanfield.domains.circle import point_sums as circle_sums
from meanfield.domains.sphere import point_sums as sphere_sums

from _timing import Clock  # benchmarks/ is the script's directory: on sys.path

BETA = 4.0
H = 0.01


def instrument(d, clock):
    """Wrap set-up and transforms; returns the undo functions."""
    undo = [clock.wrap(psys, "_plan", "setup")]
    if d == 2:
        if hasattr(circle_sums, "lane_moments"):
            undo += [clock.wrap(circle_sums, "lane_moments", "transforms"),
                     clock.wrap(circle_sums, "lane_field", "transforms")]
        else:  # an older tree
            undo += [clock.wrap(circle_sums, "fourier_moments", "transforms"),
                     clock.wrap(fourier, "series", "transforms")]
    else:
        if hasattr(sphere_sums, "nonuniform_moments"):
            undo += [clock.wrap(sphere_sums, "nonuniform_moments", "transforms"),
                     clock.wrap(sphere_sums, "nonuniform_synthesis", "transforms")]
        else:
            import ducc0.sht.experimental as sht

            undo += [clock.wrap(sht, "adjoint_synthesis_general", "transforms"),
                     clock.wrap(sht, "synthesis_general", "transforms")]
    return undo


def step_split(model, x, repeat, anchors):
    """One RK4 step (after a warm-up), ``repeat`` times, each followed by one stage of every anchor (alternating,
    so that a shared machine's drifts hit both alike). Returns the medians of (total, set-up, transforms), the best
    step, the medians of the anchors' stages, the medians of the ratios step / (4 × anchor) pair by pair, and the
    last trajectory. The fourth median is the step's CPU time (all threads: under load, what the step itself
    costs)."""
    run = lambda: particles.simulate(model, x, [0.0, H], dt=H, strategy="spectral", progress=False)  # noqa: E731
    run()
    for fn in anchors.values():
        fn()
    rows, stages, ratios = [], {k: [] for k in anchors}, {k: [] for k in anchors}
    for _ in range(repeat):
        clock = Clock()
        undo = instrument(x.shape[1], clock)
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            tr = run()
            total = time.perf_counter() - t0
            cpu = time.process_time() - c0
        finally:
            for u in undo:
                u()
        assert tr.nsteps == 1 and tr.nfev == 4
        rows.append((total, clock.spent.get("setup", 0.0), clock.spent.get("transforms", 0.0), cpu))
        for k, fn in anchors.items():
            t0 = time.perf_counter()
            fn()
            stages[k].append(time.perf_counter() - t0)
            ratios[k].append(total / (4 * stages[k][-1]))
    med = [statistics.median(r[i] for r in rows) for i in range(4)]
    return (med, min(r[0] for r in rows), {k: statistics.median(v) for k, v in stages.items()},
            {k: statistics.median(v) for k, v in ratios.items()}, tr)


#: the anchor NUFFT's relative accuracy (the tolerance the circle's non-uniform transforms used in the library)
NUFFT_EPSILON = 2.5e-13


def circle_anchor(x, L):
    """One stage's bare transforms on S¹ as callables: {name: fn}."""
    import ducc0

    th = np.arctan2(x[:, 1], x[:, 0])[:, None].copy()
    w = np.full(len(x), 1.0 / len(x)).astype(complex)
    modes = 2 * L + 1
    nt = numba.get_num_threads()
    eps = NUFFT_EPSILON
    grid = np.ones(modes, complex)

    def nufft():
        ducc0.nufft.nu2u(points=w, coord=th, out=np.empty(modes, complex), forward=True, epsilon=eps, nthreads=nt)
        ducc0.nufft.u2nu(grid=grid, coord=th, forward=False, epsilon=eps, nthreads=nt)

    out = {"ducc0.nufft type 1 + type 2": nufft}
    try:
        import finufft

        def fi():
            finufft.nufft1d1(th[:, 0], w, modes, eps=eps, nthreads=nt)
            finufft.nufft1d2(th[:, 0], grid, eps=eps, nthreads=nt)

        out["finufft type 1 + type 2"] = fi
    except ImportError:
        pass
    return out


def sphere_anchor(x, L):
    """One stage's bare transforms on S² (ducc0, whole arrays, numba's thread count) as a callable."""
    from ducc0.sht.experimental import adjoint_synthesis_general, synthesis_general

    loc = sphere_sums._angles(x)
    w = np.full(len(x), 1.0 / len(x))
    opts = dict(lmax=L, epsilon=sphere_sums.NONUNIFORM_EPSILON, nthreads=numba.get_num_threads())
    a = adjoint_synthesis_general(map=w[None], spin=0, loc=loc, **opts)

    def stage():
        adjoint_synthesis_general(map=w[None], spin=0, loc=loc, **opts)
        synthesis_general(alm=a, spin=0, loc=loc, **opts)
        synthesis_general(alm=a, spin=1, loc=loc, mode="DERIV1", **opts)

    return {"ducc0 adjoint + spin-0 + spin-1 synthesis": stage}


def direct_field(x, w, q, beta):
    """SA field P_q(Σ_j w_j e^{β⟨q,x_j⟩} x_j / Σ_j w_j e^{β⟨q,x_j⟩}) at the queries, by numpy in float64."""
    out = np.empty_like(q)
    for i0 in range(0, len(q), 16):
        qq = q[i0:i0 + 16]
        e = np.exp(beta * (qq @ x.T - 1.0)) * w
        avg = (e @ x) / e.sum(axis=1)[:, None]
        out[i0:i0 + 16] = avg - np.sum(avg * qq, axis=1)[:, None] * qq
    return out


def field_error(x, w, d, rng):
    q = particles.uniform_sphere(1000, d, rng=rng)
    field = circle_sums.circle_spectral_field if d == 2 else sphere_sums.sphere_spectral_field
    v, bound = field(x, w, q, BETA)
    ref = direct_field(x, w, q, BETA)
    return float(np.max(np.linalg.norm(v - ref, axis=1))), float(np.max(bound)), float(np.max(np.linalg.norm(ref,
                                                                                                             axis=1)))


def profile(model, x, top=12):
    run = lambda: particles.simulate(model, x, [0.0, H], dt=H, strategy="spectral", progress=False)  # noqa: E731
    run()
    pr = cProfile.Profile()
    pr.enable()
    run()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return s.getvalue()


def main():
    p = argparse.ArgumentParser(
        description="A million particles on S¹ and S²: the time of one RK4 step of SA β = 4 by the point sums "
                    "(particles.simulate, strategy 'spectral'), split into set-up, transforms and the rest, against "
                    "the bare transforms' cost measured in the same process (the ratio step / (4 × transforms)); "
                    "then the field's error against the direct sum at 10³ queries beside the stated bound. "
                    "The module docstring says what each part measures.",
        epilog="Quick look: PYTHONPATH=. python benchmarks/bench_million.py --n 100000 --repeat 5 --only S1")
    p.add_argument("--n", type=int, default=10**6, help="number of particles (default 10⁶)")
    p.add_argument("--repeat", type=int, default=5,
                   help="timed steps, each followed by one anchor measurement; the medians are printed (default 5)")
    p.add_argument("--profile", action="store_true",
                   help="also print cProfile's top entries (cumulative time) of one step")
    p.add_argument("--no-error", action="store_true", help="skip the direct sums at 10³ queries")
    p.add_argument("--only", choices=["S1", "S2"], help="one of the two spheres")
    args = p.parse_args()
    n = args.n
    model = mf.SelfAttention(BETA)
    print(f"n = {n}, SA beta = {BETA}, one RK4 step (dt = {H}) by the point sums, numba threads = "
          f"{numba.get_num_threads()}; medians of {args.repeat}; module: {circle_sums.__file__}")
    for d, name in ((2, "S1"), (3, "S2")):
        if args.only not in (None, name):
            continue
        x = particles.uniform_sphere(n, d, rng=0)
        w = np.full(n, 1.0 / n)
        L = circle_sums.circle_degree(BETA) if d == 2 else sphere_sums.sphere_degree(BETA)
        anchors = (circle_anchor if d == 2 else sphere_anchor)(x, L)
        (total, setup, transforms, cpu), best, stages, ratios, tr = step_split(model, x, args.repeat, anchors)
        rest = total - setup - transforms
        print(f"\n{name}: L = {L}; step {total:.3f} s = set-up {setup:.3f} + transforms {transforms:.3f} "
              f"+ rest {rest:.3f} (medians; best step {best:.3f} s; CPU {cpu:.3f} s); bound stated by the run: "
              f"{tr.field_error_bound:.2e}")
        for label, t in stages.items():
            print(f"  anchor {label}: {t * 1e3:.1f} ms per stage; step / (4 × anchor) = {ratios[label]:.2f} (median "
                  f"of the pairs); transforms / (4 × anchor) = {transforms / (4 * t):.2f} (medians)")
        if not args.no_error:
            err, bound, vmax = field_error(x, w, d, np.random.default_rng(7))
            # what else separates the two sums: the direct sum's round-off (10⁶ terms of size <= 1 whose sum is
            # |v| ~ 5e-3: ε log2(n) absolute, pairwise summation), the power recurrences' (2Lε) and, on S², the
            # transforms' tolerance relative to the terms they sum (~ the average's size, 1)
            eps = np.finfo(float).eps
            allowance = bound + (np.log2(n) + 2 * L) * eps + (0.0 if d == 2 else 10 * sphere_sums.NONUNIFORM_EPSILON)
            print(f"  field error at 10³ random queries vs direct sum: {err:.2e} (max |v| {vmax:.2e}, relative "
                  f"{err / vmax:.1e}); truncation bound stated {bound:.2e}; with round-off"
                  f"{'' if d == 2 else ' and the transforms tolerance'}: {allowance:.2e} -> "
                  f"{'within' if err <= allowance else 'ABOVE'}")
        if args.profile:
            print(profile(model, x))


if __name__ == "__main__":
    main()
