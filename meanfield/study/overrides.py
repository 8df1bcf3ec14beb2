"""Command-line overrides of a study's keys (``--over``): a short or dotted key name, its values typed by the
schema, and a copy of the raw study tables with one key replaced."""

from __future__ import annotations

import copy

from .schema import SCHEMA, StudyError

__all__ = ["resolve_key", "parse_over", "override"]

_SHORT = {"beta": "model.beta", "n": "particles.n", "d": "dimension", "repeats": "particles.repeats",
          "lmax": "grid.lmax", "seed": "seed", "t_end": "time.t_end", "noise": "model.noise"}


def resolve_key(name: str) -> tuple[str, str]:
    """(section, key) for a dotted or short name (beta, n, d, seed, lmax, repeats, t_end)."""
    dotted = _SHORT.get(name, name)
    section, _, key = dotted.rpartition(".")
    if section not in SCHEMA or key not in SCHEMA[section] or section == "" and key == "domain":
        raise StudyError(f"--over {name}: not a key that can be swept (try beta, n, d, seed, or section.key)")
    return section, key


def parse_over(spec: str) -> tuple[str, list]:
    """``key=start:stop:num`` (num values, both ends included), ``key=a,b,c`` or ``key=a``.

    Returns the dotted key and the list of values, typed by the schema.
    """
    name, eq, values = spec.partition("=")
    if not eq or not values:
        raise StudyError(f"--over {spec!r}: expected key=start:stop:num or key=a,b,c")
    section, key = resolve_key(name.strip())
    kind = SCHEMA[section][key].kind
    integer = kind in ("int", "ints")
    try:
        if ":" in values:
            start, stop, num = values.split(":")
            num = int(num)
            if num < 1:
                raise ValueError
            a, b = float(start), float(stop)
            vals = [a + (b - a) * i / (num - 1) for i in range(num)] if num > 1 else [a]
            if integer:
                vals = sorted({round(v) for v in vals})
        else:
            vals = [int(v) if integer else float(v) for v in values.split(",")]
    except ValueError:
        raise StudyError(f"--over {spec!r}: cannot read the values {values!r} "
                         f"({'integers' if integer else 'numbers'}, start:stop:num or a,b,c)") from None
    if len(set(vals)) != len(vals):
        raise StudyError(f"--over {spec!r}: repeated values")
    return (f"{section}.{key}" if section else key), vals


def override(raw: dict, dotted: str, value) -> dict:
    """A copy of the raw study tables with one key replaced (before validation)."""
    out = copy.deepcopy(raw)
    section, _, key = dotted.rpartition(".")
    table = out.setdefault(section, {}) if section else out
    table[key] = value
    return out
