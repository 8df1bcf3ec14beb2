"""Transition diagrams (meanfield.solvers.transitions): 40 β × the full single-cluster branch, USA, V = I, on S¹, S² and the
zonal S^127, side by side with the same diagram by a fine continuation (400 r, the fold read as its largest D: what
one does without located folds), medians of ``--repeat`` interleaved runs (issue 38: < 60 s on S¹ and S²).

The anchor's folds err by its grid's (Δr)²; the table gives the largest difference between the two codes' D_f.

Run:  python benchmarks/bench_transitions.py [--repeat 5] [--betas 40]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from meanfield.analysis import stationary as st
from meanfield.domains import zonal_domain
from meanfield.models import SelfAttention
from meanfield.solvers.transitions import transition_diagram

from _timing import interleaved  # noqa: E402


def fine_continuation(domain, d, betas, points=400):
    """D_c and D_f by a fine continuation: the branch at ``points`` r, its largest D where it rises above D_c."""
    r = np.linspace(0.95 / points, 0.95, points)
    critical, fold = np.empty(len(betas)), np.full(len(betas), np.nan)
    for i, beta in enumerate(betas):
        b = st.branch(SelfAttention(float(beta), V=np.eye(d), normalized=False), domain, r)
        critical[i] = b.critical
        if np.max(b.noise) > b.critical:
            fold[i] = np.max(b.noise)
    return critical, fold


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--betas", type=int, default=40)
    args = parser.parse_args()
    print(f"{'domain':>8} {'ours (s)':>9} {'fine (s)':>9} {'ratio':>6} {'max |ΔD_f|':>11}  (medians of {args.repeat})")
    for name, domain, d, top in (("S^1", "circle", 2, 5.0), ("S^2", "sphere", 3, 5.0),
                                 ("S^127", zonal_domain(128), 128, 1.4)):
        betas = np.linspace(0.2, top, args.betas)
        ours = transition_diagram(domain, betas)
        crit, fold = fine_continuation(domain, d, betas)
        both = np.isfinite(ours.fold) & np.isfinite(fold)
        diff = float(np.max(np.abs(ours.fold[both] - fold[both]))) if both.any() else float("nan")
        assert np.allclose(ours.critical, crit, rtol=1e-13)
        ta, tb, ratios = interleaved(lambda: transition_diagram(domain, betas),
                                     lambda: fine_continuation(domain, d, betas), repeat=args.repeat, warmup=False)
        print(f"{name:>8} {ta:9.2f} {tb:9.2f} {np.median(ratios):6.3f} {diff:11.2e}")


if __name__ == "__main__":
    main()
