"""How often code above the domain and model layers asks *which* thing it holds (issue 47's measure, kept).

Counted by reading the source (``ast``), outside ``meanfield/domains`` and ``meanfield/models`` (where such questions
are the layer's own business), in ``meanfield``, ``particles`` and ``validation``:

- ``normalization``: comparisons with a normalisation variant's name (``== "ngpt"``, ``in ("pre", "peri")``, a
  variant's ``.kind``), and the names ``"ngpt"``/``"pre"``/``"peri"``/``"mix"`` as dictionary keys;
- ``model class``: ``isinstance``/``issubclass`` against a concrete model class (SelfAttention, MultiHeadAttention,
  Transformer, FeedForward, Hardmax, Softmax, L2, Sinkhorn, Sigmoid, Masked, EuclideanAttention);
- ``model kind``: comparisons with a registered model kind's name ("self-attention", "softmax", …, "transformer",
  "feedforward");
- ``domain``: ``isinstance`` against a grid or domain class, comparisons with a domain's name or object
  (``"circle"``, ``CIRCLE``, ``is SPHERE``, ``.name == "zonal"``), ``manifold``/``projection`` comparisons,
  ``hasattr(…, "lmax")``-style probes and ``.shape[-1] == 1``/``2`` tests (a domain read off an array's shape);
- ``frame type``: ``isinstance`` against ``Density``/``LagrangianMeasure``/``Measure`` outside their own modules.

Also counted in every category: a comparison through a domain object's attribute (``ZONAL.name == name``), a class
read by its type or its name (``type(x) is Density``, ``type(x).__name__ == "Sinkhorn"``), a ``match`` on such a
class (``case CircleGrid():``) and a probe with a default (``getattr(grid, "lmax", None)``).

A site may stay where asking is the honest design (the one adapter between two representations, say): it then
carries a comment ``# which: <why>`` on its line or the line above, and is counted as *justified*.
``tests/test_architecture.py`` fails on any site without one, and shows each kind of site caught when planted.

Each site is one line; ``--list`` prints them as file:line (the same count a later change is measured by).

    python scripts/design_counts.py [--list]
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("meanfield", "particles", "validation")
SKIP = ("meanfield/domains/", "meanfield/models/")
VARIANTS = {"post", "pre", "peri", "mix", "ngpt"}
MODEL_CLASSES = {"SelfAttention", "MultiHeadAttention", "Transformer", "FeedForward", "Hardmax", "Softmax", "L2",
                 "Sinkhorn", "Sigmoid", "Masked", "EuclideanAttention"}
MODEL_KINDS = {"self-attention", "softmax", "l2", "sinkhorn", "sigmoid", "masked", "transformer", "feedforward",
               "hardmax"}
DOMAIN_CLASSES = {"CircleGrid", "SphereGrid", "EuclideanGrid", "ZonalGrid", "SequenceGrid", "Circle", "Sphere",
                  "Euclidean", "ZonalSphere", "Sequence"}
DOMAIN_NAMES = {"circle", "sphere", "euclidean", "zonal", "sequence", "mollweide"}
DOMAIN_OBJECTS = {"CIRCLE", "SPHERE", "EUCLIDEAN", "ZONAL", "SEQUENCE"}
GRID_PROBES = {"lmax", "n_theta", "radii", "positions", "d"}
FRAME_CLASSES = {"Density", "LagrangianMeasure", "Measure"}
FRAME_HOMES = {"meanfield/density.py": {"Density"}, "meanfield/lagrangian/measure.py": {"LagrangianMeasure"}}


def _names(node) -> set[str]:
    """The class names an isinstance's second argument holds (a name, an attribute, a tuple, a | union)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _names(node.left) | _names(node.right)
    return set()


def _strings(node) -> set[str]:
    """String constants in a comparison's operand (a constant, or a tuple/list/set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _class_read(node) -> set[str]:
    """The class names a comparison operand reads a type by: ``type(x)`` compared with a class, or a class's name
    string (``type(x).__name__ == "Density"`` gives the string; the caller intersects)."""
    if isinstance(node, ast.Attribute) and node.attr == "__name__":
        return {"__name__"}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
        return {"type"}
    return set()


def _shape_last(node) -> bool:
    """``x.shape[-1]`` (the last axis read as a dimension)."""
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
            and isinstance(node.slice, ast.UnaryOp) and isinstance(node.slice.op, ast.USub)
            and isinstance(node.slice.operand, ast.Constant) and node.slice.operand.value == 1)


def sites(path: Path, rel: str) -> list[tuple[str, int, str]]:
    """(category, line, source) of every site in one file."""
    tree = ast.parse(path.read_text())
    lines = path.read_text().splitlines()
    found = []

    def add(cat, node):
        line = lines[node.lineno - 1]
        above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
        justified = "# which:" in line or above.startswith("# which:")
        found.append((cat, node.lineno, line.strip(), justified))

    homes = FRAME_HOMES.get(rel, set())

    def classes_cat(names: set[str]) -> str | None:
        if names & MODEL_CLASSES:
            return "model class"
        if names & DOMAIN_CLASSES:
            return "domain"
        if names & (FRAME_CLASSES - homes):
            return "frame type"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.MatchClass):  # case CircleGrid(): ...
            cat = classes_cat(_names(node.cls))
            if cat:
                add(cat, node)
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) == 3 and _strings(node.args[1]) & GRID_PROBES:
            add("domain", node)  # a probe with a default: "has this grid an lmax?"
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance",
                                                                                               "issubclass"):
            if len(node.args) == 2:
                names = _names(node.args[1])
                if names & MODEL_CLASSES:
                    add("model class", node)
                elif names & DOMAIN_CLASSES:
                    add("domain", node)
                elif names & (FRAME_CLASSES - homes):
                    add("frame type", node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr":
            if len(node.args) == 2 and _strings(node.args[1]) & GRID_PROBES:
                add("domain", node)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            strings = set().union(*(_strings(o) for o in operands))
            names = {o.id for o in operands if isinstance(o, ast.Name)} | {
                o.attr for o in operands if isinstance(o, ast.Attribute)}
            through = {o.value.id for o in operands if isinstance(o, ast.Attribute) and isinstance(o.value, ast.Name)}
            typed = set().union(*(_class_read(o) for o in operands))
            if typed and classes_cat(strings | names):  # type(x) is Density, type(x).__name__ == "L2"
                add(classes_cat(strings | names), node)
            elif through & DOMAIN_OBJECTS:  # ZONAL.name == name: the domain object's identity through an attribute
                add("domain", node)
            elif strings & VARIANTS or (strings and "kind" in names and strings <= VARIANTS | MODEL_KINDS
                                      and strings & VARIANTS):
                add("normalization", node)
            elif strings & MODEL_KINDS:
                add("model kind", node)
            elif strings & DOMAIN_NAMES or names & DOMAIN_OBJECTS or names & {"manifold", "projection"}:
                add("domain", node)
            elif any(_shape_last(o) for o in operands) and any(
                    isinstance(o, ast.Constant) and o.value in (1, 2) for o in operands):
                add("domain", node)
        elif isinstance(node, ast.Dict):
            if {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)} & (
                    VARIANTS - {"post"}):
                add("normalization", node)
    return found


CATEGORIES = ("normalization", "model class", "model kind", "domain", "frame type")


def tree_sites(root: Path = ROOT) -> list[tuple[str, str, int, str, bool]]:
    """(file, category, line, source, justified) of every site above the domain and model layers under ``root``."""
    out = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(SKIP):
                continue
            out += [(rel, *site) for site in sites(path, rel)]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print every site as file:line")
    args = parser.parse_args(argv)
    per_cat, per_file, fine = Counter(), defaultdict(Counter), Counter()
    listing = []
    for rel, cat, line, text, justified in tree_sites():
        per_cat[cat] += 1
        per_file[cat][rel] += 1
        fine[cat] += justified
        listing.append(f"{rel}:{line}: [{cat}]{' (justified)' if justified else ''} {text[:100]}")
    if args.list:
        print("\n".join(sorted(listing)))
    print("| question | sites | justified (# which:) | files |")
    print("|---|---|---|---|")
    for cat in CATEGORIES:
        print(f"| {cat} | {per_cat[cat]} | {fine[cat]} | {len(per_file[cat])} |")
    files = len(set().union(*(set(f) for f in per_file.values()))) if per_file else 0
    print(f"| all | {sum(per_cat.values())} | {sum(fine.values())} | {files} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
