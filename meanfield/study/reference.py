"""The documentation site's "Study file reference": the schema's tables in Markdown (:func:`reference_markdown`)."""

from __future__ import annotations

from .schema import REQUIRED, SCHEMA, StudyError, show_default

__all__ = ["reference_markdown"]

_TYPES = {"str": "string", "path": "string", "bool": "boolean", "int": "integer", "float": "number",
          "floats": "number or array", "ints": "integer or array", "matrix": "number, array or string",
          "matrices": "array (d×d) or array of them",
          "vectors": "array of arrays", "bounds": "array of [a, b]", "shape": "integer or array"}


def _cell(text: str) -> str:
    """Text in a Markdown table cell (a bar would end the cell)."""
    return text.replace("|", "\\|")


def reference_markdown(section: str | None = None) -> str:
    """The "Study file reference" tables, one per section, generated from :data:`SCHEMA` (the [model]
    keys from the model registry): key, type (with its choices), default ("required", or — where none is
    filled in before validation) and meaning. The documentation site's page docs/guide/study_reference.md is
    generated from this text when the site is built (docs/_ext/meanfield_api.py); tests/study/test_config.py
    checks that the page's generator writes exactly it, so the reference cannot drift from the schema.
    ``meanfield keys [SECTION]`` prints it (or one section's table: ``section``, "top" for the top level).

    Raises
    ------
    StudyError
        ``section`` is not a section of the schema (the message lists them).
    """
    names = {(s or "top"): s for s in SCHEMA}
    if section is not None and section.strip("[]") not in names:
        raise StudyError(f"keys {section}: not a section of a study file; the sections: {', '.join(names)}")
    chosen = list(SCHEMA) if section is None else [names[section.strip("[]")]]
    out = []
    for section in chosen:
        keys = SCHEMA[section]
        out += [f"**[{section}]**" if section else "**top level**", "",
                "| key | type | default | meaning |", "|---|---|---|---|"]
        for name, key in keys.items():
            kind = _TYPES[key.kind] + (f": {', '.join(key.choices)}" if key.choices else "")
            default = ("required" if key.default is REQUIRED else "—" if key.default is None
                       else show_default(key.default))
            out.append(f"| `{name}` | {_cell(kind)} | {_cell(default)} | {_cell(key.doc)} |")
        out.append("")
    return "\n".join(out)
