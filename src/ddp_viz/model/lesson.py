"""Lessons: Markdown plus a small TOML file (code view, phase highlights), rendered to HTML.

Pure model layer. Content lives under assets/lessons/ so a lecturer can edit or add a lesson
without touching Python.
"""

from __future__ import annotations

import html
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ddp_viz.model.assets import asset
from ddp_viz.model.timeline import PHASES


@dataclass(frozen=True)
class Lesson:
    title: str
    markdown: str
    code: str
    highlight: dict[str, list[int]] = field(default_factory=dict)
    phase_text: dict[str, str] = field(default_factory=dict)
    quiz: str = ""

    def lines_for(self, phase: str) -> list[int]:
        """1-based code lines to highlight while ``phase`` plays."""
        return self.highlight.get(phase, [])


def load_lesson(name: str = "ddp-pattern", folder: Path | None = None) -> Lesson:
    folder = folder or asset("lessons")
    meta = tomllib.loads((folder / f"{name}.toml").read_text(encoding="utf-8"))
    markdown = (folder / meta["markdown"]).read_text(encoding="utf-8")
    highlight = {k: [int(n) for n in v] for k, v in meta.get("highlight", {}).items()}
    unknown = set(highlight) - set(PHASES)
    if unknown:
        raise ValueError(f"lesson {name}: unknown phases in [highlight]: {sorted(unknown)}")
    return Lesson(
        title=meta.get("title", name),
        markdown=markdown,
        code=meta.get("code", "").strip("\n"),
        highlight=highlight,
        phase_text=dict(meta.get("phase_text", {})),
        quiz=meta.get("quiz", ""),
    )


def highlight_python(code: str, style: str = "default", pre_style: str = "margin:0") -> str:
    """Syntax-highlighted HTML with inline styles (Qt's rich text has no stylesheet classes)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    formatter = HtmlFormatter(noclasses=True, nowrap=True, style=style)
    body = highlight(code, PythonLexer(), formatter)
    return f"<pre style='{pre_style}'>{body}</pre>"


def markdown_to_html(text: str, code_style: str = "default", code_bg: str = "#f3f3f0") -> str:
    """Render lesson Markdown, with Python code blocks syntax-highlighted."""
    from markdown_it import MarkdownIt

    # Qt rich text honours inline styles and table attributes more reliably than CSS.
    pre_style = f"background:{code_bg}; padding:8px"

    def fence(code: str, lang: str, _attrs: str) -> str:
        if lang in ("python", "py"):
            return highlight_python(code, code_style, pre_style)
        return f"<pre style='{pre_style}'>{html.escape(code)}</pre>"

    md = MarkdownIt("commonmark", {"highlight": fence}).enable("table")
    body = md.render(text).replace("<pre>", f"<pre style='{pre_style}'>")  # indented code
    body = body.replace("<table>", "<table cellpadding='4' cellspacing='0' border='1'>")
    return body
