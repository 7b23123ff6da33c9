"""Every rule `ddp-viz check` runs (model.rules), each failing on a lesson folder broken for it
and naming the lesson, the place, the rule and a fix; a lecturer's folder outside the repo is
checked beside the course and shown in it (pure: lesson files, no Qt, no torch)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ddp_viz.cli import build_parser, main
from ddp_viz.model.assets import asset
from ddp_viz.model.rules import RULES, Problem, rules_markdown
from ddp_viz.model.rules.check import check

DOCS = Path(__file__).parents[2] / "docs" / "lessons.md"


def lesson_copy(tmp_path: Path, name: str = "my-lesson", order: int = 95) -> Path:
    """The first lesson, copied as a lecturer's own: its own id, order and term."""
    folder = tmp_path / "lessons" / name
    shutil.copytree(asset("lessons", "ddp-pattern"), folder)
    toml = (folder / "lesson.toml").read_text()
    toml = re.sub(r"^order = \d+", f"order = {order}", toml, count=1, flags=re.M)
    toml = re.sub(r"^terms = \[.*\]$", f'terms = ["{name} word"]', toml, count=1, flags=re.M)
    (folder / "lesson.toml").write_text(toml)
    return folder


def edit(folder: Path, old: str, new: str, file: str = "lesson.toml", count: int = 1) -> None:
    path = folder / file
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, count))


def only_questions(folder: Path, n: int) -> None:
    text = (folder / "lesson.toml").read_text()
    (folder / "lesson.toml").write_text("[[question]]".join(text.split("[[question]]")[: n + 1]))


def said(folder: Path) -> list[Problem]:
    return check([folder]).problems


BROKEN = {
    "loads": (
        lambda f: edit(f, '\nkind = "predict"', '\nkind = "essay"'),
        "question predict-three-ranks",
        "unknown kind 'essay'",
    ),
    "texts": (lambda f: edit(f, "summary = ", "# summary = "), "lesson.toml", "`summary` is empty"),
    "phases": (
        lambda f: edit(
            f,
            'local = "Each rank runs forward and backward on its own rows: '
            'its own loss and local gradient."\n',
            "",
        ),
        "phase local",
        "has no caption",
    ),
    "highlight": (
        lambda f: edit(f, 'allreduce = ["loss.backward()"]', 'allreduce = ["loss.backward()", 99]'),
        "phase allreduce",
        "line 99 is outside the listing's 30 lines",
    ),
    "questions": (lambda f: only_questions(f, 3), "lesson.toml", "3 question(s); a lesson needs 4"),
    "scenario": (
        lambda f: edit(f, "lr = 0.01", "lr = -0.5", "scenario.toml"),
        "scenario.toml: lr",
        "must be greater than 0, got -0.5",
    ),
    "kind": (
        lambda f: edit(f, 'kind = "ddp_step" ', 'kind = "watched"  '),
        "lesson.toml",
        "the kind watched draws watch, not the scene 'ddp_step'",
    ),
    "listing": (
        lambda f: edit(f, "    optimizer.step()", "    optimizer.stepp()"),
        "listing line 27",
        "`optimizer.stepp()  # local, same on all` is not in the engine (in order)",
    ),
    "terms": (
        lambda f: edit(f, 'terms = ["my-lesson word"]', 'terms = ["my-lesson word", "gloo"]'),
        "term 'gloo'",
        "is introduced by ddp-pattern too",
    ),
    "term-order": (
        lambda f: edit(f, "order = 95", "order = 1"),
        "term 'torchrun'",
        "is used before",
    ),
    "prerequisites": (
        lambda f: (
            edit(f, "prerequisites = []", 'prerequisites = ["buckets"]')
            or edit(f, "order = 95", "order = 12")
        ),
        "prerequisite 'buckets'",
        "comes after this lesson in the course",
    ),
    "quiz-shape": (
        lambda f: longest_always_right(f),
        "the choice questions",
        "the answer is a longest choice in 7 of 7",
    ),
}


def longest_always_right(folder: Path) -> None:
    """Every choice question's answer padded to be its longest choice."""
    text = (folder / "lesson.toml").read_text()
    out = []
    for block in text.split("[[question]]"):
        m = re.search(r"^answer = (\d+)", block, flags=re.M)
        c = re.search(r"^choices = \[\n(.*?)\n\]", block, flags=re.M | re.S)
        if m and c:
            lines = c.group(1).splitlines()
            k = int(m.group(1))
            lines[k] = lines[k].replace('",', ' — and this choice is the right one of them all",')
            block = block.replace(c.group(1), "\n".join(lines))
        out.append(block)
    (folder / "lesson.toml").write_text("[[question]]".join(out))


def test_the_copy_meets_every_rule_before_it_is_broken(tmp_path) -> None:
    folder = lesson_copy(tmp_path)
    assert said(folder) == []


@pytest.mark.parametrize("rule_id", list(BROKEN))
def test_each_rule_names_the_lesson_the_place_and_a_fix(tmp_path, rule_id) -> None:
    folder = lesson_copy(tmp_path)
    breaks, where, words = BROKEN[rule_id]
    breaks(folder)
    found = [p for p in said(folder) if p.rule == rule_id]
    assert found, [p.text() for p in said(folder)]
    p = found[0]
    assert (p.lesson, p.where) == ("my-lesson", where), p.text()
    assert p.message.startswith(words), p.text()
    assert p.fix and p.text().startswith(f"my-lesson: {where}: {words}")


def test_every_rule_has_a_lesson_broken_for_it_here() -> None:
    assert set(BROKEN) == set(RULES)


def test_five_mistakes_are_named_in_one_check_and_the_fixed_lesson_is_in_the_course(
    tmp_path, capsys, monkeypatch
) -> None:
    folder = lesson_copy(tmp_path)
    for rule_id in ("texts", "phases", "questions", "scenario", "listing"):
        BROKEN[rule_id][0](folder)
    assert main(["check", str(folder.parent)]) == 1
    out = capsys.readouterr().out
    for rule_id in ("texts", "phases", "questions", "scenario", "listing"):
        assert f"[{rule_id}]" in out, out
    lines = [line for line in out.splitlines() if line.startswith("my-lesson: ")]
    assert out.rstrip().endswith(f"✗ {len(lines)} problem(s) in 1 of 1 lesson(s) checked")
    shutil.rmtree(folder)
    lesson_copy(tmp_path)
    monkeypatch.setenv("DDP_VIZ_LESSONS_PATH", "")  # main() sets it; put back after the test
    assert main(["check", str(folder.parent)]) == 0
    assert capsys.readouterr().out.strip() == f"✓ 1 lesson(s) meet all {len(RULES)} rules"
    assert main(["--lessons", str(folder.parent), "lessons"]) == 0
    listed = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line[:3].strip()]
    assert "my-lesson" in listed and len(listed) == len(check().lessons)


def test_a_folder_without_lessons_is_a_usage_error(tmp_path, capsys) -> None:
    assert main(["check", str(tmp_path)]) == 2
    assert "no lesson.toml in it" in capsys.readouterr().err


def test_the_whole_course_meets_every_rule(capsys) -> None:
    assert main(["check"]) == 0
    assert capsys.readouterr().out.startswith("✓ ")


@pytest.mark.source
def test_the_docs_list_every_rule_as_the_check_says_it() -> None:
    """docs/lessons.md holds `ddp-viz check --rules`' output between its two markers."""
    text = DOCS.read_text()
    begin, end = "<!-- rules: ddp-viz check --rules -->\n", "<!-- end of rules -->"
    assert begin in text and end in text
    assert text.split(begin)[1].split(end)[0] == rules_markdown()


def test_a_lecturers_lessons_can_be_the_whole_course(tmp_path, capsys, monkeypatch) -> None:
    """``--lessons DIR --lessons-only``: the course is the lecturer's folder alone. Its lesson
    is listed alone, is the one a run without --lesson takes, and is what ``check`` with no
    folder checks; without --lessons the flag is a usage error naming it."""
    from ddp_viz.model.course import first_lesson, load_course
    from ddp_viz.options import load_scenario

    folder = lesson_copy(tmp_path, "my-lesson")
    monkeypatch.setenv("DDP_VIZ_LESSONS_PATH", "")  # main() sets them; put back after the test
    monkeypatch.setenv("DDP_VIZ_LESSONS_ONLY", "")
    assert main(["--lessons", str(folder.parent), "--lessons-only", "lessons"]) == 0
    listed = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line[:3].strip()]
    assert listed == ["my-lesson"]
    course = load_course()  # as the window and the engine read it, from the environment
    assert course.ids == ["my-lesson"] and first_lesson(course) == "my-lesson"
    assert first_lesson(course, "ddp-pattern") == "my-lesson"  # not in this course
    args = build_parser().parse_args(["run"])
    assert load_scenario(args) == course.get("my-lesson").scenario()
    assert main(["check"]) == 0
    assert capsys.readouterr().out.strip() == f"✓ 1 lesson(s) meet all {len(RULES)} rules"
    # beside the app's course again: the app's first lesson is the default
    monkeypatch.setenv("DDP_VIZ_LESSONS_ONLY", "")
    both = load_course()
    assert "my-lesson" in both.ids and first_lesson(both) == "ddp-pattern"
    assert first_lesson(both, "my-lesson") == "my-lesson"
    monkeypatch.setenv("DDP_VIZ_LESSONS_PATH", "")
    assert main(["--lessons-only", "lessons"]) == 2
    assert "--lessons-only needs --lessons DIR" in capsys.readouterr().err
