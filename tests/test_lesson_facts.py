"""The lessons say what the code does: checks that tie lesson text to the code and to torch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddp_viz.model.course import load_course

ENGINE = Path(__file__).parent.parent / "src" / "ddp_viz" / "engine"
COURSE = load_course()


def test_the_timeout_the_lesson_names_is_the_one_the_ranks_use() -> None:
    rank_py = (ENGINE / "rank.py").read_text()
    seconds = int(re.search(r"PG_TIMEOUT = timedelta\(seconds=(\d+)\)", rank_py).group(1))
    assert f"this app uses {seconds} seconds" in COURSE.get("ddp-pattern").markdown


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_dimmed_lines_are_ddp_vizs_own_instrumentation(lesson) -> None:
    lines = lesson.code.splitlines()
    dimmed = [lines[n - 1] for n in lesson.dim]
    assert any("register_comm_hook" in line for line in dimmed)
    assert all("ddp-viz" in line or "hook" in line for line in dimmed)
    undimmed = [line for i, line in enumerate(lines, 1) if i not in lesson.dim]
    assert not any("register_comm_hook" in line for line in undimmed)


@pytest.mark.parametrize("lesson", COURSE.lessons, ids=lambda lesson: lesson.id)
def test_the_backward_line_is_what_the_all_reduce_highlights(lesson) -> None:
    lines = lesson.code.splitlines()
    assert [lines[n - 1].strip().split("#")[0].strip() for n in lesson.lines_for("allreduce")] == [
        "loss.backward()"
    ]
    assert lines[lesson.lines_for("step")[0] - 1].strip().startswith("optimizer.step()")


def test_no_sync_is_taught_as_the_forward_inside_the_block() -> None:
    lesson = COURSE.get("ddp-pattern")
    q = next(q for q in lesson.questions if q.id == "no-sync")
    assert "forward" in q.choices[q.answer].lower() or "forward" in q.explain.lower()
    assert "forward" in lesson.markdown and "no_sync" in lesson.markdown


def test_the_lesson_never_prints_the_answer_it_asks_to_predict() -> None:
    lesson = COURSE.get("ddp-pattern")
    assert "33.17" not in lesson.markdown and "33.1" not in lesson.markdown
    q = next(q for q in lesson.questions if q.kind == "predict")
    assert q.quantity.world_size == 3


def test_the_lesson_says_ddp_divides_before_it_sums() -> None:
    lesson = COURSE.get("ddp-pattern")
    assert (
        "divides" in lesson.phase_text["allreduce"]
        and "then sums" in lesson.phase_text["allreduce"]
    )


def test_the_installed_torch_divides_first_as_the_lesson_says() -> None:
    from importlib.util import find_spec

    spec = find_spec("torch")
    hooks = Path(spec.origin).parent / "distributed/algorithms/ddp_comm_hooks/default_hooks.py"
    source = hooks.read_text()
    assert "Apply the division first to avoid overflow" in source
    fut = source[source.index("def _allreduce_fut") :]
    assert fut.index("tensor.div_(") < fut.index("dist.all_reduce(")
