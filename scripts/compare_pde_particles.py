"""PDE against particles on the circle, S² or R¹: a thin front to the compare studies of ``examples/``.

Runs ``meanfield run`` on the compare study of the chosen domain —
``examples/compare_pde_particles.toml`` (circle), ``examples/compare_sphere.toml``
(S²) or ``examples/compare_softmax_1d.toml`` (R¹, softmax) — with the options
below replacing its keys: the density is solved, particle systems of each N
are drawn iid from the initial density and run, W_p between them and the
density is computed exactly at every output time, and the rate W_p ~ N^α is
fitted with its 95% interval (W_p/√(log N) on S², where E W_1 ≍ √(log N / N);
MATH.md §4). Writes into ``--output`` the results file ``<name>.nc`` and the
study's figures (``<name>-density.png``, ``<name>-wasserstein.png``,
``<name>-rate.png``, ...), and prints the fitted exponents.

Run:  python scripts/compare_pde_particles.py                      (circle, β = 1)
      python scripts/compare_pde_particles.py --domain sphere
      python scripts/compare_pde_particles.py --domain euclidean --ns 100 1000 --repeats 2
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from meanfield.study import read, run

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
STUDIES = {"circle": "compare_pde_particles.toml", "sphere": "compare_sphere.toml",
           "euclidean": "compare_softmax_1d.toml"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domain", choices=sorted(STUDIES), default="circle")
    ap.add_argument("--beta", type=float, help="inverse temperature (replaces [model] beta)")
    ap.add_argument("--ns", type=int, nargs="+", help="particle numbers (replaces [particles] n)")
    ap.add_argument("--repeats", type=int, help="realisations per N (replaces [particles] repeats)")
    ap.add_argument("--t-end", type=float, help="final time (replaces [time] t_end)")
    ap.add_argument("--seed", type=int, help="replaces the study's seed")
    ap.add_argument("--output", type=Path, default=Path("compare-output"))
    args = ap.parse_args(argv)

    import tomllib

    with open(EXAMPLES / STUDIES[args.domain], "rb") as f:
        study = tomllib.load(f)
    for table, key, value in (("model", "beta", args.beta), ("particles", "n", args.ns),
                              ("particles", "repeats", args.repeats), ("time", "t_end", args.t_end)):
        if value is not None:
            study[table][key] = value
    if args.seed is not None:
        study["seed"] = args.seed
    read(study)  # the study layer's checks, before any work
    args.output.mkdir(parents=True, exist_ok=True)
    ds = run(study, output=args.output / f"{study['name']}.nc", plot=True)
    law = ds["rate"].attrs.get("law", "W_p ~ N^α")
    print(f"{study['name']}: {ds.attrs['model']}, N = {ds['n_particles'].values.tolist()}, status "
          f"{ds.attrs['status']}; fitted {law}:")
    for a, p in enumerate(ds["p"].values):
        for k in np.unique([0, ds["time"].size // 2, ds["time"].size - 1]):
            if k == 0 and ds["time"].size > 1 and not np.isfinite(ds["rate"].values[a, k]):
                continue
            print(f"  W{p:g}, t = {float(ds['time'][k]):5.2f}: α = {float(ds['rate'][a, k]):+.3f}  (95% interval "
                  f"[{float(ds['rate_low'][a, k]):+.3f}, {float(ds['rate_high'][a, k]):+.3f}])")
    print(f"wrote {study['name']}.nc and its figures into {args.output}")


if __name__ == "__main__":
    main()
