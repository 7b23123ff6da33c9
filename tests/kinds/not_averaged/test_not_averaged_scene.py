"""The "what DDP does not average" scene from recorded runs: every buffer value on screen is the
one a rank reported, the verdicts follow the recorded values, and the reducer's error, the cost
of find_unused_parameters, the checkpoint and the launch variables are shown as recorded."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.session import status_text
from ddp_viz.model.tensors import tensor_sample
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import STAGE_SIZES, assert_fits, assert_inside_and_apart

SYNC, NO_SYNC = "not-averaged.jsonl", "not-averaged-no-sync.jsonl"
UNUSED, FIND = "not-averaged-unused.jsonl", "not-averaged-find-unused.jsonl"
SHARDS, LOCAL, ALLREDUCE, STEP = range(4)


def frame(name, step, phase, w=1280, h=720, theme="light"):
    rec = record(load_recording(name))
    lesson = load_lesson("not-averaged")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(step, phase), 1.0, ctx, "not_averaged")


def text_of(f) -> str:
    return " ".join(f.all_text().split())


@pytest.mark.parametrize("name", [SYNC, NO_SYNC])
def test_every_buffer_value_on_screen_is_the_one_the_rank_reported(name) -> None:
    rec = record(load_recording(name))
    for step in range(rec.steps_planned):
        for phase, moment in ((SHARDS, "before"), (LOCAL, "after")):
            _, f = frame(name, step, phase)
            shown = {k: v for k, v in f.numbers().items() if k.startswith("rank")}
            assert len(shown) == 2 * 2 * 3  # ranks × buffers × width of the layer
            for key, value in shown.items():
                rank, when, layer, buffer, index = key.split(".")
                assert when == moment
                event = rec.parts["not_averaged"].buffers[(step, int(rank.removeprefix("rank")))]
                values = getattr(event, moment)[f"{layer}.{buffer}"]
                assert value == tensor_sample(values)[int(index)], key


def test_with_the_broadcast_the_ranks_agree_as_each_forward_begins_and_differ_after() -> None:
    for step in range(4):
        _, f = frame(SYNC, step, SHARDS)
        verdict = f.text_with_key("buffers.before")
        assert verdict.text == "✓ identical on every rank (rank 0's, broadcast by DDP)"
        _, f = frame(SYNC, step, LOCAL)
        assert f.text_with_key("buffers.after").text.startswith("✗ 1.running_mean, 1.running_var")


def test_without_the_broadcast_the_drift_shows_step_by_step() -> None:
    rec, f = frame(NO_SYNC, 3, SHARDS)
    verdict = f.text_with_key("buffers.before")
    agreement = rec.parts["not_averaged"].agreement(3, 2, "before")
    assert verdict.text.startswith("✗") and not agreement.same
    # the chart: per step so far, the recorded largest difference, before and after
    numbers = f.numbers()
    for s in range(4):
        for moment in ("before", "after"):
            want = rec.parts["not_averaged"].agreement(s, 2, moment).max_diff
            assert numbers[f"drift.{moment}.{s}"] == want
    assert numbers["drift.before.0"] == 0.0 < numbers["drift.before.1"] < numbers["drift.before.3"]
    _, first = frame(NO_SYNC, 0, SHARDS)
    assert first.text_with_key("buffers.before").text.startswith("✓")  # DDP(model) synced once


def test_an_unused_parameter_shows_no_average_then_the_reducers_words() -> None:
    rec, f = frame(UNUSED, 0, ALLREDUCE)
    assert f.text_with_key("grads.unaveraged").text.startswith("✗ the comm hook never ran")
    rec, f = frame(UNUSED, 0, STEP)
    text = text_of(f)
    assert "✗ the ranks' parameters now differ" in text
    error = f.text_with_key("reducer.error")
    assert error.value == 2.0 and "aux.weight, aux.bias" in text_of(f)
    words = " ".join(rec.parts["not_averaged"].reducer_errors[0].error.split())
    # the reducer's own words: its first two sentences and the one naming the indices
    first_two = ". ".join(words.split(". ")[:2])
    assert first_two.startswith("Expected to have finished reduction") and first_two in text
    assert "Parameter indices which did not receive grad for rank 0: 6 7" in words
    assert "… Parameter indices which did not receive grad for rank 0: 6 7." in text
    assert status_text(rec).startswith("Run 1 stopped after 1 step(s): DDP's reducer refused")


def test_the_cost_the_checkpoint_and_the_launch_are_the_recorded_ones() -> None:
    rec, f = frame(FIND, 3, STEP)
    with_flag, without = rec.parts["not_averaged"].cost_ms()
    cost = f.text_with_key("cost.with")
    assert cost.value == with_flag and f"{with_flag:.2f} ms" in cost.text
    assert f"{without:.2f} ms" in text_of(f)
    text = text_of(f)
    assert f"sha256 {rec.parts['not_averaged'].saved.sha256[:16]}" in text
    assert "rank 1 loaded it (map_location='cpu'): ✓ the same file" in text
    port = rec.launch[0].env["MASTER_PORT"]
    assert f"MASTER_PORT={port}" in text and "init_method=env://" in text
    # the status bar says "see the stage for why": the last frame says why
    why = f.text_with_key("why")
    assert why is not None and "BatchNorm normalises each rank's batch" in text_of(f)
    # not before the run's last step
    _, early = frame(FIND, 1, STEP)
    assert early.text_with_key("cost.with") is None


def test_the_all_reduce_count_beside_the_time_is_the_one_the_profiler_recorded() -> None:
    events = load_recording(FIND)
    raw = min((e for e in events if e.kind == "unused_cost"), key=lambda e: e.rank)
    n_params = len(next(e for e in events if e.kind == "initial_params").params)
    # from the raw profile: per step, the int all-reduce is the used-parameter bitmap (one
    # element per parameter), the float ones the gradient buckets
    for steps, bitmaps in ((raw.allreduces_with, 1), (raw.allreduces_without, 0)):
        assert len(steps) == 3
        for step in steps:
            ints = [n for dtype, n in step if dtype == "int"]
            assert ints == [n_params] * bitmaps
    with_steps = [
        f"{len(s) - sum(d == 'int' for d, _ in s)}+{sum(d == 'int' for d, _ in s)}"
        for s in raw.allreduces_with
    ]
    without_steps = [str(len(s)) for s in raw.allreduces_without]
    rec, f = frame(FIND, 3, STEP)

    def split(step) -> tuple[int, int]:
        floats = sum(d in ("double", "float") for d, _ in step)
        return floats, len(step) - floats

    assert rec.parts["not_averaged"].allreduce_counts() == {
        True: [split(s) for s in raw.allreduces_with],
        False: [split(s) for s in raw.allreduces_without],
    }
    line = f.text_with_key("cost.allreduces")
    assert line is not None and line.value == len(raw.allreduces_with[-1])
    text = text_of(f)
    assert f"find_unused_parameters=True {', '.join(with_steps)}" in text
    assert f"False {', '.join(without_steps)} (gradient buckets only)" in text
    assert "True 1+1, 1+1, 1+1" in text and "False 1, 1, 1" in text  # this run's figures
    # beside the time, in the stage and in the CLI's report
    keys = [t.key for t in f.texts if t.key]
    assert keys.index("cost.allreduces") == keys.index("cost.with") + 1
    from ddp_viz.model.report import run_report

    report = run_report(rec)
    assert "True 1+1, 1+1, 1+1 (gradient buckets + the used-parameter bitmap)" in report


@pytest.mark.parametrize(("w", "h", "theme"), STAGE_SIZES)
def test_nothing_overlaps_or_leaves_the_stage(w, h, theme) -> None:
    for name, steps in ((SYNC, 4), (NO_SYNC, 4), (UNUSED, 1), (FIND, 4)):
        for step in range(steps):
            for phase in range(4):
                _, f = frame(name, step, phase, w, h, theme)
                assert_fits(f, theme)


def test_the_launch_variables_show_as_the_run_starts() -> None:
    rec, f = frame(SYNC, 0, SHARDS)
    launch = f.text_with_key("launch")
    env = rec.launch[1].env
    assert launch is not None and "init_method=env://" in launch.text
    text = text_of(f)
    assert f"MASTER_PORT={env['MASTER_PORT']}" in text and "LOCAL_WORLD_SIZE=2" in text
    assert "rank 1: RANK=1 LOCAL_RANK=1" in text


@pytest.mark.parametrize(
    ("w", "h", "theme"),
    [(1280, 720, "light"), (1341, 700, "projector"), (560, 480, "light"), (700, 320, "projector")],
)
def test_the_ending_is_shown_whole_or_says_that_it_is_cut(w, h, theme) -> None:
    wanted = {
        UNUSED: {"reducer.error", "reducer.text", "launch"},
        FIND: {"cost.with", "cost.allreduces", "launch"},
    }
    for name, keys in wanted.items():
        rec = record(load_recording(name))
        _, f = frame(name, rec.complete_prefix() - 1, STEP, w, h, theme)
        shown = {t.key for t in f.texts}
        assert keys <= shown or "cut" in shown, (name, shown)
        if (w, h) == (1280, 720):
            assert keys <= shown and "cut" not in shown  # a laptop's stage holds it all
        if (w, h) == (700, 320):  # far too small: it says so, on the stage
            assert "cut" in shown and f.text_with_key("cut").box.bottom <= h
            assert_inside_and_apart(f)


def test_a_scenario_alone_gets_the_stage_of_its_lesson() -> None:
    from ddp_viz.model.course import lesson_for

    assert lesson_for(record(load_recording(UNUSED)).scenario) == "not-averaged"
    assert lesson_for(record(load_recording("uneven-join.jsonl")).scenario) == "uneven-inputs"
    assert lesson_for(record(load_recording("ring-4-ranks.jsonl")).scenario) == "all-reduce"
    assert lesson_for(record(load_recording("default-run.jsonl")).scenario) == "ddp-pattern"


def test_the_cli_explains_a_step_that_averaged_nothing() -> None:
    from ddp_viz.model.report import run_report

    report = run_report(record(load_recording(UNUSED)))
    assert "why: nothing was all-reduced: a parameter got no gradient" in report
    assert "BatchNorm normalises" not in report
    assert " nan" not in report  # aux got no gradient: shown as —, not as a number


@pytest.mark.parametrize("phase", [ALLREDUCE, STEP])
def test_a_step_without_values_gives_no_verdict_only_the_reason(phase) -> None:
    """A long run's step 25 has no averages or parameters: nothing to call equal or different."""
    rec, f = frame("long-run-32-steps.jsonl", 24, phase)
    assert not rec.steps[24].has_values
    text = text_of(f)
    assert "Not recorded at step 25" in text and "10th step" in text
    assert "✗" not in text and "✓" not in text
    assert_inside_and_apart(f)
