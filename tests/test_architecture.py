"""The import rules of docs/DESIGN.md, enforced: the contracts pass here and fail on a deliberately wrong import.

The contracts (``[tool.importlinter]`` in pyproject.toml) are checked by
import-linter on the three packages: layers import downwards only, the
``meanfield`` root imports nothing above its core, no cycles between sibling
packages or modules, no private name or module imported across modules
(:mod:`tests.contracts`). Each contract is shown to break on a copy of the
tree with one wrong import added. The last checks read the sources with ``ast``:
no private attribute of another module is used (``obj._name``), which imports
cannot show; nothing above the domain layer compares a domain object (``domain
is SPHERE``, ``self.domain is SPHERE``, ``== EUCLIDEAN``, ``isinstance(d,
Sphere)``), shown failing on such a comparison planted in a copy of the tree.
"""

import ast
import functools
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


# ---------------------------------------------------------------------- domain objects compared
#: the domain layer's functions that return a domain
DOMAIN_FUNCTIONS = {"get", "infer", "unit_sphere", "for_manifold", "zonal_domain"}


@functools.cache
def _domain_vocabulary() -> tuple[frozenset[str], frozenset[str]]:
    """(objects, classes): the names the domain layer gives its domains (SPHERE, ZONAL, ...) and its Domain subclasses
    (Sphere, ...), read from ``meanfield.domains`` and its packages."""
    import inspect

    from meanfield import domains
    from meanfield.domains.base import Domain

    objects, classes = set(), set()
    for module in [domains] + [m for _, m in inspect.getmembers(domains, inspect.ismodule)]:
        for name, value in vars(module).items():
            if isinstance(value, Domain):
                objects.add(name)
            elif inspect.isclass(value) and issubclass(value, Domain) and value is not Domain:
                classes.add(name)
    return frozenset(objects), frozenset(classes)


def _domain_comparisons(source: str, filename: str) -> list[str]:
    """Where ``source`` asks which domain it holds by the domain object's identity: a comparison (``is``, ``is not``,
    ``==``, ``!=``, ``in``, ``not in``) with a domain object of the domain layer on either side, whatever the other
    side is — ``SPHERE``, ``domains.CIRCLE``, a name it was imported as, a domain function's value (``get("sphere")``,
    ``zonal_domain(3)``), a tuple of them (``x is SPHERE``, ``self.domain is SPHERE``, ``domain in (CIRCLE,
    SPHERE)``); ``isinstance``/``issubclass`` with a Domain class (``Sphere``); a dict keyed by domain objects (a
    dispatch table). Asking a named domain (``SPHERE.retract(y)``), comparing two domains held (``a.domain is
    b.domain``) and a domain's attribute (``EUCLIDEAN.manifold``, a string) are not comparisons with a domain."""
    objects, classes = _domain_vocabulary()
    tree = ast.parse(source, filename=filename)
    names, class_names, functions = set(objects), set(), set()  # classes and functions by import only (Sequence)
    for node in ast.walk(tree):  # from meanfield.domains(.x) import SPHERE as S2, get
        if isinstance(node, ast.ImportFrom) and "domains" in (node.module or "").split("."):
            for a in node.names:
                for vocabulary, bucket in ((objects, names), (classes, class_names), (DOMAIN_FUNCTIONS, functions)):
                    if a.name in vocabulary:
                        bucket.add(a.asname or a.name)

    def of_domains(node) -> bool:
        """``node`` is an attribute of the domain layer: domains.X, meanfield.domains.sphere.X."""
        return isinstance(node, ast.Attribute) and "domains" in ast.unparse(node.value).split(".")

    def domain_class(node) -> bool:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(domain_class(e) for e in node.elts)
        return (isinstance(node, ast.Name) and node.id in class_names) or (of_domains(node) and node.attr in classes)

    def domain_object(node) -> bool:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(domain_object(e) for e in node.elts)
        if isinstance(node, ast.Call):  # get("sphere") imported from the domains, domains.get("sphere")
            f = node.func
            return (isinstance(f, ast.Name) and f.id in functions) or (of_domains(f) and f.attr in DOMAIN_FUNCTIONS)
        return ((isinstance(node, ast.Name) and node.id in names) or (isinstance(node, ast.Attribute)
                                                                      and node.attr in objects) or domain_class(node))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(domain_object(e) for e in [node.left, *node.comparators]):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("isinstance", "issubclass") and len(node.args) == 2 and domain_class(node.args[1]):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict) and any(k is not None and domain_object(k) for k in node.keys):
            found.append(f"{filename}:{node.lineno}: a dict keyed by domain objects")
    return found


def _above_the_domain_layer(root: Path = ROOT) -> list[Path]:
    """The modules of the three packages above ``meanfield/domains`` (the leaves import no domain)."""
    return [path for pkg in PACKAGES for path in sorted((root / pkg).rglob("*.py"))
            if path.relative_to(root).parts[:2] != ("meanfield", "domains")]


def test_nothing_above_the_domain_layer_compares_domain_objects():
    """No code above meanfield/domains asks which domain it holds by the domain's identity (``domain is SPHERE``,
    ``self.domain is SPHERE``, ``== EUCLIDEAN``, ``in (CIRCLE, SPHERE)``, ``isinstance(d, Sphere)``): it asks the
    domain (its methods and capabilities, docs/DESIGN.md)."""
    hits = [hit for path in _above_the_domain_layer()
            for hit in _domain_comparisons(path.read_text(), str(path.relative_to(ROOT)))]
    assert hits == [], "\n".join(hits)


@pytest.mark.parametrize("line", [
    "domain is SPHERE",
    "self.domain is SPHERE",
    "trajectory.measure(0).domain is not CIRCLE",
    "grid.domain == EUCLIDEAN",
    "EUCLIDEAN != getattr(grid, 'domain', None)",
    "domain in (CIRCLE, SPHERE)",
    "domain is domains.SEQUENCE",
    "domain is meanfield.domains.ZONAL",
    "domain is get('sphere')",
    "domain is domains.get('circle')",
    "domain is zonal_domain(3)",
    "isinstance(domain, Sphere)",
    "isinstance(domain, (int, Euclidean))",
    "type(domain) is domains.sphere.Sphere",
    "{CIRCLE: 1, SPHERE: 2}[domain]",
])
def test_the_identity_check_sees_a_planted_comparison(line):
    source = f"import meanfield\nfrom meanfield import domains\nfrom meanfield.domains import get, zonal_domain\n" \
             f"from meanfield.domains.sphere import Sphere\nfrom meanfield.domains.euclidean import Euclidean\n\n" \
             f"def f(self, domain, grid, trajectory):\n    return {line}\n"
    assert len(_domain_comparisons(source, "planted.py")) == 1, line


@pytest.mark.parametrize("line", [
    "domain.unit_vectors and domain.retract(y) is y",
    "a.domain is b.domain",
    "model.manifold == EUCLIDEAN.manifold",
    "SPHERE.retract(y)",
    "cfg.get('domain') == 'sphere'",
    "isinstance(domain, Domain)",
    "isinstance(heads, Sequence)",
    "isinstance(heads, collections.abc.Sequence)",
])
def test_the_identity_check_leaves_questions_to_the_domain(line):
    source = f"import collections.abc\nfrom collections.abc import Sequence\n" \
             f"from meanfield.domains import SPHERE, EUCLIDEAN, Domain\n\ndef f(domain, a, b, model, y, cfg, heads):\n" \
             f"    return {line}\n"
    assert _domain_comparisons(source, "fine.py") == [], line


def test_the_identity_check_sees_an_alias_and_a_planted_module(tmp_path):
    """An alias of a domain object is seen; and a ``domain is SPHERE`` planted in a copy of particles/system.py, above
    the domain layer, fails the check on that tree (the real tree passes: the test above)."""
    aliased = "from meanfield.domains import SPHERE as S2\n\ndef f(d):\n    return d is S2\n"
    assert _domain_comparisons(aliased, "aliased.py")
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "particles" / "system.py"

    def hits():
        return {hit for path in _above_the_domain_layer(tmp_path)
                for hit in _domain_comparisons(path.read_text(), str(path.relative_to(tmp_path)))}

    before = hits()
    target.write_text(target.read_text() + "\n\ndef _planted(domain):\n    return domain is SPHERE\n")
    planted = hits() - before
    assert len(planted) == 1 and next(iter(planted)).startswith("particles/system.py:"), planted
    assert next(iter(planted)).endswith(": domain is SPHERE"), planted


# ---------------------------------------------------------------------- which-thing questions (issue 47's measure)
def _design_counts():
    """scripts/design_counts.py, the one reader of these questions (the script prints the counts, this test holds
    the tree to them)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("design_counts", ROOT / "scripts" / "design_counts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_question_of_which_thing_is_held_says_why():
    """Above the domain and model layers, code asks a variant, a model, a domain or a frame what it can do, never
    which one it is (docs/DESIGN.md): a site that still asks carries ``# which: <why>``, and there are at most 10."""
    sites = _design_counts().tree_sites()
    unjustified = [f"{f}:{line}: [{cat}] {text}" for f, cat, line, text, ok in sites if not ok]
    assert unjustified == [], "\n".join(unjustified)
    assert len(sites) <= 10, "\n".join(f"{f}:{line}: [{cat}] {text}" for f, cat, line, text, _ in sites)


@pytest.mark.parametrize("line, category", [
    # normalisation variants by name
    ("norm.kind == 'ngpt'", "normalization"),
    ("model.normalization.kind in ('pre', 'peri')", "normalization"),
    ("{'pre': 1.0, 'peri': 2.0}[norm.kind]", "normalization"),
    ("m.get('normalization', 'post') != 'post'", "normalization"),
    # concrete model classes and kind strings
    ("isinstance(model, SelfAttention)", "model class"),
    ("isinstance(h, (Softmax, L2))", "model class"),
    ("type(head) is Sinkhorn", "model class"),
    ("type(head).__name__ == 'Transformer'", "model class"),
    ("getattr(h, 'kind', None) == 'hardmax'", "model kind"),
    ("kind in ('softmax', 'l2')", "model kind"),
    # domains: classes, names, objects, attributes, probes, shapes, manifold and projection strings
    ("isinstance(grid, CircleGrid)", "domain"),
    ("isinstance(grid, (EuclideanGrid, SphereGrid))", "domain"),
    ("domain.name == 'circle'", "domain"),
    ("ZONAL.name == name", "domain"),
    ("domain is SPHERE", "domain"),
    ("model.manifold == EUCLIDEAN.manifold", "domain"),
    ("model.manifold != 'euclidean'", "domain"),
    ("domain.projection == 'mollweide'", "domain"),
    ("hasattr(grid, 'lmax')", "domain"),
    ("getattr(grid, 'lmax', None)", "domain"),
    ("x.shape[-1] == 2", "domain"),
    # frames by their class
    ("isinstance(mu, Density)", "frame type"),
    ("isinstance(mu, (Density, LagrangianMeasure))", "frame type"),
    ("type(mu) is LagrangianMeasure", "frame type"),
])
def test_the_which_check_sees_a_planted_question(tmp_path, line, category):
    """Each kind of question the issue found hidden (concrete grid classes, manifold and normalisation strings,
    attribute comparisons, ``hasattr``/shape tests for a domain, kind strings) is caught when planted in a module
    above the domain layer, and passes once it says why."""
    dc = _design_counts()
    (tmp_path / "particles").mkdir()
    target = tmp_path / "particles" / "planted.py"
    body = "def f(norm, model, h, head, kind, grid, domain, name, x, mu, m):\n    return {}\n"
    target.write_text(body.format(line))
    found = dc.sites(target, "particles/planted.py")
    assert [(cat, ok) for cat, _, _, ok in found] == [(category, False)], (line, found)
    target.write_text(body.format(line + "  # which: planted, and said why"))
    assert [ok for *_, ok in dc.sites(target, "particles/planted.py")] == [True]
    match = "def f(mu):\n    match mu:\n        case Density():\n            return 1\n"
    target.write_text(match)
    assert [cat for cat, *_ in dc.sites(target, "particles/planted.py")] == ["frame type"]


@pytest.mark.parametrize("line", [
    "domain.unit_vectors and domain.dim == 3",
    "norm.radial",
    "model.kind_of.gaussian_closure(mu)",
    "frame.grid is None",
    "isinstance(heads, tuple)",
    "x.shape[-1] == d",
])
def test_the_which_check_leaves_questions_of_capability(tmp_path, line):
    dc = _design_counts()
    target = tmp_path / "fine.py"
    target.write_text(f"def f(domain, norm, model, mu, frame, heads, x, d):\n    return {line}\n")
    assert dc.sites(target, "particles/fine.py") == [], line
