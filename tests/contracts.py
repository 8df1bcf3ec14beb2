"""A custom import-linter contract: no private name is imported across modules.

Registered in ``pyproject.toml`` (``[tool.importlinter] contract_types``) and
checked with the other contracts by ``tests/test_architecture.py``.

Rules, for every import in the graph of ``containers``:

- a private *name* (``from x import _y``; dunders such as ``__version__`` are
  public) is never imported from another module;
- a private *module* (``a.b._c``) is imported only by modules of its own
  package ``a.b`` (its siblings and their descendants).

The names of a ``from … import …`` are read from the importer's source with
``ast`` (an import may span several lines), at the line grimp reports.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import lru_cache
from pathlib import Path

from importlinter import Contract, ContractCheck, fields, output

__all__ = ["PrivateNamesContract"]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@lru_cache(maxsize=None)
def _tree(module: str):
    """The parsed source of ``module``, found without importing it.

    ``importlib.util.find_spec`` of a submodule executes its parent packages,
    which is exactly what must not happen on a tree with a deliberately wrong
    (possibly circular) import; only the root package is located by spec.
    """
    root, *parts = module.split(".")
    spec = importlib.util.find_spec(root)
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(list(spec.submodule_search_locations)[0]).joinpath(*parts)
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return None


def _names_at(module: str, line: int) -> list[str]:
    """The names a ``from … import …`` statement at ``line`` of ``module`` imports."""
    tree = _tree(module)
    if tree is None:
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.lineno <= line <= (node.end_lineno or node.lineno):
            return [alias.name for alias in node.names]
    return []


class PrivateNamesContract(Contract):
    """No private names or private modules imported across modules (module docstring)."""

    type_name = "private_names"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose: bool) -> ContractCheck:
        violations = []
        containers = tuple(self.containers)
        for importer in sorted(graph.modules):
            if not importer.startswith(containers):
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                parts = imported.split(".")
                private_module = next((i for i, p in enumerate(parts) if _private(p)), None)
                if private_module is not None:
                    package = ".".join(parts[:private_module])
                    if not importer.startswith(package + "."):
                        violations.append(f"{importer} imports the private module {imported}")
                for detail in graph.get_import_details(importer=importer, imported=imported):
                    for name in _names_at(importer, detail["line_number"]):
                        if _private(name):
                            violations.append(f"{importer} imports the private name {name} from {imported} "
                                              f"(line {detail['line_number']})")
        return ContractCheck(kept=not violations, metadata={"violations": sorted(set(violations))})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["violations"]:
            output.print_error(f"- {line}")
        output.new_line()
