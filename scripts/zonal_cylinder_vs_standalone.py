"""``meanfield.solve`` on the zonal S^{d-1} × (0, ∞) against the standalone solver it replaced (issue 47, item 4).

Until commit f60de13 ``meanfield.solvers.zonal_cylinder.solve_zonal_radial`` ran its own RK4 loop; it is now a view of
``meanfield.solve`` (the "zonal-cylinder" representation on the one Integrator). This script loads the standalone
module from that commit (``git show``), runs both on the same laws, and prints the largest difference of the cell
values at the final time relative to the largest value, in units of the float64 epsilon.

Error model. With a fixed ``dt`` both take the same steps and evaluate the same right-hand side (the same code, the
same operations in the same order): the states agree to a few ulps of the largest value per step at most (the
integrator decides the last step of an output interval by a relative 1e-14 test where the loop used an absolute one,
which can move a step's end by an ulp). With the default CFL step both measure the speeds at the accepted state;
the step is cfl·(r_min·min(...)) where the loop had (cfl·r_min)·min(...) (an ulp apart), and the loop also capped
every step at cfl·r_min·t_end/4, a cap that the one integrator does not have: where it binds (slow laws: every
step hits it), the two runs take different steps and differ by RK4's time error, not by round-off.

    python scripts/zonal_cylinder_vs_standalone.py
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import meanfield as mf  # noqa: E402
from meanfield.models import SelfAttention, Transformer
from meanfield.solvers.zonal_cylinder import ZonalCylinderGrid

COMMIT = "f60de13"
EPS = np.finfo(float).eps
S0, SIGMA = 2.0, 0.25
RADII = (np.exp(-0.5), np.exp(4.5))


def standalone():
    """The module meanfield/zonal_cylinder.py of COMMIT, its relative imports made absolute."""
    text = subprocess.run(["git", "show", f"{COMMIT}:meanfield/zonal_cylinder.py"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    text = text.replace("from . import checks", "from meanfield import checks").replace("from .", "from meanfield.")
    path = Path(tempfile.mkdtemp()) / "zonal_cylinder_standalone.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("zonal_cylinder_standalone", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def gauss_s(s, s0=S0, sigma=SIGMA):
    return np.exp(-0.5 * ((s - s0) / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi))


def turning(u, s):
    """tests/meanfield/test_zonal_cylinder.py's law: directions clustered about e, turning with the radius."""
    return np.exp(2.0 * u) * gauss_s(s) * (1.0 + 0.5 * u * np.tanh((s - S0) / SIGMA))


def flat(u, s):
    """Directions uniform at every radius, the u-modulation odd: α = 0, only the radii move (slow: the loop's cap
    on the step binds)."""
    return gauss_s(s) * (1.0 + 0.5 * u * np.tanh((s - S0) / SIGMA))


LAWS = (("turning", turning), ("flat", flat))
#: the comparison is of the two code paths, not of the resolution: lmax = 16 holds peri-LN's law at d = 2 to a polar
#: tail of 3e-9, which the default monitor (tail_tol = 1e-10) stops (the standalone loop had no such check)
LENIENT = mf.ResolutionMonitor(tail_tol=1e-6, neg_tol=1e-6)


def main() -> None:
    old = standalone()
    calls = [0]
    rate = old._Rate.__call__

    def counted(self, y):
        calls[0] += 1
        return rate(self, y)

    old._Rate.__call__ = counted
    print(f"{'variant':7s} {'d':>3s} {'law':>8s} {'step':>10s} {'steps old':>10s} {'new':>5s} "
          f"{'max|new - old|/max|old|':>24s}")
    for kind, beta in (("pre", 1.5), ("peri", 1.0)):
        model = Transformer(SelfAttention(beta), normalization=kind)
        for d in (2, 3, 16):
            for (name, law), dt in [(lw, dt) for lw in LAWS for dt in (0.01, None)]:
                kw = dict(lmax=16, n_s=64, radii=RADII)
                T = 0.5
                calls[0] = 0
                a = old.solve_zonal_radial(model, d, law, T, t_eval=[0.0, 0.25, T], dt=dt, **kw)
                grid = ZonalCylinderGrid(d, 16, 64, RADII)
                y = grid.cell_averages(law)
                sol = mf.solve(model, mf.Density(grid, y / grid.mass(y)), (0.0, T), [0.0, 0.25, T], monitor=LENIENT,
                               **({} if dt is None else {"dt": dt}))
                assert sol.status is mf.Status.SUCCESS, sol.message
                new = np.array([f.values for f in sol.frames])
                err = float(np.max(np.abs(new - a.values)) / np.max(np.abs(a.values)))
                step = "dt = 0.01" if dt is not None else "CFL 0.2"
                print(f"{kind:7s} {d:3d} {name:>8s} {step:>10s} {calls[0] // 4:10d} {sol.nsteps:5d} "
                      f"{err:13.3g} = {err / EPS:8.1f} EPS")


if __name__ == "__main__":
    main()
