"""Wrapped code lines keep their place: a continuation starts under the line's own
indentation plus four columns, not at column 0 (which read as wrong indentation)."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtGui import QFont, QFontMetricsF, QTextBlock, QTextCursor, QTextDocument

MONO_FAMILIES = ("monospace", "DejaVu Sans Mono", "Menlo", "Consolas", "Courier New")
HANG_COLUMNS = 4  # a continuation sits this many columns right of its line's indentation


def hang(blocks: Iterable[QTextBlock], font: QFont) -> None:
    """Give each block a hanging indent in columns of ``font`` (the code's monospace)."""
    column = QFontMetricsF(font).horizontalAdvance(" ")
    for block in blocks:
        text = block.text()
        if not text.strip():
            continue
        width = (len(text) - len(text.lstrip(" ")) + HANG_COLUMNS) * column
        fmt = block.blockFormat()
        fmt.setLeftMargin(fmt.leftMargin() + width)
        fmt.setTextIndent(fmt.textIndent() - width)
        QTextCursor(block).setBlockFormat(fmt)


def code_blocks(doc: QTextDocument) -> list[QTextBlock]:
    """The blocks of ``doc`` that are code: HTML ``<pre>`` (lines Qt never joins), or text
    set in a monospace family (a wrapping ``<pre>``: Markdown's and Pygments' code)."""
    out, block = [], doc.begin()
    while block.isValid():
        if block.blockFormat().nonBreakableLines() or _all_mono(block):
            out.append(block)
        block = block.next()
    return out


def _all_mono(block: QTextBlock) -> bool:
    """Every fragment of ``block`` is monospace (a prose line with inline code is not code)."""
    it, seen = block.begin(), False
    while not it.atEnd():
        families = it.fragment().charFormat().fontFamilies() or []
        if not any(f in MONO_FAMILIES for f in families):
            return False
        seen = True
        it += 1
    return seen
