"""The documentation: the site builds with warnings as errors, and the docstrings' examples run.

The quick build reads every page and every docstring of the API reference and resolves every cross-reference in
Sphinx's nitpicky mode (``docs/conf.py``: a reference to a name of ``meanfield``, ``particles`` or ``validation``
that does not exist is an error), without executing the gallery (``MEANFIELD_DOCS_GALLERY=0``) and without writing
HTML (the ``dummy`` builder resolves the references as the HTML one does). ``docs/_ext/meanfield_api.py`` counts
the exported names the build documented; the test asserts the two counts are equal. The full site, gallery
executed: ``python -m sphinx -W -b html docs docs/_build/html``.

Skipped, saying so, where Sphinx and the ``docs`` extra are not installed (``pip install -e ".[docs]"``).
"""

from __future__ import annotations

import doctest
import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("meanfield", "particles", "validation")
DOCS_DEPS = ("sphinx", "numpydoc", "myst_parser", "pydata_sphinx_theme", "sphinx_gallery")


def _missing_docs_deps():
    return [name for name in DOCS_DEPS if importlib.util.find_spec(name) is None]


@pytest.mark.skipif(bool(_missing_docs_deps()),
                    reason=f"the docs extra is not installed (missing {', '.join(_missing_docs_deps())}): "
                           "pip install -e '.[docs]'")
def test_docs_build_with_warnings_as_errors(tmp_path):
    env = dict(os.environ, MEANFIELD_DOCS_GALLERY="0", MEANFIELD_DOCS_INTERSPHINX="0")
    out = tmp_path / "build"
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "dummy", "-d", str(tmp_path / "doctrees"),
         str(ROOT / "docs"), str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"sphinx -W failed:\n{run.stdout[-4000:]}\n{run.stderr[-8000:]}"
    counts = json.loads((out / "api_counts.json").read_text())
    for package in PACKAGES:
        module = importlib.import_module(package)
        exported = len(module.__all__)
        assert counts[package] == {"exported": exported, "documented": exported, "missing": []}, counts[package]


def _modules_with_examples():
    """Every module of the three packages whose source holds a doctest prompt (found without importing)."""
    found = []
    for package in PACKAGES:
        root = importlib.util.find_spec(package).submodule_search_locations[0]
        for info in pkgutil.walk_packages([root], prefix=f"{package}."):
            spec = importlib.util.find_spec(info.name)
            if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
                continue
            if ">>> " in Path(spec.origin).read_text(encoding="utf-8"):
                found.append(info.name)
    return sorted(found)


def test_some_modules_have_examples():
    assert _modules_with_examples(), "no docstring holds a >>> example"


@pytest.mark.parametrize("name", _modules_with_examples())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module) if t.examples]
    assert tests, f"{name}: a >>> prompt outside any docstring doctest can find"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples failed"


@pytest.mark.skipif(bool(_missing_docs_deps()), reason="the docs extra is not installed: pip install -e '.[docs]'")
def test_a_reference_to_a_name_that_does_not_exist_is_not_excused():
    """The build lets a reference to an existing undocumented internal through unlinked, never a missing name."""
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    try:
        import meanfield_api
    finally:
        sys.path.remove(str(ROOT / "docs" / "_ext"))
    assert meanfield_api._lookup("meanfield.solve") and meanfield_api._lookup("meanfield.domains.base.PointSums")
    assert meanfield_api._lookup("meanfield.Solution.densities")
    assert not meanfield_api._lookup("meanfield.integrate.trackers.EventTracker")  # the name a docstring had wrong
    assert not meanfield_api._lookup("meanfield.no_such_module.f") and not meanfield_api._lookup("numpy.nonexistent")
    node = {"reftarget": "fourier.resample", "py:module": "meanfield", "py:class": "CircleGrid"}

    class Node(dict):
        source = "meanfield/domains/circle/grid.py:docstring of meanfield.domains.circle.grid.CircleGrid.resample"

    found = [c for c in meanfield_api._candidates(Node(node), "api/generated/meanfield.CircleGrid")
             if meanfield_api._lookup(c)]
    assert "meanfield.domains.circle.grid.fourier.resample" in found
