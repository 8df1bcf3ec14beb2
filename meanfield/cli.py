"""The ``meanfield`` command: solve an example, run study files, run sweeps.

``meanfield [options]``
    The quick example below (``meanfield --help`` for its options).
``meanfield run STUDY.toml``
    Run a study file (:mod:`meanfield.study`), write its NetCDF results and,
    with ``--plot``, its figures.
``meanfield sweep STUDY.toml --over beta=0.1:9:90 [--repeats R]``
    Run it over a parameter grid on dask.distributed (a LocalCluster here, or
    ``--scheduler ADDRESS``) and gather one Dataset.

Exit codes: 0 done; 1 the density lost resolution (results up to then are
written); 2 bad arguments or a bad study file (one line naming the problem;
the traceback with ``--debug``); 130 interrupted by Ctrl-C (what was computed
is written).

With no arguments it solves SA with
β = 4 on the circle from a slightly perturbed uniform density: the uniform
state is unstable, a few clusters emerge (metastability, GLPR §6.3) and the
grid is refined as they sharpen. ``meanfield --domain sphere`` does the same
on S² (tokens after layer normalisation in d = 3) and draws Mollweide maps.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

log = logging.getLogger("meanfield")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="meanfield",
        description=(
            "Solve the mean-field equation of self-attention, d/dt mu + div(mu X[mu]) = 0, "
            "for a density on the circle or on the sphere S², print a summary, and write "
            "figures (circle: space-time heat map; sphere: Mollweide snapshots; both: the "
            "energy curve) as PNG, plus the data as NPZ."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--domain", choices=("circle", "sphere"), default="circle", help="where the tokens live")
    p.add_argument("--beta", type=float, default=4.0, help="inverse temperature β >= 0")
    p.add_argument("--usa", action="store_true", help="unnormalised attention (USA) instead of SA")
    p.add_argument("--n", type=int, default=128, help="initial number of grid nodes (circle)")
    p.add_argument("--lmax", type=int, default=24, help="initial spherical-harmonic degree (sphere)")
    p.add_argument("--t-end", type=float, default=None, help="final time (default 7 on the circle, 3.5 on the sphere)")
    p.add_argument("--frames", type=int, default=None, help="number of output times (default 141 circle, 7 sphere)")
    p.add_argument(
        "--init",
        choices=("noise", "cauchy", "vonmises"),
        default="noise",
        help="initial density: uniform + random low modes of amplitude --amplitude, "
        "wrapped Cauchy with |a| = --amplitude, or two von Mises bumps",
    )
    p.add_argument("--amplitude", type=float, default=None,
                   help="size of the initial perturbation (default 0.05 circle, 1 sphere)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random initial perturbation")
    p.add_argument("--method", choices=("rk4", "ssprk3", "rk45", "dop853"), default="rk45",
                   help="time integrator")
    p.add_argument("--no-refine", dest="refine", action="store_false",
                   help="stop with an error instead of refining when resolution is lost")
    p.add_argument("--max-n", type=int, default=None,
                   help="largest n (circle, default 4096) or lmax (sphere, default 128) refinement may reach")
    p.add_argument("--output", type=Path, default=Path("meanfield-output"), help="output directory")
    p.add_argument("--quiet", action="store_true", help="no progress bar, warnings only")
    p.add_argument("--plot", action="store_true", help="write the figures (always on for this example)")
    p.add_argument("--debug", action="store_true", help="debug logging")
    return p


def _initial(grid, init: str, amplitude: float, seed: int):
    from . import Density, exact
    from .geometry import points_to_angles
    from .study.build import uniform_noise

    sphere = grid.domain == "sphere"
    if init == "noise":  # the study files' uniform-noise law, six modes (circle) or bumps (sphere)
        f = uniform_noise(grid, amplitude, 6, np.random.default_rng(seed))
    elif init == "cauchy" and sphere:
        f = lambda x: exact.mobius_density(x, np.array([0.0, 0.0, amplitude]))
    elif init == "cauchy":
        f = lambda x: exact.wrapped_cauchy(points_to_angles(x), amplitude)
    elif sphere:
        a, b = np.array([0.0, 0.0, 1.0]), np.array([np.sin(2.0), 0.0, np.cos(2.0)])
        f = lambda x: np.exp(6 * (x @ a - 1)) + 0.6 * np.exp(5 * (x @ b - 1))
    else:
        f = lambda x: np.exp(8 * np.cos(points_to_angles(x) - 1.0)) + 0.6 * np.exp(6 * np.cos(points_to_angles(x) - 3.5))
    return Density.from_function(grid, f)


def _logging(args):
    level = logging.DEBUG if args.debug else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="%(message)s")  # no-op where the caller configured logging
    logging.getLogger("meanfield").setLevel(level)
    for noisy in ("distributed", "numba", "matplotlib", "h5py", "fsspec"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("run", "sweep"):
        from .study.cli import main as study_main

        return study_main(argv)
    args = _parser().parse_args(argv)
    _logging(args)

    import matplotlib

    matplotlib.use("Agg")
    from . import CircleGrid, ResolutionError, SelfAttention, SphereGrid, solve
    from .plotting import circle_spacetime, plot_solution

    sphere = args.domain == "sphere"
    args.t_end = (3.5 if sphere else 7.0) if args.t_end is None else args.t_end
    args.amplitude = (1.0 if sphere else 0.05) if args.amplitude is None else args.amplitude
    args.frames = (7 if sphere else 141) if args.frames is None else args.frames
    args.max_n = (128 if sphere else 4096) if args.max_n is None else args.max_n
    try:
        model = SelfAttention(args.beta, normalized=not args.usa)
        mu0 = _initial(SphereGrid(args.lmax) if sphere else CircleGrid(args.n), args.init, args.amplitude, args.seed)
        if args.frames < 2:
            raise ValueError(f"--frames must be at least 2, got {args.frames}.")
        if not args.t_end > 0:
            raise ValueError(f"--t-end must be positive, got {args.t_end}.")
    except (ValueError, TypeError) as exc:
        print(f"meanfield: error: {exc}", file=sys.stderr)
        return 2

    t_eval = np.linspace(0.0, args.t_end, args.frames)
    log.info("solving %r on %r, t in [0, %g] ...", model, mu0.grid, args.t_end)
    start = time.perf_counter()
    status = 0
    try:
        sol = solve(model, mu0, (0.0, args.t_end), t_eval=t_eval, method=args.method,
                    progress=not args.quiet and sys.stderr.isatty(), refine=args.refine, max_n=args.max_n)
    except ResolutionError as exc:
        log.warning("%s", exc)
        sol, status = exc.solution, 1
    elapsed = time.perf_counter() - start

    args.output.mkdir(parents=True, exist_ok=True)
    energy = sol.energy if sol.energy is not None else np.full(sol.t.shape, np.nan)
    if sphere:
        top = max(d.grid.lmax for d in sol.densities)
        rho = np.array([d.grid.resample(d.values, top) for d in sol.densities])
        data = args.output / "sphere.npz"
        np.savez(data, t=sol.t, rho=rho, lmax=top, points=SphereGrid(top).points, mass=sol.mass, energy=energy)
    else:
        t, theta, rho = circle_spacetime(sol)
        data = args.output / "circle.npz"
        np.savez(data, t=t, theta=theta, rho=rho, mass=sol.mass, energy=energy)
    fig = plot_solution(sol, title=f"{model!r}, resolution {mu0.grid.n} → {sol.densities[-1].grid.n}")
    png = args.output / f"{args.domain}.png"
    fig.savefig(png, dpi=120)

    kind = "USA" if args.usa else "SA"
    lines = [
        f"model        {kind}, β = {args.beta:g}, Q = K = V = I ({sol.path} path)",
        f"grid         {'lmax' if sphere else 'n'} = {mu0.grid.n} → {sol.densities[-1].grid.n}"
        + (f" ({len(sol.refinements)} refinements)" if sol.refinements else ""),
        f"time         reached t = {sol.t[-1]:g} of {args.t_end:g} in {sol.nsteps} steps "
        f"({sol.nfev} field evaluations, {elapsed:.2f} s, {args.method})",
        f"mass         {sol.mass[0]:.15f} → {sol.mass[-1]:.15f} (drift {abs(sol.mass[-1] - sol.mass[0]):.1e})",
        f"max density  {sol.densities[0].values.max():.4g} → {sol.densities[-1].values.max():.4g}",
    ]
    if sol.energy is not None:
        lines.append(f"energy E_β   {sol.energy[0]:.10g} → {sol.energy[-1]:.10g} (non-decreasing, monitored)")
    lines.append(f"wrote        {png} and {data}")
    print("\n".join(lines))
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
