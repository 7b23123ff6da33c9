"""The evaluation kind without torch: its table refuses bad input naming the field before any
process starts, and recordings of real runs (tests/data/README.md) fold into what the stage,
the report and the prediction show, every number checked against a float64 recomputation."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.evaluation.record import extra_rows, repeated, stalled
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.quiz import prediction_is_right
from ddp_viz.model.report import run_report
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.session import status_text
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.evaluation.checks import check_accuracies, check_padding

RECORDINGS = ["evaluation-2-ranks.jsonl", "evaluation-4-ranks.jsonl"]


@pytest.mark.parametrize(
    ("table", "top", "field"),
    [
        ({"eval_rows": 1}, {}, "evaluation.eval_rows"),
        ({"eval_rows": 3}, {"world_size": 4}, "evaluation.eval_rows"),
        ({"dropout": 1.0}, {}, "evaluation.dropout"),
        ({"timeout_s": 0.5}, {}, "evaluation.timeout_s"),
        ({"hang": "maybe"}, {}, "evaluation.hang"),
        ({"colour": 1}, {}, "evaluation.colour"),
        ({}, {"world_size": 1}, "world_size"),
        ({}, {"steps": 5}, "steps"),
    ],
)
def test_bad_input_is_refused_naming_the_field(table, top, field) -> None:
    with pytest.raises(ScenarioError) as err:
        Scenario.from_mapping({"world_size": 2, **top, "evaluation": table})
    assert err.value.field == field


def test_the_lessons_scenario_does_not_divide_by_its_ranks() -> None:
    s = load_lesson("evaluation").scenario()
    spec = s.table("evaluation")
    assert s.world_size == 4 and spec.eval_rows % s.world_size != 0 and spec.hang


def frame(rec, phase: int, w=889, h=495, theme="light"):
    ctx = SceneContext(
        w, h, load_theme(theme), load_lesson("evaluation").phase_text, estimate_width
    )
    return stage_frame(rec, Cursor(0, phase), 1.0, ctx, "evaluation")


@pytest.mark.parametrize("name", RECORDINGS)
def test_a_recorded_run_checks_against_float64_and_the_stage_shows_it(name) -> None:
    rec = record(load_recording(name))
    p = rec.parts["evaluation"]
    rows = rec.scenario["evaluation"]["eval_rows"]
    want = check_accuracies(p)
    check_padding(p, rows)
    shares = frame(rec, 0)
    assert shares.text_with_key("extra_rows").value == extra_rows(p) == -rows % rec.world_size
    named = shares.text_with_key("twice").text
    assert all(f"row {i} (ranks" in named for i in repeated(p)), named
    acc = frame(rec, 1)
    for key, value in want.items():
        assert acc.text_with_key(f"acc.{key}").value == pytest.approx(value, abs=1e-12)
    assert acc.text_with_key("equal.kept").text == "= reference"
    assert set(stalled(p)) == set(range(rec.world_size))  # every rank's wait ended in an error
    waits = frame(rec, 2)
    assert "_distributed_broadcast_coalesced" in waits.text_with_key("wait.0").text
    for r in range(1, rec.world_size):
        assert waits.text_with_key(f"wait.{r}").text.endswith(" in barrier")
        assert p.waits[("wrapper", r)].where[0].startswith("barrier (torch/distributed/")
    assert "_sync_buffers" in waits.text_with_key("stack.0").text
    assert waits.text_with_key("module.accuracy").value == want["kept"]
    seeds = frame(rec, 3)
    assert "100%" in seeds.text_with_key("agree.same").text
    assert "same CRC-32" in seeds.text_with_key("weights").text
    report = run_report(rec)
    assert "padding dropped" in report and "= reference" in report and "gloo said" in report
    assert status_text(rec).startswith(f"Run {rec.run} finished: ")


def test_the_prediction_reads_the_padding_from_the_ranks_shares() -> None:
    rec = record(load_recording("evaluation-4-ranks.jsonl"))
    q = next(q for q in load_lesson("evaluation").questions if q.kind == "predict")
    assert load_lesson("evaluation").questions[0].id == q.id  # the prediction comes first
    assert q.quantity.matches(rec) and q.quantity.read(rec) == 3.0
    assert prediction_is_right(q, 3.0, 3.0) and not prediction_is_right(q, 4.0, 3.0)


@pytest.mark.parametrize("field", ["mean_of_ranks", "padded_sums", "kept_sums"])
def test_a_rank_with_other_all_reduced_numbers_turns_the_agreement_line_to_a_cross(field) -> None:
    """Derived from a real run: one rank's copy of one all-reduced number nudged by one row.
    Any of the three differing is a disagreement; the untouched run agrees."""
    import dataclasses

    events = load_recording(RECORDINGS[0])
    agree = "✓ every rank got the same all-reduced numbers"
    assert agree in run_report(record(events))
    changed = []
    for e in events:
        if e.kind == "eval_numbers" and e.rank == 1:
            value = getattr(e, field)
            nudged = value + 1 if isinstance(value, float) else [value[0] + 1, value[1]]
            e = dataclasses.replace(e, **{field: nudged})
        changed.append(e)
    said = run_report(record(changed))
    assert "✗ every rank got the same all-reduced numbers" in said and agree not in said


def test_the_status_line_says_the_hang_in_words_a_person_reads() -> None:
    """Issue 47, 4: "rank 0 alone through DDP waited 4 rank(s) out"."""
    rec = record(load_recording("evaluation-4-ranks.jsonl"))
    line = status_text(rec)
    assert "rank(s) out" not in line
    waited = sum(1 for e in rec.events if e.kind == "eval_outcome" and e.error)
    assert f"hung until the timeout ({waited} of 4 ranks waited)" in line, line
