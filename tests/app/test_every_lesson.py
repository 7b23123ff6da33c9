"""Every lesson of the course runs headless from its own folder: the scenario ``ddp-viz run
--lesson ID --json`` loads (the command line's own parser and loader) runs on a real engine and
ends well, every line of its recording (the header naming the lesson, then each line as the
engine wrote it, which ``--json`` passes on unread) is strict JSON valid against ``ddp-viz
schema``, and the report made from those lines says the run's verdict.

The runs share the test worker's warm engine (the ``engine`` fixture): a ``ddp-viz run`` per
lesson paid an engine's cold start eleven times over, most of each test's time. The command
line itself, as a process, is ``test_cli.py``'s (``test_run_json_is_the_event_stream`` and the
exit-status tests). One real run per lesson serves both checks, and each lesson is its own test
so the workers share them. The verdicts of each kind are checked in depth by the
kind's own tests (``tests/kinds/<kind>/``); here it is enough that each lesson's default run
reaches its verdict at all.

A lesson whose kind's own real-run test already runs the lesson whole (``ELSEWHERE``) is run
there through :func:`run_headless`, the same checks, once: its run is the slowest of the course
and the suite ran it twice.
"""

from __future__ import annotations

import functools
import importlib
import json
from pathlib import Path

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.course import load_course
from ddp_viz.model.recording_format import SCHEMA_VERSION, header
from ddp_viz.model.report import run_report
from ddp_viz.model.schema import schema
from ddp_viz.model.timeline import RunRecord, RunStatus
from tests.schema_lines import ByEvent

# What each lesson's report says when its run went as the lesson tells it. A lesson of DDP
# training says the ranks agreed; the others say their own verdict, which their kind's tests
# declare (``REPORT_SAYS`` in ``tests/kinds/<kind>/verdicts.py``), as they declare a lesson
# run whole by their own real-run test (``ELSEWHERE``) and a shorter run (``SHORTER``).
TRAINING_VERDICT = "✓ ranks agree at every step"


def _declared(name: str) -> dict:  # type: ignore[type-arg]
    """``name`` of every kind's tests, merged: what each kind says of its own lessons."""
    out: dict = {}  # type: ignore[type-arg]
    for folder in sorted((Path(__file__).parents[1] / "kinds").glob("*/verdicts.py")):
        module = importlib.import_module(f"tests.kinds.{folder.parent.name}.verdicts")
        out |= getattr(module, name, {})
    return out


VERDICTS = _declared("REPORT_SAYS")
# Lessons run whole by their kind's own real-run test, which calls run_headless for them.
ELSEWHERE = _declared("ELSEWHERE")
# Lessons whose default run is long for a test, and the shorter run they take here.
SHORTER = _declared("SHORTER")


def _reject(token: str) -> None:
    raise ValueError(f"not strict JSON: a bare {token} token")


@functools.cache
def _validator() -> ByEvent:
    return ByEvent(schema())  # checking the schema itself takes seconds: once a process


def _args(lesson_id: str, tmp_path) -> list[str]:  # type: ignore[no-untyped-def]
    lesson = load_course().get(lesson_id)
    args = ["--lesson", lesson_id, "--json"]
    if lesson_id in SHORTER:
        old, new = SHORTER[lesson_id]
        text = lesson.scenario_file.read_text(encoding="utf-8")
        assert old in text, f"{lesson_id}'s scenario no longer says {old!r}"
        (tmp_path / "short.toml").write_text(text.replace(old, new), encoding="utf-8")
        args += ["--scenario", str(tmp_path / "short.toml")]
    elif lesson.trains and not lesson.kind:  # a kind's table may decide the run's length
        args += ["--steps", "2"]
    return args


def test_every_lesson_has_a_verdict_to_look_for() -> None:
    course = load_course()
    for lesson in course:
        assert lesson.trains or lesson.id in VERDICTS, (
            f"say what {lesson.id}'s run reports: REPORT_SAYS = {{{lesson.id!r}: (…)}} in "
            f"tests/kinds/{lesson.kind}/verdicts.py"
        )
    assert set(VERDICTS) | set(SHORTER) <= set(course.ids)


def test_a_lesson_run_elsewhere_is_run_there_with_these_checks() -> None:
    root = Path(__file__).parents[2]
    for lesson_id, where in ELSEWHERE.items():
        assert f'run_headless("{lesson_id}"' in (root / where).read_text(), (lesson_id, where)


def run_headless(lesson_id: str, engine, tmp_path: Path, *more: str) -> tuple[RunRecord, str]:  # type: ignore[no-untyped-def]
    """Run ``ddp-viz run --lesson ID --json [more…]``'s scenario on ``engine`` (an
    EngineClient) and check what the command would write: the header, then every line strict
    JSON valid against the schema; then the run ended well and its report says the lesson's
    verdict. The record and the report, for more checks."""
    from ddp_viz.cli import build_parser
    from ddp_viz.options import load_scenario

    args = ["run", *_args(lesson_id, tmp_path), *more]
    scenario = load_scenario(build_parser().parse_args(args))
    out = [protocol.encode(header(lesson_id))]  # what cmd_run writes first
    out += [line.decode() for _, line in engine.run_with_lines(scenario, timeout=240)]
    lines = [json.loads(x, parse_constant=_reject) for x in out]
    assert lines[0]["event"] == "recording" and lines[0]["lesson"] == lesson_id
    assert lines[0]["schema"] == SCHEMA_VERSION
    validator = _validator()
    for n, line in enumerate(lines, start=1):
        errors = validator.iter_errors(line)
        assert not errors, f"line {n}: {errors[0].message}"
    rec = RunRecord()
    for text in out[1:]:
        rec.apply(protocol.decode(text))
    assert rec.status is RunStatus.FINISHED, (lesson_id, rec.reason)
    report = run_report(rec)
    for needle in VERDICTS.get(lesson_id, (TRAINING_VERDICT,)):
        assert needle in report, (lesson_id, needle, report)
    return rec, report


@pytest.mark.gloo
@pytest.mark.timeout(300)
@pytest.mark.parametrize("lesson_id", [i for i in load_course().ids if i not in ELSEWHERE])
def test_every_lesson_runs_headless_and_records_valid_json(
    lesson_id: str, tmp_path, engine
) -> None:
    run_headless(lesson_id, engine, tmp_path)
