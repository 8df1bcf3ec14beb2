"""The layout shows the layers (issue 47, item 7): every child of ``meanfield`` is one layer of the import contract,
and the modules' earlier root paths stay importable as aliases of their new homes."""

import importlib
import pkgutil
import tomllib
from pathlib import Path

import pytest

import meanfield

ROOT = Path(__file__).resolve().parents[1]


def _layers():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["id"] == "layers")
    return {name.strip() for layer in layers for name in layer.split("|")}


def test_every_child_of_meanfield_is_a_layer_of_the_contract():
    """A new root module or subpackage must be placed in the layers (else import-linter would not see it)."""
    children = {f"meanfield.{m.name}" for m in pkgutil.iter_modules(meanfield.__path__)}
    assert children - _layers() == set()
    assert len(children) <= 15  # 14 today (two names share a layer): not the 26 of before


@pytest.mark.parametrize("old, new", sorted(meanfield.MOVED.items()))
def test_the_earlier_paths_import_the_new_modules(old, new):
    assert importlib.import_module(f"meanfield.{old}") is importlib.import_module(f"meanfield.{new}")


def test_the_aliases_shadow_no_public_name():
    """``meanfield.solve`` stays the function (its module is ``meanfield.solvers.solve``); the other aliases are the
    modules themselves, so that ``meanfield.exact.wendel`` works after ``import meanfield``."""
    assert callable(meanfield.solve) and meanfield.solve.__module__ == "meanfield.solvers.solve"
    assert meanfield.exact is importlib.import_module("meanfield.analysis.exact")
    from meanfield.stationary import critical_noise  # the old spelling of a user's import
    from meanfield.analysis.stationary import critical_noise as new
    assert critical_noise is new
