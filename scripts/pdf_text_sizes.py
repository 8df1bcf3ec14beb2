"""The size of every glyph in PDF figures, read from the files themselves: a check of "no text below 7 pt"
independent of matplotlib (issue 39, item 3).

Each character a PDF draws is set in a font at a size (the content stream's ``Tf`` operator) through a text matrix;
its printed size in points is that size times the matrix's scale √|det|. pdfminer.six parses the files (an optional
tool, not a dependency of the library: ``pip install pdfminer.six``). matplotlib writes mathtext sub- and
superscripts as glyphs of their own size (0.7 of their text), so they are measured as they print. Unicode script
characters (S², ℝ²) are characters of their text's font and count at its size, as in a PDF.

Per file: the number of glyphs, the smallest size and the glyphs below ``--least`` points (default 7); the exit status
is 1 where any file has one.

Run:  python scripts/pdf_text_sizes.py results/*.pdf
      meanfield plot results.nc --format pdf --dpi 300 && python scripts/pdf_text_sizes.py results-*.pdf
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path


def glyph_sizes(path) -> list[tuple[float, str]]:
    """(size in points, character) of every glyph the PDF at ``path`` draws, in the order drawn."""
    try:
        from pdfminer.high_level import extract_pages
        from pdfminer.layout import LTChar
    except ImportError:  # pragma: no cover - an optional tool
        raise SystemExit("this check reads PDFs with pdfminer.six: pip install pdfminer.six") from None

    sizes = []

    def walk(obj):
        if isinstance(obj, LTChar):
            a, b, c, d, _, _ = obj.matrix
            sizes.append((obj.fontsize * math.sqrt(abs(a * d - b * c)), obj.get_text()))
        elif hasattr(obj, "__iter__"):
            for child in obj:
                walk(child)

    init = LTChar.__init__

    def keeping_the_size(self, matrix, font, fontsize, *args, **kwargs):  # LTChar keeps its box, not its Tf size
        init(self, matrix, font, fontsize, *args, **kwargs)
        self.fontsize = fontsize

    LTChar.__init__ = keeping_the_size
    try:
        for page in extract_pages(str(path)):
            walk(page)
    finally:
        LTChar.__init__ = init
    return sizes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pdfs", nargs="+", type=Path, help="PDF files")
    ap.add_argument("--least", type=float, default=7.0, help="the least size in points (default 7)")
    args = ap.parse_args(argv)
    if args.least <= 0:
        ap.error(f"--least: must be > 0, got {args.least}")
    small_files = 0
    width = max(len(p.name) for p in args.pdfs)
    for path in args.pdfs:
        if not path.is_file():
            ap.error(f"no such file: {path}")
        sizes = glyph_sizes(path)
        small = sorted({(round(s, 2), ch) for s, ch in sizes if s < args.least - 1e-9})
        small_files += bool(small)
        least = f"{min(s for s, _ in sizes):5.2f}" if sizes else "    -"
        shown = ", ".join(f"{ch!r} {s:g} pt" for s, ch in small[:8]) + (" …" if len(small) > 8 else "")
        print(f"{path.name:{width}s}  glyphs {len(sizes):5d}  smallest {least} pt"
              + (f"  below {args.least:g} pt: {shown}" if small else ""))
    print(f"{small_files} of {len(args.pdfs)} files with a glyph below {args.least:g} pt")
    return 1 if small_files else 0


if __name__ == "__main__":
    sys.exit(main())
