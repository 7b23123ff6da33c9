"""``ddp-viz check``'s reading and reporting, word for word (pure): a folder that does not
read is a `loads` problem naming where, the lecturer's folders are checked and the course's
only placed beside them, and the closing line counts what it says."""

from __future__ import annotations

import pytest

from ddp_viz.model.lesson import LessonError
from ddp_viz.model.rules import RULES, Problem, rules_markdown
from ddp_viz.model.rules.check import Checked, check, lesson_dirs
from tests.core.test_lesson_rules import DOCS, edit, lesson_copy

FIX = "see the `loads` rule: ddp-viz check --rules"


def test_a_question_that_does_not_read_is_named_by_its_id(tmp_path) -> None:
    folder = lesson_copy(tmp_path)
    edit(folder, '\nkind = "choice"', '\nkind = "essay"')  # the first question's
    out = check([folder])
    (p,) = [p for p in out.problems if p.rule == "loads"]
    assert (p.lesson, p.where, p.fix) == ("my-lesson", p.where, FIX)
    assert p.where.startswith("question ") and ": " not in p.where, p.where
    assert "essay" in p.message and not p.message.startswith("question "), p.message
    assert out.lessons == ["my-lesson"]  # counted, though it could not be read
    assert out.text().endswith("✗ 1 problem(s) in 1 of 1 lesson(s) checked")


def test_a_lesson_toml_that_does_not_read_is_named_at_lesson_toml(tmp_path) -> None:
    folder = lesson_copy(tmp_path)
    (folder / "lesson.toml").write_text('title = "x"\n[[question\n', encoding="utf-8")
    (p,) = check([folder]).problems
    assert (p.lesson, p.rule, p.where, p.fix) == ("my-lesson", "loads", "lesson.toml", FIX)
    assert not p.message.startswith("lesson "), p.message  # the id's prefix is cut


def test_only_the_named_folders_are_checked_and_the_course_places_them(tmp_path) -> None:
    mine = lesson_copy(tmp_path, "mine-b", order=96)
    other = lesson_copy(tmp_path, "mine-a", order=95)
    edit(other, 'summary = "', 'summary = "" # "')  # broken, but not asked about
    out = check([mine])
    assert out.lessons == ["mine-b"] and out.problems == []
    assert out.text() == f"✓ 1 lesson(s) meet all {len(RULES)} rules"
    both = check([mine.parent])
    assert both.lessons == ["mine-a", "mine-b"]
    assert [(p.lesson, p.rule) for p in both.problems] == [("mine-a", "texts")]


def test_lesson_dirs_takes_a_lesson_or_a_folder_of_them(tmp_path) -> None:
    b = lesson_copy(tmp_path, "b-lesson")
    a = lesson_copy(tmp_path, "a-lesson")
    assert lesson_dirs(b) == [b]
    assert lesson_dirs(b.parent) == [a, b]  # sorted
    with pytest.raises(LessonError, match="no such folder"):
        lesson_dirs(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(LessonError, match=r"no lesson\.toml in it or in a folder of it"):
        lesson_dirs(tmp_path / "empty")


def test_the_closing_line_counts_problems_and_lessons() -> None:
    p = Problem("x", "texts", "lesson.toml", "`title` is empty", "add it")
    two = Checked(["x", "y", "z"], [p, Problem("y", "texts", "lesson.md", "empty", "write it"), p])
    assert two.text().splitlines()[-1] == "✗ 3 problem(s) in 2 of 3 lesson(s) checked"
    assert two.text().startswith(p.text() + "\n")


def test_the_rules_list_is_one_line_a_rule_in_order() -> None:
    lines = rules_markdown().splitlines(keepends=True)
    assert lines == [f"- **`{r.id}`**: {r.says}\n" for r in RULES.values()]
    assert lines[0].startswith("- **`loads`**: The folder reads") and len(lines) == len(RULES)


@pytest.mark.source
def test_the_rules_as_the_docs_list_them() -> None:
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("<!-- rules: ddp-viz check --rules -->\n")[1].split("<!-- end of rules")[0]
    assert rules_markdown() == block
    assert [line.split("`")[1] for line in block.splitlines()] == list(RULES)


@pytest.mark.source
def test_the_docs_list_every_kind_as_the_registry_says() -> None:
    """docs/lessons.md's list of the kinds, their scenes and quantities is the registry's
    (``ddp-viz check --kinds``): each scene and quantity named once, none undocumented."""
    from ddp_viz.model import registry
    from ddp_viz.model.kinds_doc import CORE_QUANTITIES, kinds_markdown
    from ddp_viz.model.quiz import REVEALED_IN

    text = DOCS.read_text(encoding="utf-8")
    block = text.split("<!-- kinds: ddp-viz check --kinds -->\n")[1].split("<!-- end of kinds")[0]
    assert block == kinds_markdown()
    assert set(CORE_QUANTITIES) == set(REVEALED_IN)
    assert "(undocumented)" not in block
    for kind in registry.kinds():
        assert f"- **`{kind.id}`**" in block
        for scene in kind.scenes:
            assert block.count(f"  - scene `{scene}`: ") == 1
        for q in kind.quantities:
            assert block.count(f"  - quantity `{q}`") == 1
