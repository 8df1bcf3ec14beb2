"""Studies: a TOML file in, an xarray Dataset (NetCDF) and figures out.

``run(path_or_dict)`` runs one study, ``sweep(study, over=...)`` runs it over a
grid of parameters on dask.distributed, ``load(path)`` reads a results file.
The study file reference is :data:`meanfield.study.config.SCHEMA` (and the
documentation site's page generated from it); the command line is ``meanfield run`` / ``meanfield sweep`` /
``meanfield demo`` (:mod:`meanfield.cli`).

This is the application layer: it imports ``meanfield``, ``particles`` and
``validation`` with plain imports, and nothing below it imports it
(docs/DESIGN.md; checked by import-linter in the tests).
"""

from ..core.io import load, save
from .config import SCHEMA, StudyError, read
from .runner import StudyInterrupted, run, run_config
from .sweep import sweep

__all__ = ["run", "run_config", "sweep", "load", "save", "read", "SCHEMA", "StudyError", "StudyInterrupted"]
