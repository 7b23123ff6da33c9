"""The accumulation scene from recorded runs: .grad after every micro-batch's backward, the
all-reduces the comm hook counted, and DDP's result against one process, as recorded."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.kinds.accumulation.record import micro_of
from ddp_viz.kinds.accumulation.scene_parts import visible_micro
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, display_value, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart

DEFAULT = "accumulate-3-micro.jsonl"  # no_sync around forward and backward, loss / 3
BACKWARD_ONLY = "accumulate-backward-only.jsonl"
UNSCALED = "accumulate-unscaled.jsonl"  # no no_sync, loss not divided by 3
FOUR, EIGHT = "accumulate-4-ranks.jsonl", "accumulate-8-ranks.jsonl"  # short micro-batches
MLP = "accumulate-mlp-buckets.jsonl"  # 321 values in two buckets: summaries, 2 all-reduces


def frame(name, step, phase, progress=1.0, w=1280, h=720, theme="light"):
    rec = record(load_recording(name))
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(step, phase), progress, ctx, "accumulation")


@pytest.mark.parametrize(("name", "synced"), [(DEFAULT, [0, 0, 1]), (BACKWARD_ONLY, [1, 1, 1])])
def test_each_cell_is_the_recorded_grad_and_whether_the_hook_ran(name, synced) -> None:
    rec, f = frame(name, 0, 2)
    numbers = f.numbers()
    for r in rec.steps[0].ranks:
        micro = micro_of(rec, 0, r)
        assert [len(m.allreduced) for m in micro] == synced
        for j, m in enumerate(micro):
            assert numbers[f"rank{r}.micro{j}.allreduced"] == len(m.allreduced)
            text = f.text_with_key(f"rank{r}.micro{j}.allreduced").text
            assert text == ("yes" if m.allreduced else "no")
            for n in ("weight", "bias"):
                key = f"rank{r}.micro{j}.grad.{n}"
                assert numbers[key] == display_value(m.grads[n])
                assert f.text_with_key(key).text == fmt(m.grads[n][0])
    assert numbers["allreduces"] == sum(synced)


def test_the_micro_batches_appear_as_their_backward_passes_happen() -> None:
    _, before = frame(DEFAULT, 0, 0)
    assert not any(".grad." in k for k in before.numbers())  # phase 1: rows only
    shown = []
    for progress in (0.0, 0.34, 0.67, 1.0):
        _, f = frame(DEFAULT, 0, 1, progress)
        shown.append({int(k.split(".")[1][5:]) for k in f.numbers() if ".grad." in k})
    assert shown == [{0}, {0, 1}, {0, 1, 2}, {0, 1, 2}]
    _, f = frame(DEFAULT, 0, 1, 0.5)
    assert {s.key for s in f.shapes if s.key.startswith("now.")} == {"now.micro1"}


def test_the_count_and_the_note_come_from_the_hook_not_the_scenario() -> None:
    _, f = frame(DEFAULT, 0, 2)
    text = " ".join(f.all_text().split())
    assert "1 of 3 backward passes all-reduced on every rank" in text
    assert "skipped 2 of 3" in text
    _, f = frame(BACKWARD_ONLY, 0, 2)
    text = " ".join(f.all_text().split())
    assert "3 of 3 backward passes all-reduced" in text
    # the flag the ranks recorded: off during those backward passes, and they synced anyway
    assert "require_backward_grad_sync was False in 2 of these backward passes" in text


def test_a_count_the_scenario_does_not_predict_is_shown_as_recorded() -> None:
    """The default run's scenario puts no_sync() around forward and backward; pretend the hook
    had run in every backward: the stage must say 3, as recorded, not the 1 the code implies."""
    events = load_recording(DEFAULT)
    forged = [replace(e, allreduced=[0]) if isinstance(e, MicroStep) else e for e in events]
    rec = record(forged)
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    f = stage_frame(rec, Cursor(0, 2), 1.0, ctx, "accumulation")
    text = " ".join(f.all_text().split())
    assert "3 of 3 backward passes all-reduced" in text and "skipped" not in text
    assert f.numbers()["allreduces"] == 3


def test_several_buckets_count_backward_passes_and_big_tensors_compare_by_value() -> None:
    rec, f = frame(MLP, 1, 3)
    st = rec.steps[1]
    assert all(len(m.allreduced) == 2 for r in st.ranks for m in micro_of(rec, 1, r)[-1:])
    text = " ".join(f.all_text().split())
    assert "1 of 2 backward passes all-reduced on every rank (2 bucket all-reduces)" in text
    assert "skipped 1 of 2" in text and "‖0.weight‖" in text
    # float32 DDP against the float64 single-process run: equal in value, never in digest
    assert "✓ the same" in text


def test_one_micro_batch_a_step_says_what_to_change() -> None:
    events = [e for e in load_recording(DEFAULT) if not isinstance(e, MicroStep)]
    rec = record(events)
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    f = stage_frame(rec, Cursor(0, 2), 1.0, ctx, "accumulation")
    assert "set Micro-batches above 1" in f.all_text() and "None" not in f.all_text()


def test_without_the_scale_the_stage_says_the_step_is_k_times_the_large_batch() -> None:
    rec, f = frame(UNSCALED, 0, 2)
    st = rec.steps[0]
    assert st.average_is_full_batch() is False
    text = " ".join(f.all_text().split())
    assert "✗ different:" in text and "without dividing the loss by 3" in text and "3×" in text
    _, f = frame(DEFAULT, 0, 2)
    assert "✓ equal" in f.all_text()


def test_the_step_shows_the_parameters_every_rank_holds() -> None:
    rec, f = frame(DEFAULT, 2, 3)
    params = rec.steps[2].ranks[0].params
    text = f.all_text()
    assert f"weight {fmt(params['weight'][0])}" in text and "✓ all ranks equal" in text


@pytest.mark.parametrize(("name", "same"), [(DEFAULT, True), (UNSCALED, False)])
def test_the_last_step_sets_ddp_against_a_whole_single_process_run(name, same) -> None:
    rec, f = frame(name, 2, 3)
    solo = rec.steps[2].reference.one_process_params
    line = " ".join(f.all_text().split())
    assert f"after 3 steps: weight {fmt(solo['weight'][0])} bias {fmt(solo['bias'][0])}" in line
    assert ("✓ the same" in line) is same and ("✗ not the same" in line) is not same


@pytest.mark.parametrize(
    ("w", "h", "theme"),
    [(1280, 720, "light"), (560, 480, "light"), (560, 480, "projector"), (1341, 700, "projector")],
)
def test_nothing_overlaps_or_leaves_the_stage(w, h, theme) -> None:
    for name in (DEFAULT, BACKWARD_ONLY, UNSCALED, FOUR, EIGHT, MLP):
        for step in range(len(record(load_recording(name)).steps)):
            for phase in range(4):
                _, f = frame(name, step, phase, 1.0, w, h, theme)
                assert_inside_and_apart(f)
                if theme == "projector":
                    assert f.smallest_px() >= 24
                if phase >= 2:  # the count is what the lesson is about: it always fits
                    assert "allreduces" in f.numbers() or phase == 3


def test_ranks_that_do_not_fit_are_counted_and_short_micro_batches_explained() -> None:
    _, f = frame(EIGHT, 0, 2, 1.0, 560, 480)
    shown = {k.split(".")[0] for k in f.numbers() if k.startswith("rank")}
    assert 1 <= len(shown) < 8 and f.numbers()["more_ranks"] == 8 - len(shown)
    assert "allreduces" in f.numbers()
    _, f = frame(FOUR, 0, 2)
    text = " ".join(f.all_text().split())
    assert "micro-batches hold 1 or 2 rows" in text and "from 2 epochs" in text


def test_many_micro_batches_keep_the_first_ones_and_the_last() -> None:
    assert visible_micro(3, 5) == [0, 1, 2]
    assert visible_micro(10, 5) == [0, 1, 2, None, 9]
    assert visible_micro(64, 3) == [0, None, 63]


def test_the_prediction_is_about_a_backward_only_run_and_reads_the_hook_s_count() -> None:
    lesson = load_lesson("accumulate-with-no-sync")
    q = next(q for q in lesson.questions if q.kind == "predict").quantity
    assert q.what == "allreduces" and q.phase == "allreduce"
    default, wrong = record(load_recording(DEFAULT)), record(load_recording(BACKWARD_ONLY))
    assert not q.matches(default)
    assert q.mismatch(default) == "no_sync() = fwd + backward"  # the form's words
    assert q.conditions() == " with no_sync() = backward only and Micro-batches = 3"
    assert q.matches(wrong) and q.read(wrong) == 3.0
    assert q.read(default) == 1.0  # what the question would read, were it asked of this run
    table = lesson.markdown.split("| placement")[1].split("\n\n")[0]
    assert "alone | ? |" in table  # the text leaves the prediction to the learner


@pytest.mark.parametrize("name", [DEFAULT, FOUR, MLP])
def test_the_verdict_never_stays_without_the_lines_it_compares(name) -> None:
    """Short of room, the stage dropped the one-process line and kept its '✓ equal'."""
    seen_verdict = seen_dropped = False
    for h in range(300, 820, 20):
        for w in (560, 900, 1280):
            _, f = frame(name, 0, 3, w=w, h=h)
            texts = [t.text for t in f.texts]
            verdict = any(t.key == "full_batch" for t in f.texts)
            compared = any(s.startswith("one process, these") for s in texts) and any(
                s.startswith("DDP's .grad") for s in texts
            )
            assert verdict == compared, (w, h, texts[-6:])
            seen_verdict |= verdict
            seen_dropped |= not verdict
    assert seen_verdict and seen_dropped  # both cases happen over these sizes
