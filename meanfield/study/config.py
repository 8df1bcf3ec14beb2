"""Study files, one import: the names of the modules that do each job, re-exported.

- :mod:`meanfield.study.schema` — every key of a study file (:data:`SCHEMA`, :class:`Key`), its choices and
  defaults, and :class:`StudyError`;
- :mod:`meanfield.study.reading` — reading and checking a study (:func:`read`, :func:`read_raw`,
  :func:`validate`, :func:`to_json`);
- :mod:`meanfield.study.weights` — the [model] weights file (:func:`layer_weights`);
- :mod:`meanfield.study.overrides` — the command line's ``--over`` (:func:`parse_over`, :func:`resolve_key`,
  :func:`override`);
- :mod:`meanfield.study.reference` — the "Study file reference" tables of the documentation site
  (:func:`reference_markdown`).
"""

from __future__ import annotations

from .overrides import override, parse_over, resolve_key
from .reading import read, read_raw, to_json, validate
from .reference import reference_markdown
from .schema import (
    DEFAULT_DPI, DEFAULT_INITIAL, DOMAINS, FIGURE_FORMATS, GRID_LAWS, INITIAL_KINDS, MAX_DPI, METHODS, MIN_DPI,
    PARTICLE_METHODS, SCHEMA, Key, StudyError,
)
from .weights import WEIGHT_ARRAYS, layer_weights

__all__ = ["StudyError", "SCHEMA", "Key", "read", "read_raw", "validate", "override", "parse_over", "to_json",
           "reference_markdown", "resolve_key", "layer_weights", "WEIGHT_ARRAYS", "DOMAINS", "INITIAL_KINDS",
           "DEFAULT_INITIAL", "GRID_LAWS", "METHODS", "PARTICLE_METHODS", "FIGURE_FORMATS", "DEFAULT_DPI", "MIN_DPI",
           "MAX_DPI"]
