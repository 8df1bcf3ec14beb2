"""The README: its set-up commands are the ones `.ci/run` runs, and every relative link in it reaches a file.

The README is short (what the library is, the two set-up commands, a picture, the site's pages); everything else
lives in the documentation site under docs/, so a page moved or renamed there must be followed here.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_prose():
    """The README without its code blocks (fenced or indented), where a bracket followed by a parenthesis is a
    formula, not a link."""
    text = re.sub(r"```.*?```", "", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.startswith("    "))


def _code_blocks():
    return re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)


def test_set_up_commands_are_the_ones_ci_runs():
    """The README's two set-up blocks are, command for command, what `.ci/run` runs (in the same order)."""
    install, tests = _code_blocks()[:2]
    commands = [c.strip() for c in install.replace("&&", "\n").splitlines() if c.strip()] + [tests.strip()]
    assert commands == ['python -m pip install -e ".[test]"', "meanfield run examples/circle_clusters.toml --plot --overwrite",
                        "python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines() if not line.lstrip().startswith("#")]
    at = [next(k for k, line in enumerate(lines) if command in line) for command in commands]
    assert at == sorted(at), f"{commands} are not run in this order by .ci/run"


def test_every_relative_link_reaches_a_file():
    """Links and the picture: each relative target exists in the repository (a link to a page that another
    branch adds fails here until that page is there)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", _readme_prose())
    relative = [t for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    assert len(relative) >= 10, relative  # the site's main pages are listed
    missing = [t for t in relative if not (ROOT / t.split("#")[0]).exists()]
    assert not missing, f"README links to {missing}, which do not exist"


def test_the_picture_is_small_and_committed_with_its_script():
    """One picture, under 250 KB, redrawn by scripts/readme_figure.py (named beside it in the README)."""
    pictures = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", _readme_prose())
    assert len(pictures) == 1
    assert (ROOT / pictures[0]).stat().st_size < 250_000
    assert "scripts/readme_figure.py" in _readme_prose()
    from scripts.readme_figure import OUTPUT

    assert OUTPUT == ROOT / pictures[0]  # the script redraws this very file
