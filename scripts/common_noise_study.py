"""Common noise (MATH.md §13, issue 48 item 3), the two measured statements with their intervals:

1. without attention, the synchronisation rate of particles (the slope of log max_{i<j}|x_i ∧ x_j| against t, over
   independent common paths) against the Lyapunov gap λ₁ − λ₂ of the shared linear flow computed by the library
   (QR of the products of the scheme's maps, other paths), for the isotropic noise Σ₁ = σ diag(1, −1),
   Σ₂ = σ[[0, 1], [1, 0]] on S¹, whose gap is 2σ² (continuous) and 2E log cosh(σ√τ R)/τ for the scheme (τ = dt/2),
   and for three generic 3×3 matrices on S² (the gap from QR alone);
2. W1 between the density and N particles on one common path, against N (rate −½).

Run:  python scripts/common_noise_study.py [--paths 16] [--skip-w1]
"""

import argparse
import time

import numpy as np
from scipy import integrate

import meanfield as mf
import particles
from meanfield.models.common_noise import CommonNoise, CommonPath, lyapunov_gap
from particles.common_noise import synchronisation_rate

STRAIN = np.array([[[1.0, 0.0], [0.0, -1.0]], [[0.0, 1.0], [1.0, 0.0]]])


def scheme_gap(sigma, tau):
    f = lambda r: np.log(np.cosh(sigma * np.sqrt(tau) * r)) * r * np.exp(-r * r / 2)  # noqa: E731
    return 2 * integrate.quad(f, 0, np.inf, epsabs=1e-14)[0] / tau


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, default=16)
    ap.add_argument("--skip-w1", action="store_true")
    args = ap.parse_args(argv)
    dt, T, sigma = 0.04, 8.0, 1.0
    model = mf.SelfAttention(0.0, V=np.zeros((2, 2)))
    t = np.arange(0, T + 1e-9, 0.4)
    seeds = np.random.SeedSequence(11).spawn(args.paths)
    t0 = time.perf_counter()
    xs = [particles.simulate(model, particles.uniform_sphere(6, 2, rng=r), t, dt=dt,
                             common_noise=CommonNoise(sigma * STRAIN, CommonPath(2, dt, T, seed=seeds[r]))).x
          for r in range(args.paths)]
    rate = synchronisation_rate(t, np.array(xs), window=(1.0, T))
    gap = lyapunov_gap(sigma * STRAIN, t=40.0, dt=dt, paths=args.paths, seed=12)
    print(f"| quantity | value | 95 % interval |\n|---|---|---|\n"
          f"| particles' synchronisation rate ({args.paths} paths, t in [1, {T:g}], n = 6) | {rate.rate:.3f} | "
          f"[{rate.low:.3f}, {rate.high:.3f}] |\n"
          f"| Lyapunov gap λ₁ − λ₂, QR ({args.paths} paths of length 40) | {gap.gap:.3f} | "
          f"[{gap.low:.3f}, {gap.high:.3f}] |\n"
          f"| the scheme's gap 2E log cosh(σ√τR)/τ (closed form) | {scheme_gap(sigma, dt / 2):.4f} | exact |\n"
          f"| the continuous gap 2σ² | {2 * sigma ** 2:.4f} | exact |")
    print(f"({time.perf_counter() - t0:.1f} s)")
    # S²: three fixed generic matrices (no closed form; the gap from QR alone)
    S3 = np.array([[[0.6, -0.3, 0.2], [0.1, -0.2, 0.4], [0.0, 0.3, -0.4]],
                   [[0.0, 0.5, -0.1], [0.2, 0.3, 0.0], [-0.4, 0.1, -0.3]],
                   [[-0.2, 0.0, 0.3], [0.4, 0.1, -0.2], [0.1, -0.3, 0.1]]])
    model3 = mf.SelfAttention(0.0, V=np.zeros((3, 3)))
    T3 = 16.0
    t3 = np.arange(0, T3 + 1e-9, 0.4)
    t0 = time.perf_counter()
    seeds = np.random.SeedSequence(21).spawn(args.paths)
    xs = [particles.simulate(model3, particles.uniform_sphere(6, 3, rng=r), t3, dt=dt,
                             common_noise=CommonNoise(S3, CommonPath(3, dt, T3, seed=seeds[r]))).x
          for r in range(args.paths)]
    rate = synchronisation_rate(t3, np.array(xs), window=(2.0, T3))
    gap = lyapunov_gap(S3, t=80.0, dt=dt, paths=args.paths, seed=22)
    print(f"| S²: particles' synchronisation rate ({args.paths} paths, t in [2, {T3:g}], n = 6) | {rate.rate:.3f} | "
          f"[{rate.low:.3f}, {rate.high:.3f}] |\n"
          f"| S²: Lyapunov gap λ₁ − λ₂, QR ({args.paths} paths of length 80) | {gap.gap:.3f} | "
          f"[{gap.low:.3f}, {gap.high:.3f}] |")
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.skip_w1:
        return
    from validation.meanfield_limit import meanfield_limit

    mu = mf.Density.from_function(mf.CircleGrid(512), lambda x: np.exp(1.0 * x[..., 0] + 0.5 * x[..., 1]))
    S = np.array([[[0.4, -0.5], [0.5, -0.4]], [[0.0, 0.3], [0.3, 0.0]]])
    noise = CommonNoise(S, CommonPath(2, 0.02, 1.0, seed=7))
    t0 = time.perf_counter()
    r = meanfield_limit(mf.SelfAttention(1.0), mu, [64, 128, 256, 512, 1024], [0.0, 0.5, 1.0], repeats=6, rng=3,
                        dt=0.02, common_noise=noise)
    print("\n| t | W1 mean over 6 systems, N = 64 … 1024 | exponent of N | 95 % interval |\n|---|---|---|---|")
    for k, tk in enumerate(r.t):
        w = " ".join(f"{v:.4f}" for v in r.distances[:, :, k].mean(axis=1))
        print(f"| {tk:g} | {w} | {r.exponent[k]:.3f} | [{r.exponent_ci[k][0]:.3f}, {r.exponent_ci[k][1]:.3f}] |")
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
