"""The default tests on the oldest and the newest supported NumPy, SciPy and numba (issue 46).

pyproject.toml's lower bounds are numpy>=1.26, scipy>=1.11, numba>=0.58 (0.58.1 is the first numba for NumPy 1.26).
For each row of the matrix this makes a fresh virtual environment, installs the project with the README's set-up command
(``pip install -e ".[test]"``) plus the row's pins, prints the versions pip resolved, and runs the README's test
command (``python -m pytest``); the exit status is 0 only if every row passed.

Rows:

- ``oldest``: numpy==1.26.*, scipy==1.11.*, numba==0.58.* (the rest as pip resolves them beside these);
- ``newest``: the newest releases pip finds (``--upgrade``).

``--cpu avx2`` runs the tests as on a CPU without AVX-512 (an AMD EPYC of this machine kind), whatever this one
has: NumPy's SIMD dispatch without its AVX-512 kernels (``NPY_DISABLE_CPU_FEATURES``), numba compiling for Zen 3
(``NUMBA_CPU_NAME=znver3``), OpenBLAS's Zen kernels (``OPENBLAS_CORETYPE``). It reproduced, digit for digit, the
three round-off failures the issue met on such a machine.

    python scripts/version_matrix.py                      # both rows, this CPU (about 20 minutes on two cores)
    python scripts/version_matrix.py --rows oldest --cpu avx2 -- tests/meanfield
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROWS = {
    "oldest": ["numpy==1.26.*", "scipy==1.11.*", "numba==0.58.*"],
    "newest": ["--upgrade", "numpy", "scipy", "numba"],
}
#: a CPU without AVX-512 (AVX2 + FMA: AMD Zen 3), for NumPy, numba and OpenBLAS
AVX2 = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "NUMBA_CPU_NAME": "znver3",
        "OPENBLAS_CORETYPE": "Zen"}


def _run(cmd, **kwargs):
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, **kwargs)


def row(name: str, pins: list[str], cpu: str, pytest_args: list[str], where: Path) -> int:
    venv = where / f"venv-{name}"
    _run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    _run([py, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    start = time.perf_counter()
    _run([py, "-m", "pip", "install", "--quiet", "-e", ".[test]", *pins], cwd=ROOT, check=True)
    installed = time.perf_counter() - start
    versions = subprocess.run([py, "-c", "import numpy, scipy, numba, llvmlite, ducc0, pyshtools, xarray, ot; "
                               "print(' '.join(f'{m.__name__} {m.__version__}' for m in "
                               "(numpy, scipy, numba, llvmlite, ducc0, pyshtools, xarray, ot)))"],
                              capture_output=True, text=True, check=True).stdout.strip()
    env = dict(os.environ, **(AVX2 if cpu == "avx2" else {}))
    start = time.perf_counter()
    rc = _run([py, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args], cwd=ROOT, env=env).returncode
    print(f"row {name} ({cpu}): {'passed' if rc == 0 else f'FAILED (exit {rc})'}; {versions}; install "
          f"{installed:.0f} s, tests {time.perf_counter() - start:.0f} s", flush=True)
    return rc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", choices=sorted(ROWS), default=["oldest", "newest"])
    parser.add_argument("--cpu", choices=["native", "avx2"], default="native")
    parser.add_argument("--keep", action="store_true", help="keep the virtual environments (their folder printed)")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the default run)")
    args = parser.parse_args(argv)
    where = Path(tempfile.mkdtemp(prefix="version-matrix-"))
    print(f"virtual environments in {where}", flush=True)
    codes = [row(name, ROWS[name], args.cpu, args.pytest_args, where) for name in args.rows]
    if not args.keep:
        subprocess.run(["rm", "-rf", str(where)])
    return max(codes)


if __name__ == "__main__":
    sys.exit(main())
