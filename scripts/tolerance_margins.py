"""Do the suite's round-off tolerances keep a 10x margin?  Run the tests with every small tolerance tightened.

Every float literal ``0 < c < 1e-8`` (``--below``) that sits in an assertion, and every ``EPS`` (the limits written in
machine epsilon, ``tests/helpers.py``), is divided by ``--factor`` (10 by default) in a copy of the repository, and the default test run (or the pytest arguments after ``--``) is run on
that copy. A test that still passes keeps at least ``factor`` times its measured error under every such limit on
this machine and these library versions; a test that fails names a tolerance with less margin than the tests'
rule asks (DEVELOPERS.md: a tolerance near round-off keeps a 10x margin over the worst value measured on other
CPUs and library versions).

"In an assertion" means: inside an ``assert`` statement (``pytest.approx``, ``np.allclose`` and sums of limits
included); in the arguments of a call whose name starts with ``assert`` (``np.testing.assert_allclose``); or in the
value assigned to a name that reads as a limit (``tol``, ``atol``, ``rtol``, ``limit``, ``bound``, ``allowed``).
Literals below ``--below`` found anywhere else are listed (``--list``) for a reader to judge: most are solver
tolerances or inputs, which the rule does not cover.

Emulating another CPU: run it with ``NPY_DISABLE_CPU_FEATURES`` (NumPy's SIMD dispatch),
``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` (numba's code generation) and ``OPENBLAS_CORETYPE`` (the BLAS kernels)
set, e.g. an AVX2 machine without AVX-512 (``scripts/version_matrix.py --cpu avx2`` sets them).

Examples
--------
    python scripts/tolerance_margins.py                      # the default run, limits / 10
    python scripts/tolerance_margins.py --factor 100 -- tests/meanfield/test_causal.py
    python scripts/tolerance_margins.py --list               # the small literals it leaves alone
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT_NAME = re.compile(r"(^|_)(a|r)?tol($|_)|limit|bound|allowed", re.IGNORECASE)


class _Tighten(ast.NodeTransformer):
    """Divides the small float literals of assertion contexts by ``factor``; records what it did and left."""

    def __init__(self, factor: float, below: float, eps: bool = True):
        self.factor, self.below, self.eps = factor, below, eps
        self.depth = 0
        self.tightened: list[int] = []
        self.left: list[tuple[int, float]] = []

    def _inside(self, node):
        self.depth += 1
        node = self.generic_visit(node)
        self.depth -= 1
        return node

    def visit_Assert(self, node):
        return self._inside(node)

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return self._inside(node) if name.startswith("assert") else self.generic_visit(node)

    def visit_Assign(self, node):
        names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        return self._inside(node) if any(LIMIT_NAME.search(n) for n in names) else self.generic_visit(node)

    def visit_Name(self, node):
        # a limit written in machine epsilon (tests/helpers.py's EPS): divided too
        if self.eps and node.id == "EPS" and self.depth and isinstance(node.ctx, ast.Load):
            self.tightened.append(node.lineno)
            return ast.copy_location(ast.BinOp(node, ast.Div(), ast.Constant(self.factor)), node)
        return node

    def visit_Constant(self, node):
        if isinstance(node.value, float) and 0 < node.value < self.below:
            if self.depth:
                self.tightened.append(node.lineno)
                return ast.copy_location(ast.Constant(node.value / self.factor), node)
            self.left.append((node.lineno, node.value))
        return node


def tighten(source: str, factor: float, below: float) -> tuple[str, _Tighten]:
    tree = ast.parse(source)
    # EPS is machine epsilon where it comes from tests.helpers (a module's own EPS may be something else)
    eps = any(isinstance(n, ast.ImportFrom) and n.module == "tests.helpers" and any(a.name == "EPS" for a in n.names)
              for n in ast.walk(tree))
    t = _Tighten(factor, below, eps)
    tree = ast.fix_missing_locations(t.visit(tree))
    return ast.unparse(tree), t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--factor", type=float, default=10.0, help="divide the limits by this (default 10)")
    parser.add_argument("--below", type=float, default=1e-8, help="literals below this are limits (default 1e-8)")
    parser.add_argument("--list", action="store_true", help="list the small literals left alone, run nothing")
    parser.add_argument("--keep", action="store_true", help="keep the tightened copy and print where it is")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the default run)")
    args = parser.parse_args(argv)

    copy = Path(tempfile.mkdtemp(prefix="margins-")) / "repo"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    total = 0
    for name in files:
        src, dst = ROOT / name, copy / name
        if not src.is_file():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if name.startswith("tests/") and name.endswith(".py"):
            text, t = tighten(src.read_text(), args.factor, args.below)
            dst.write_text(text)
            total += len(t.tightened)
            if args.list:
                for line, value in t.left:
                    print(f"{name}:{line}: {value:g} left alone")
        else:
            shutil.copy2(src, dst)
    print(f"{total} limits below {args.below:g} divided by {args.factor:g} in {copy}", flush=True)
    if args.list:
        return 0
    rc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args.pytest_args],
                        cwd=copy).returncode
    if not args.keep:
        shutil.rmtree(copy.parent, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
