"""Sphinx configuration of the meanfield documentation site.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (after ``pip install -e ".[docs]"``).

Environment variables
---------------------
MEANFIELD_DOCS_GALLERY
    ``1`` (default) executes the gallery (sphinx-gallery); ``0`` lists the examples without running them
    (what ``tests/test_docs.py`` uses for its quick build; the same as ``-D plot_gallery=0``).
MEANFIELD_DOCS_INTERSPHINX
    ``auto`` (default): link to numpy, scipy, xarray, POT and Python where their inventories can be reached
    (a 3 s probe of numpy.org), else build without those links; ``1``: always (an unreachable inventory is then
    a warning, an error under ``-W``); ``0``: never (offline builds).
"""

import os
import socket
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import meanfield  # noqa: E402

project = "meanfield"
author = "meanfield developers"
copyright = "meanfield developers"
version = release = meanfield.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "meanfield_api",  # docs/_ext/meanfield_api.py: the API pages from the packages' __all__
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "gallery/README.rst", "gallery/*.py", "**.ipynb_checkpoints"]
templates_path = ["_templates"]

# --- Markdown (myst): docs/MATH.md and the user guide -------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# --- API: autodoc, autosummary, numpydoc ------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- cross-references -------------------------------------------------------------------------------------------
# Nitpicky on the library's own names: every reference to meanfield, particles or validation must resolve.
# References to other projects resolve through intersphinx where it is on; offline they are ignored here, so a
# build with and without network is equally strict on our own names.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|scipy|xarray|xr|ot|matplotlib|dask|numba|pyshtools|ducc0|findiff)(\..*)?"),
    (r"py:.*", r"(int|float|complex|str|bool|bytes|tuple|list|dict|set|callable|object|None|type|slice)"),
    (r"py:.*", r"(os|pathlib|typing|collections|enum|dataclasses|abc|io)\..*"),
]

_INTERSPHINX = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "scipy": ("https://docs.scipy.org/doc/scipy", None),
    "xarray": ("https://docs.xarray.dev/en/stable", None),
    "ot": ("https://pythonot.github.io", None),
}


def _reachable(host="numpy.org", timeout=3.0):
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


_mode = os.environ.get("MEANFIELD_DOCS_INTERSPHINX", "auto").strip().lower()
if _mode not in ("auto", "0", "1"):
    raise ValueError(f"MEANFIELD_DOCS_INTERSPHINX: must be auto, 0 or 1, got {_mode!r}")
intersphinx_mapping = _INTERSPHINX if _mode == "1" or (_mode == "auto" and _reachable()) else {}
intersphinx_timeout = 10

# --- gallery ----------------------------------------------------------------------------------------------------
_gallery = os.environ.get("MEANFIELD_DOCS_GALLERY", "1").strip()
if _gallery not in ("0", "1"):
    raise ValueError(f"MEANFIELD_DOCS_GALLERY: must be 0 or 1, got {_gallery!r}")
sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "plot_gallery": _gallery == "1",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
    "show_memory": False,
    "write_computation_times": _gallery == "1",  # the page of run times, where the examples ran
}

# --- HTML -------------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"meanfield {release}"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
