"""Generate the API reference and the study-file reference from the packages themselves.

At ``config-inited`` (before Sphinx looks for the source files and autosummary writes its stubs) this writes

- ``api/<package>.rst`` for ``meanfield``, ``particles`` and ``validation``: one autosummary entry per name of
  the package's ``__all__`` (its public names), so the reference follows the packages as they change — no
  module path is listed by hand;
- ``guide/study_reference.md``: the study-file keys, from ``meanfield.study.config.reference_markdown()`` (the
  schema and the model registry), with the introduction and the initial laws that were the README's
  (:func:`study_reference_page`, :func:`write_study_reference`).

At ``build-finished`` it counts the exported names that the build documented as Python objects and warns
(an error under ``-W``) where the two counts differ; the counts are logged and written to
``<outdir>/api_counts.json``.
"""

import importlib
import re
import json
from pathlib import Path

from sphinx.util import logging

PACKAGES = ("meanfield", "particles", "validation")
logger = logging.getLogger(__name__)


def exported_names(package):
    """The public names of a package: its ``__all__``, else its attributes not starting with ``_``."""
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return list(names)


def _write_if_changed(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _package_page(package):
    module = importlib.import_module(package)
    summary = (module.__doc__ or package).strip().splitlines()[0]
    title = f"``{package}``"
    lines = [
        title,
        "=" * len(title),
        "",
        summary,
        "",
        f".. module:: {package}",
        "",
        f".. currentmodule:: {package}",
        "",
        ".. autosummary::",
        "   :toctree: generated",
        "",
    ]
    lines += [f"   {name}" for name in exported_names(package)]
    return "\n".join(lines) + "\n"


def generate(app, config=None):
    src = Path(app.srcdir)
    index = [
        "API reference",
        "=============",
        "",
        "Every public name of the three packages (their ``__all__``), generated from the docstrings.",
        "Submodules listed here are documented with their own public names.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
    ] + [f"   {p}" for p in PACKAGES]
    _write_if_changed(src / "api" / "index.rst", "\n".join(index) + "\n")
    for package in PACKAGES:
        _write_if_changed(src / "api" / f"{package}.rst", _package_page(package))

    write_study_reference(src)


STUDY_REFERENCE = Path("guide") / "study_reference.md"

_REFERENCE_INTRO = """\
# Study file reference

A study file (TOML; {doc}`studies` says how to run one) is read against this schema. Unknown keys and wrong types
are refused with the key's name. Random draws use independent streams of `seed` (matrices, initial noise,
particles), so a study gives the same numbers wherever it runs. Relative `[initial] path`s are taken from the study
file's directory; the `[output] path` from the working directory. The tables below are generated from the schema
(`meanfield.study.config.reference_markdown()`, when the site is built; `tests/study/test_config.py` checks that
this page holds exactly its text): the `[model]` keys come from the model registry (`meanfield.models.registry`),
so a registered kind and its parameters are study keys at once, each parameter refused for a kind that lacks it and
defaulting to the chosen kind's value.
"""

_REFERENCE_LAWS = """\
## Initial laws

The `[initial] kind`s (public in `meanfield.laws`): `uniform`; `uniform-noise` (circle: 1 + Σ_k a_k cos(kθ + φ_k);
sphere: 1 + A Σ_j a_j e^{2(⟨x,u_j⟩−1)}, random phases and centres from `seed`; `laws.uniform_noise`);
`von-mises-fisher` (mixture Σ_j w_j C_d(κ_j) e^{κ_j⟨x,c_j⟩}, sampled exactly without a grid); `poisson` (the
wrapped Cauchy law on the circle, the Möbius family on S^{d-1} — exact solutions at β = 0; `laws.poisson`, sampled
exactly without a grid by `laws.sample_poisson`); `gaussian` (R^d); `file` (an `.npz` with an array `values` on
the study grid, or the last density of a results file). Particles are drawn iid from the grid density when there
is one, else from the law itself.
"""


def study_reference_page():
    """The text of ``guide/study_reference.md``: its introduction, then exactly
    ``meanfield.study.config.reference_markdown()`` (the schema's tables, the ``[model]`` keys from the model
    registry) under the heading "Keys", then the initial laws."""
    from meanfield.study import config

    return "\n".join([_REFERENCE_INTRO, "## Keys", "", config.reference_markdown(), _REFERENCE_LAWS])


def write_study_reference(srcdir):
    """Write :func:`study_reference_page` to ``<srcdir>/guide/study_reference.md`` (where it differs) and return
    the path. Called at ``config-inited``; the page is generated, not committed (``.gitignore``)."""
    path = Path(srcdir) / STUDY_REFERENCE
    _write_if_changed(path, study_reference_page())
    return path


# ``X[μ](x)`` in a formula is Markdown's link syntax: in the pages written for GitHub (docs/MATH.md, the README's
# former sections docs/tour.md and docs/scripts.md, ...) a
# bracket followed by a parenthesis whose content is no path, URL or anchor is a formula, not a link.
_FORMULA_LINK = re.compile(r"(\[[^\]\n]*\])\((?![^)]*[./#:])")


def unlink_formulas(app, docname, source):
    if docname in ("MATH", "DESIGN", "KNOWLEDGE", "STYLE", "tour", "scripts"):
        source[0] = _FORMULA_LINK.sub(r"\1\\(", source[0])


# Docstrings write norms |x| and products a * b as plain text (they are read with help() first); in
# reStructuredText |x| is a substitution and *x an emphasis. Outside literal, math and doctest blocks and inline
# literals, such characters are escaped before numpydoc reads the docstring.
_INLINE_LITERAL = re.compile(r"(``.*?``|`[^`]*`)")
_PIPE = re.compile(r"(?<!\\)\|")
_STAR = re.compile(r"(?<![\\*\w])\*(?=[\w(])")
_PARAM_STARS = re.compile(r"^\s*\*{1,2}\w+\s*(:|,|$)")


def _escape_text(line):
    parts = _INLINE_LITERAL.split(line)
    for i in range(0, len(parts), 2):  # the even parts lie outside inline literals
        parts[i] = _PIPE.sub(r"\\|", parts[i])
        if not _PARAM_STARS.match(line):
            parts[i] = _STAR.sub(r"\\*", parts[i])
    return "".join(parts)


def escape_docstring(app, what, name, obj, options, lines):
    block_indent = None  # indentation of the line that opened a literal/directive/doctest block
    for k, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if block_indent is not None:
            if not stripped or indent > block_indent or (stripped.startswith(">>>") or stripped.startswith("...")):
                continue
            if lines[k - 1].strip() and lines[k - 1].lstrip().startswith((">>>", "...")) and indent == block_indent:
                continue  # a doctest's expected output
            block_indent = None
        if stripped.startswith((".. ", ">>>")) or stripped.endswith("::"):
            block_indent = indent
            if stripped.startswith(">>>") or stripped.startswith(".. "):
                continue
        if stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 2:
            continue  # a line block or table row
        lines[k] = _escape_text(line)


# A reference that Sphinx cannot resolve: where it names an object of the library that exists but is not in the
# reference (an internal module, a private helper, a constant), it is shown as code, unlinked, and counted; a
# reference to a name of the library that does not exist stays a warning (an error under -W).
def _lookup(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif isinstance(obj, type) and any(attr in getattr(k, "__annotations__", {}) for k in obj.__mro__):
                obj = None  # a dataclass field or an annotated attribute, set on instances only
            else:
                return False
        return True
    return False


def _candidates(node, docname):
    target = node["reftarget"].lstrip("~.")
    module, cls = node.get("py:module"), node.get("py:class")
    contexts = []
    if module:
        if cls:
            contexts.append(f"{module}.{cls}")
        contexts.append(module)
    # the page of an exported name (api/generated/meanfield.CircleGrid): the module that defines it, and its parents
    page = docname.rsplit("/", 1)[-1]
    if page.split(".")[0] in PACKAGES:
        parts = page.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(parts[0])
                for attr in parts[1:cut]:
                    obj = getattr(obj, attr)
            except (ImportError, AttributeError):
                continue
            home = getattr(obj, "__module__", None) or getattr(obj, "__name__", None)
            if isinstance(home, str):
                pieces = home.split(".")
                contexts += [".".join(pieces[:j]) for j in range(len(pieces), 0, -1)]
            break
    # the object whose docstring holds the reference, by its defining module: "...: docstring of a.b.C.f"
    source = node.source or ""
    if "docstring of " in source:
        pieces = source.rsplit("docstring of ", 1)[1].split(".")
        contexts += [".".join(pieces[:j]) for j in range(len(pieces), 0, -1)]
    yield target
    for context in contexts:
        yield f"{context}.{target}"


def _ours(target):
    return target.lstrip("~.").split(".")[0] in PACKAGES


def unlinked_internal(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    for candidate in _candidates(node, node.get("refdoc", "")):
        if _ours(candidate) and _lookup(candidate):
            app.env.meanfield_unlinked = getattr(app.env, "meanfield_unlinked", 0) + 1
            return contnode
    return None


def _exported_objects():
    """The objects (not modules) each top-level package exports: each has its own page."""
    objects = set()
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in exported_names(package):
            obj = getattr(module, name, None)
            if obj is not None and not isinstance(obj, (type(module), str)):
                objects.add(id(obj))
    return objects


_EXPORTED = None


def skip_exported(app, what, name, obj, skip, options):
    """On a submodule's page, leave out what a top-level package exports: it has its own page."""
    global _EXPORTED
    if _EXPORTED is None:
        _EXPORTED = _exported_objects()
    if what == "module" and id(obj) in _EXPORTED:
        return True
    return None


def count(app, exception):
    if exception is not None:
        return
    objects = app.env.get_domain("py").objects
    counts = {}
    for package in PACKAGES:
        names = exported_names(package)
        documented = [n for n in names if f"{package}.{n}" in objects]
        missing = sorted(set(names) - set(documented))
        counts[package] = {"exported": len(names), "documented": len(documented), "missing": missing}
        if missing:
            logger.warning("API reference: %s exports %d names, %d documented; missing: %s",
                           package, len(names), len(documented), ", ".join(missing))
    total_e = sum(c["exported"] for c in counts.values())
    total_d = sum(c["documented"] for c in counts.values())
    logger.info("API reference: %d of %d exported names documented (%s)", total_d, total_e,
                ", ".join(f"{p} {c['documented']}/{c['exported']}" for p, c in counts.items()))
    # for whoever maintains the reference, not a problem of the build: shown with sphinx-build -v, and in api_counts.json
    unlinked = getattr(app.env, "meanfield_unlinked", 0)
    counts["unlinked_internal_references"] = unlinked
    logger.verbose("Docstring references to existing names outside the API reference (internal modules, private "
                   "helpers, constants), shown as code without a link, as intended: %d", unlinked)
    Path(app.outdir).mkdir(parents=True, exist_ok=True)
    (Path(app.outdir) / "api_counts.json").write_text(json.dumps(counts, indent=1), encoding="utf-8")


def setup(app):
    app.connect("config-inited", generate)
    app.connect("source-read", unlink_formulas)
    app.connect("missing-reference", unlinked_internal)
    app.connect("autodoc-skip-member", skip_exported)
    app.connect("autodoc-process-docstring", escape_docstring, priority=100)  # before numpydoc (500)
    app.connect("build-finished", count)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
