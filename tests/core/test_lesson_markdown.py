"""A lesson's Markdown as the lesson pane's rich text: Python blocks coloured with inline styles
on the block's own background, other blocks escaped on it, indented code too, tables that wrap
their cells, and a quiz prompt's inline Markdown without a paragraph around it."""

from __future__ import annotations

from ddp_viz.model.lesson import highlight_python, inline_markdown, markdown_to_html

PRE = "<pre style='background:{bg}; padding:8px; white-space:pre-wrap'>"
EQUALS = '<span style="color: #666">=</span>'  # pygments' default style for an operator


def test_python_blocks_are_coloured_inline_on_the_blocks_background() -> None:
    html = markdown_to_html("```python\nx = 1\n```\n", "default", "#123456")
    assert html.startswith(PRE.format(bg="#123456") + "x " + EQUALS)
    assert html.endswith("</pre>\n") and "<code" not in html
    assert markdown_to_html("```py\nx = 1\n```\n", "default", "#000").startswith(
        PRE.format(bg="#000") + "x " + EQUALS
    )
    other = markdown_to_html("```python\nx = 1\n```\n", "monokai", "#000")
    assert EQUALS not in other and "<span style=" in other  # the style asked for


def test_the_default_background_is_the_lessons_paper() -> None:
    assert markdown_to_html("```text\nx\n```\n").startswith(PRE.format(bg="#f3f3f0") + "x\n")
    assert EQUALS in markdown_to_html("```python\nx = 1\n```\n")


def test_other_blocks_and_indented_code_are_escaped_on_the_same_background() -> None:
    html = markdown_to_html("```text\na < b\n```\n\n    c & d\n", "default", "#000")
    assert html == (
        PRE.format(bg="#000")
        + "a &lt; b\n</pre>\n"
        + PRE.format(bg="#000")
        + "<code>c &amp; d\n</code></pre>\n"
    )


def test_a_table_wraps_its_cells_with_borders_and_the_heading_is_kept() -> None:
    html = markdown_to_html("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert html.startswith(
        "<h1>T</h1>\n<table cellpadding='4' cellspacing='0' border='1' width='100%'>"
    )
    assert "<td>1</td>" in html and "<th>b</th>" in html and "<table>" not in html


def test_a_prompt_is_inline_markdown_without_a_paragraph() -> None:
    assert inline_markdown("**x** and `y`") == "<strong>x</strong> and <code>y</code>"
    assert inline_markdown("a < b") == "a &lt; b"


def test_a_listing_is_highlighted_in_a_pre_of_its_own_style() -> None:
    assert highlight_python("x = 1") == "<pre style='margin:0'>x " + EQUALS + (
        ' <span style="color: #666">1</span>\n</pre>'
    )
    assert highlight_python("x = 1", "default", "p").startswith("<pre style='p'>x ")
    assert EQUALS not in highlight_python("x = 1", "monokai")
