"""The import rules of docs/DESIGN.md, enforced: the contracts pass here and fail on a deliberately wrong import.

The contracts (``[tool.importlinter]`` in pyproject.toml) are checked by
import-linter on the three packages: layers import downwards only, the
``meanfield`` root imports nothing above its core, no cycles between sibling
packages or modules, no private name or module imported across modules
(:mod:`tests.contracts`). Each contract is shown to break on a copy of the
tree with one wrong import added. A last check reads the sources with ``ast``:
no private attribute of another module is used (``obj._name``), which imports
cannot show.
"""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("meanfield", "particles", "validation")


def lint(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the tree at ``root`` (its pyproject.toml and tests/contracts.py), no cache."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))")
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(root)})


def test_the_contracts_are_kept():
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 kept, 0 broken" in r.stdout


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the three packages, the contracts and their configuration."""
    root = tmp_path_factory.mktemp("tree")
    for name in PACKAGES:
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "__init__.py", root / "tests")
    shutil.copy(ROOT / "tests" / "contracts.py", root / "tests")
    shutil.copy(ROOT / "pyproject.toml", root)
    return root


@pytest.mark.parametrize(
    "module, line, broken",
    [
        # the domain layer reaching up to the solver: a layer importing upwards
        ("meanfield/domains/circle/grid.py", "from meanfield import solve as _solve  # noqa", "Layers import downwards only"),
        # the core importing the particles package
        ("meanfield/density.py", "import particles  # noqa", "Layers import downwards only"),
        # the meanfield root importing the study layer
        ("meanfield/__init__.py", "from . import study  # noqa", "The meanfield package imports no layer above its core"),
        # two sibling modules of the study layer importing each other
        ("meanfield/study/config.py", "from . import build  # noqa", "No import cycles between sibling packages or modules"),
        # a private name of another module
        ("validation/stability.py", "from .wasserstein import _circle_w1  # noqa",
         "No private names or modules imported across modules"),
    ],
)
def test_a_wrong_import_breaks_its_contract(tree, module, line, broken):
    path = tree / module
    original = path.read_text()
    try:
        path.write_text(original + "\n" + line + "\n")
        r = lint(tree)
    finally:
        path.write_text(original)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{broken} BROKEN" in r.stdout, r.stdout


# ---------------------------------------------------------------------- private attributes
def _private_attributes(path: Path, root: Path = ROOT) -> list[str]:
    """``x._name`` where ``_name`` is not defined in the same file and ``x`` is not self/cls."""
    tree = ast.parse(path.read_text(), filename=str(path))
    defined = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            continue
        if node.attr in defined:
            continue
        found.append(f"{path.relative_to(root)}:{node.lineno}: .{node.attr}")
    return found


def test_no_private_attribute_of_another_module_is_used():
    found = [hit for name in PACKAGES for path in sorted((ROOT / name).rglob("*.py")) for hit in _private_attributes(path)]
    assert not found, "\n".join(found)


def test_the_attribute_check_sees_a_private_attribute(tmp_path):
    (tmp_path / "pkg").mkdir()
    f = tmp_path / "pkg" / "m.py"
    f.write_text("from meanfield import Density\n\ndef wrap(g, v):\n    return Density._trusted(g, v)\n")
    found = _private_attributes(f, tmp_path)
    assert found and "._trusted" in found[0]


def test_design_lists_the_contracts_layers():
    """docs/DESIGN.md's layer list is the ``layers`` contract of pyproject.toml, in its order (its one source)."""
    import re
    import tomllib

    layers = next(c["layers"] for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
                  ["contracts"] if c["id"] == "layers")
    design = (ROOT / "docs" / "DESIGN.md").read_text()
    block = design[design.index("## Layers"):].split("```")[1].strip().splitlines()
    assert [re.sub(r"\s+", " ", line.strip()) for line in block] == layers


def test_nothing_above_the_domain_layer_compares_domain_names():
    """No code above meanfield/domains asks which domain it has by its name (== / != / in with 'circle', 'sphere',
    'euclidean', 'sequence', whatever holds the name): it asks the domain's capabilities (docs/DESIGN.md). A model's
    ``manifold`` is the model's own attribute, not a domain name (models/base.py), and a normalisation's name
    ('sphere') is the layer map's argument: both are excepted by what they compare."""
    import re

    names = r"[\"'](circle|sphere|euclidean|sequence)[\"']"
    pattern = re.compile(rf"(==|!=)\s*{names}|{names}\s*(==|!=|in)\s|\bin\s*[(\[{{]\s*{names}")
    hits = [f"{path.relative_to(ROOT)}:{i}" for pkg in PACKAGES for path in sorted((ROOT / pkg).rglob("*.py"))
            if "domains" not in path.relative_to(ROOT).parts[:2]
            for i, line in enumerate(path.read_text().splitlines(), 1)
            if pattern.search(re.sub(r"(manifold|normalization)\s*(==|!=)\s*[\"']\w+[\"']", "", line))]
    assert hits == []
