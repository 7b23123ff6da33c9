"""The data stage at every step of a padded 3-rank run, against the raw lines: this step's
rows highlighted once the sampler has handed them out (not before), each rank's line naming
its rows, loss and gradient, the title's step and epoch, and the sampler's settings."""

from __future__ import annotations

import json

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

PADDED = "who-splits-3-ranks.jsonl"  # 10 rows, 3 ranks, 3 steps: rows repeated to pad
THEME = load_theme("light")
LINES = [json.loads(ln) for ln in (DATA / PADDED).read_text().splitlines() if ln.strip()]
LOCAL = {(d["step"], d["rank"]): d for d in LINES if d["event"] == "local_grad"}


def frame(step: int, phase: int, progress: float = 1.0, w: int = 1280, h: int = 720):  # type: ignore[no-untyped-def]
    rec = record(load_recording(PADDED))
    lesson = load_lesson("who-splits-the-data")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, phase), progress, ctx, "data_split")


@pytest.mark.parametrize("step", range(3))
def test_this_steps_rows_light_up_once_handed_out(step) -> None:
    rows = {row for r in range(3) for row in LOCAL[(step, r)]["rows"]}
    lit = lambda f: {s.key for s in f.shapes if s.key.startswith("now.")}  # noqa: E731
    assert lit(frame(step, 0, 0.0)) == set()
    assert lit(frame(step, 0, 0.49)) == set()
    assert lit(frame(step, 0, 0.5)) == {f"now.{i}" for i in rows}
    for phase in (1, 2, 3):
        assert lit(frame(step, phase, 0.0)) == {f"now.{i}" for i in rows}
    assert all(s.fill == THEME.highlight for s in frame(step, 1).shapes if s.key.startswith("now."))


@pytest.mark.parametrize("step", range(3))
def test_each_ranks_line_names_its_rows_loss_and_gradient(step) -> None:
    f = frame(step, 1)
    texts = [t.text for t in f.texts]
    for r in range(3):
        d = LOCAL[(step, r)]
        rows = ", ".join(str(i + 1) for i in d["rows"])
        head = f"rank {r} · rows {rows} · loss "
        assert head in texts
        line = next(t for t in f.texts if t.text == head)
        assert line.color == THEME.rank_color(r)
        loss = f.text_with_key(f"rank{r}.loss")
        assert loss.value == d["loss"] and loss.text == fmt(d["loss"])
        assert loss.box.y == line.box.y
        for n, v in d["grads"].items():
            assert f.numbers()[f"rank{r}.local.{n}"] == v[0]
    # the phase before: the rows are handed out, no rank's loss yet
    assert not [k for k in frame(step, 0).numbers() if k.endswith(".loss")]


@pytest.mark.parametrize("step", range(3))
def test_the_title_names_the_step_its_epoch_and_the_samplers_settings(step) -> None:
    (start,) = [d for d in LINES if d["event"] == "run_started"]
    data = start["scenario"]["data"]
    epoch = LOCAL[(step, 0)]["epoch"]
    f = frame(step, 2, w=1920, h=1080)
    text = " ".join(f.all_text().split())
    assert f"Step {step + 1} of {start['steps']} · epoch {epoch + 1} · 3 · DDP's average" in text
    on = lambda k: "on" if data.get(k) else "off"  # noqa: E731
    assert (
        f"DistributedSampler: shuffle {on('shuffle')}, drop_last {on('drop_last')}, "
        f"set_epoch {on('set_epoch')}"
    ) in text


RED = "red: a row two ranks trained on in the same epoch (the sampler's padding)"
CROSS = "×: a row no rank got in that epoch (drop_last)"


def test_the_notes_under_the_grid_say_what_its_marks_mean() -> None:
    text = " ".join(frame(2, 3).all_text().split())
    assert RED in text and CROSS not in text  # padded: every epoch repeats rows
    rec = record(load_recording("who-splits-drop-last.jsonl"))
    lesson = load_lesson("who-splits-the-data")
    ctx = SceneContext(1280, 720, THEME, lesson.phase_text, estimate_width)
    f = stage_frame(rec, Cursor(0, 0), 1.0, ctx, "data_split")
    text = " ".join(f.all_text().split())
    assert CROSS in text and RED not in text  # drop_last: a row left out, none repeated
    notes = [t for t in f.texts if t.text.startswith("×:")]
    assert notes and all(t.color == THEME.muted for t in notes)


DROPPED = "who-splits-drop-last.jsonl"  # drop_last: no repeats, DDP's average is one process's


@pytest.mark.parametrize("step", range(3))
def test_ddps_average_against_one_process_and_the_parameters_after(step) -> None:
    lines = [json.loads(ln) for ln in (DATA / DROPPED).read_text().splitlines() if ln.strip()]
    avg = next(d for d in lines if d["event"] == "averaged_grad" and d["step"] == step
               and d["rank"] == 0)["grads"]  # fmt: skip
    ref = next(d for d in lines if d["event"] == "reference" and d["step"] == step)
    params = next(d for d in lines if d["event"] == "params" and d["step"] == step
                  and d["rank"] == 0)["params"]  # fmt: skip
    rec = record(load_recording(DROPPED))
    lesson = load_lesson("who-splits-the-data")
    ctx = SceneContext(1280, 720, THEME, lesson.phase_text, estimate_width)

    def text(phase: int, progress: float = 1.0) -> str:
        f = stage_frame(rec, Cursor(step, phase), progress, ctx, "data_split")
        return " ".join(f.all_text().split())

    def values(g: dict) -> str:
        return "  ".join(f"{n} {fmt(g[n][0])}" for n in ("weight", "bias"))

    said = text(2)
    assert f"DDP's average: {' '.join(values(avg).split())}" in said
    one = " ".join(values(ref["full_batch_grads"]).split())
    assert f"one process, this step's rows once each: {one}" in said
    assert "✓ equal" in said and "after optimizer.step()" not in said
    said = text(3)
    assert f"after optimizer.step(): {' '.join(values(params).split())} · ✓ all ranks equal" in said
    assert "after optimizer.step()" not in text(3, 0.5)  # not before the step has happened
    assert "DDP's average" not in text(1)
