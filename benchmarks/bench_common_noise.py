"""What a common noise costs a density step, side by side in one run (issue 48: <= 1.2×; MATH.md §13).

A run of 40 steps of SA β = 4 on S¹ (n = 256 and 1024 nodes, RK4 with dt = the path's step h = 0.01):

- noiseless: ``meanfield.solve(..., representation="grid", dt=h, refine=False)``, today's grid run;
- common noise: ``meanfield.solve(..., common_noise=)`` on a CommonPath with the same h, one noise map per step
  between the RK4 steps: a rotation (skew Σ: the Fourier shift) and a general Σ (the interpolant at the preimages
  times the Jacobian: local Lagrange interpolation on σn nodes, σ and the stencil from the spectrum's a-priori
  bound, ``fourier.linear_pushforward``; 8-10 nodes on the n nodes themselves here);
  the general Σ on a path of step 2h (one map per two RK4 steps of h); and the general Σ with the map as it was
  (the interpolant at the preimages by ducc0's non-uniform FFT ``u2nu`` at 2.5e-13, whose set-up is paid every map
  since the points change every map; ``_nufft_pushforward`` patched in for that row only): the before/after ratio
  in the same run.
- three rows on S² (lmax = 31, 20 steps): a rotation (Wigner rotation of the coefficients), a general Σ (p × p
  Lagrange stencils on an equiangular grid, σ and p from the spectrum's a-priori bound: ``sphere.pushforward``) and
  the general Σ with the map as it was (ducc0's non-uniform synthesis at the preimages, patched in for that row).

A second table times one general-Σ map on S¹ alone — now (σ and the stencil from the bound), with the fixed
(4n nodes, 32) stencil of the version before and by the NUFFT of the one before that — against the 4 right-hand
sides of a noiseless RK4 step (without the integrator's trackers, which the first table's steps include).

The timings are medians of >= 5 timings (each the mean of calls lasting ~0.1 s) taken in alternation
(``_timing.interleaved``); the ratio is per step (the same number of steps in both), in one run of this script.

Run:  PYTHONPATH=. python benchmarks/bench_common_noise.py [--repeat 7]   (from the repository root)
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import meanfield as mf  # noqa: E402
from meanfield.domains.circle import fourier  # noqa: E402
from meanfield.models.common_noise import CommonNoise, CommonPath  # noqa: E402

from _timing import interleaved  # noqa: E402

LINEAR_PUSHFORWARD = fourier.linear_pushforward

J = np.array([[0.0, -1.0], [1.0, 0.0]])
SIGMAS = {"rotation (skew Σ = 0.5 J)": 0.5 * J,
          "general Σ (0.4 diag(1, −1) + 0.5 J)": np.array([[0.4, -0.5], [0.5, -0.4]])}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    if args.repeat < 5:
        ap.error("--repeat must be >= 5 (medians of at least 5)")
    h, steps = 0.01, 40
    t = np.array([0.0, steps * h])
    model = mf.SelfAttention(4.0)
    print("| density step on S¹, SA β = 4 | n | common noise | noiseless | ratio (median of pairs) |\n"
          "|---|---|---|---|---|")
    for n in (256, 1024):
        g = mf.CircleGrid(n)
        mu = mf.Density.from_function(g, lambda x: np.exp(1.5 * x[..., 0] + 0.4 * x[..., 1]))
        general = SIGMAS["general Σ (0.4 diag(1, −1) + 0.5 J)"]
        for (name, S), path_step, before in [(item, h, False) for item in SIGMAS.items()] + [
                (("general Σ, path step 2h", general), 2 * h, False),
                (("general Σ, the map as before (NUFFT)", general), h, True)]:
            noise = CommonNoise(S, CommonPath(1, path_step, t[-1], seed=1))
            if before:  # the same run with the map as it was: the NUFFT in place of the Lagrange interpolation
                fourier.linear_pushforward = _nufft_pushforward
            try:
                print(against_noiseless(name, n, model, mu, t, h, steps, noise, args.repeat))
            finally:
                fourier.linear_pushforward = LINEAR_PUSHFORWARD
    sphere_rows(args.repeat)
    maps_table(args.repeat)
    sphere_maps_table(args.repeat)


def against_noiseless(name, size, model, mu, t, h, steps, noise, repeat) -> str:
    """One table row: the density step with the common ``noise`` against the noiseless one (same model, start and
    fixed step h, ``steps`` steps each), timed alternately; the path's maps are made once beforehand, as a run that
    reuses its path."""
    noise.half_maps()

    def noisy():
        sol = mf.solve(model, mu, (t[0], t[-1]), t_eval=t, dt=h, common_noise=noise)
        assert sol.nsteps == steps, sol.nsteps

    def plain():
        sol = mf.solve(model, mu, (t[0], t[-1]), t_eval=t, dt=h, representation="grid", refine=False)
        assert sol.nsteps == steps, sol.nsteps

    a, b, ratios = interleaved(noisy, plain, repeat=repeat, min_time=0.1)
    return (f"| {name} | {size} | {1e3 * a / steps:.3f} ms/step | {1e3 * b / steps:.3f} ms/step | "
            f"{np.median(ratios):.3f} |")


def sphere_rows(repeat):
    """The same on S² (lmax = 31, 20 steps): a rotation (Wigner rotation of the coefficients) and a general Σ (the
    expansion at the preimages by ducc0's non-uniform synthesis)."""
    h, steps = 0.01, 20
    t = np.array([0.0, steps * h])
    model = mf.SelfAttention(4.0)
    g = mf.SphereGrid(31)
    mu = mf.Density.from_function(g, lambda x: np.exp(1.5 * x[..., 0] + 0.4 * x[..., 2]))
    J3 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    general = np.array([[0.4, -0.5, 0.1], [0.5, -0.4, 0.0], [0.0, 0.2, 0.0]])
    from meanfield.domains.sphere.grid import SphereGrid

    now = SphereGrid.linear_transport
    for name, S, before in (("S², rotation (skew Σ = 0.5 J₃)", 0.5 * J3, False), ("S², general Σ", general, False),
                            ("S², general Σ, the map as before (ducc0 synthesis_general)", general, True)):
        noise = CommonNoise(S, CommonPath(1, h, t[-1], seed=1))
        if before:
            SphereGrid.linear_transport = _sphere_map_before
        try:
            print(against_noiseless(name, "lmax 31", model, mu, t, h, steps, noise, repeat))
        finally:
            SphereGrid.linear_transport = now


def _sphere_map_before(grid, values, B, spectrum=None):
    """SphereGrid.linear_transport of a general B as it was: the expansion at the preimages by ducc0's non-uniform
    synthesis (1e-14, its threads)."""
    from meanfield.domains.sphere.transforms import evaluate

    B = np.asarray(B, dtype=float)
    pre = grid.points @ np.linalg.inv(B).T
    r = np.linalg.norm(pre, axis=-1)
    c = grid.coefficients(values) if spectrum is None else spectrum
    return evaluate(c, pre / r[..., None]) / (np.linalg.det(B) * r ** 3)


def _nufft_pushforward(values, B, cos, sin, **_):
    """fourier.linear_pushforward as it was: ρ at the preimages by ducc0's type-2 NUFFT (2.5e-13)."""
    from ducc0.nufft import u2nu

    (a, b), (c, d) = B
    px, py = d * cos - b * sin, a * sin - c * cos
    n = values.shape[-1]
    D = fourier.interpolant_coefficients(fourier.coefficients(values), n)
    K = n // 2
    spectrum = np.zeros(2 * K + 2, dtype=complex)
    spectrum[K + 1:] = D
    spectrum[1:K + 1] = np.conj(D[:0:-1])
    theta = np.ascontiguousarray(np.arctan2(py, px))
    rho = u2nu(grid=spectrum, coord=theta[:, None], forward=False, epsilon=2.5e-13).real
    return rho * ((a * d - b * c) / (px * px + py * py))


def _nufft_map(grid, values, B):
    """The general-Σ map as it was before (kept here to time it): ρ at the preimages by ducc0's type-2 NUFFT."""
    return _nufft_pushforward(values, B, grid.points[:, 0], grid.points[:, 1])


def maps_table(repeat):
    from meanfield.representations.grid import GridProblem

    B = np.array([[1.04, -0.06], [0.05, 0.97]])  # a general map of the size of one path step's
    print("\n| one general-Σ map vs the 4 right-hand sides of an RK4 step, S¹ | n | (σ, p) | map now | fixed (4, 32) | "
          "NUFFT | 4 rates | now/step | fixed/step | NUFFT/step | a-priori bound now / Σ|ρ̂| | "
          "max |now − NUFFT| / max ρ |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (256, 1024):
        g = mf.CircleGrid(n)
        y = mf.Density.from_function(g, lambda x: np.exp(1.5 * x[..., 0] + 0.4 * x[..., 1])).values
        problem = GridProblem(mf.SelfAttention(4.0), g, "auto", refine=False, max_n=n, t0=0.0)
        problem.probe(y)
        sigma, p, bound = fourier.pushforward_stencil(fourier.rfft(y), n)
        now, before = g.linear_transport(y, B), _nufft_map(g, y, B)
        diff = np.max(np.abs(now - before)) / np.max(now)
        cos, sin = g.points[:, 0].copy(), g.points[:, 1].copy()
        fns = {"now": lambda: g.linear_transport(y, B), "fixed": lambda: fourier.linear_pushforward(
               y, B, cos, sin, stencil=(4, 32)), "before": lambda: _nufft_map(g, y, B),
               "step": lambda: [problem.rate(y) for _ in range(4)]}
        m = alternating_medians(fns, repeat, 20)
        print(f"| | {n} | ({sigma}, {p}) | {1e6 * m['now']:.1f} µs | {1e6 * m['fixed']:.1f} µs | "
              f"{1e6 * m['before']:.1f} µs | {1e6 * m['step']:.1f} µs | {m['now'] / m['step']:.3f} | "
              f"{m['fixed'] / m['step']:.3f} | {m['before'] / m['step']:.3f} | {bound:.1e} | {diff:.1e} |")



def alternating_medians(fns, repeat, calls):
    """Seconds per call of each function of ``fns`` (a dict): one warm-up call each, then ``repeat`` rounds of
    ``calls`` calls of each, the order of the functions reversed every other round; the medians over the rounds."""
    times = {k: [] for k in fns}
    for f in fns.values():
        f()
    for r in range(repeat):
        for k, f in (fns.items() if r % 2 == 0 else reversed(fns.items())):
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            times[k].append((time.perf_counter() - t0) / calls)
    return {k: statistics.median(v) for k, v in times.items()}

def sphere_maps_table(repeat):
    """One general-Σ map on S² (lmax 31) now and as before against the 4 right-hand sides of an RK4 step, on the
    start of the S² rows and on the density after their 20 steps (SA β = 4 concentrates it: a wider spectrum)."""
    from meanfield.domains.sphere import pushforward
    from meanfield.domains.sphere.ducc import complex_alm
    from meanfield.representations.grid import GridProblem

    B = np.eye(3) + 0.05 * np.array([[0.4, -0.5, 0.1], [0.5, -0.4, 0.0], [0.0, 0.2, 0.0]])
    g = mf.SphereGrid(31)
    mu = mf.Density.from_function(g, lambda x: np.exp(1.5 * x[..., 0] + 0.4 * x[..., 2]))
    later = mf.solve(mf.SelfAttention(4.0), mu, (0.0, 0.2), t_eval=[0.2], dt=0.01, representation="grid",
                     refine=False).densities[-1]
    print("\n| one general-Σ map vs the 4 right-hand sides of an RK4 step, S² lmax 31 | (σ, p) | map now | "
          "map before | 4 rates | now/step | before/step | a-priori bound now / Σ U_l |\n"
          "|---|---|---|---|---|---|---|---|")
    for name, d in (("start", mu), ("after 20 steps", later)):
        y = d.values
        problem = GridProblem(mf.SelfAttention(4.0), g, "auto", refine=False, max_n=g.n, t0=0.0)
        problem.probe(y)
        sigma, p, bound = pushforward.pushforward_stencil(complex_alm(g.coefficients(y), 31), 31)
        fns = {"now": lambda: g.linear_transport(y, B), "before": lambda: _sphere_map_before(g, y, B),
               "step": lambda: [problem.rate(y) for _ in range(4)]}
        m = alternating_medians(fns, repeat, 10)
        print(f"| {name} | ({sigma}, {p}) | {1e6 * m['now']:.0f} µs | {1e6 * m['before']:.0f} µs | "
              f"{1e6 * m['step']:.0f} µs | {m['now'] / m['step']:.3f} | {m['before'] / m['step']:.3f} | {bound:.1e} |")


if __name__ == "__main__":
    main()
