"""What the accumulation stage says, word for word, on real recordings: the title's placement
and loss scale (also for a run recorded without a ``[train]`` table), the note under the count
for every placement, a big model's one ``‖all‖`` line per micro-batch with its norm computed
here from the raw ``micro_step`` lines, and the stage while a step is still arriving.
Expected values are read from the raw JSON lines, never from the scene's code."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

DEFAULT = "accumulate-3-micro.jsonl"  # no_sync around forward and backward, loss / 3
BACKWARD_ONLY = "accumulate-backward-only.jsonl"
UNSCALED = "accumulate-unscaled.jsonl"  # no no_sync, loss not divided by 3
MLP = "accumulate-mlp-buckets.jsonl"  # six tensors: one ‖all‖ line per micro-batch
THEME = load_theme("light")


def raw(name: str) -> list[dict]:
    return [json.loads(ln) for ln in (DATA / name).read_text().splitlines() if ln.strip()]


def frame(events, step: int, phase: int, progress=1.0, w=1280, h=720):  # type: ignore[no-untyped-def]
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(step, phase), progress, ctx, "accumulation")


def said(f) -> str:  # type: ignore[no-untyped-def]
    return " ".join(f.all_text().split())


def title_right(f):  # type: ignore[no-untyped-def]
    """The muted text on the title's line, at the stage's right edge."""
    top = f.texts[0]
    return next(t for t in f.texts[1:] if abs(t.box.cy - top.box.cy) < top.box.h / 2)


@pytest.mark.parametrize(
    ("name", "right"),
    [
        (DEFAULT, "3 micro-batches · no_sync() around forward + backward · loss ÷ 3"),
        (BACKWARD_ONLY, "3 micro-batches · no_sync() around backward only · loss ÷ 3"),
        (UNSCALED, "3 micro-batches · no no_sync() · loss not scaled"),
        (MLP, "2 micro-batches · no_sync() around forward + backward · loss ÷ 2"),
    ],
)
def test_the_title_says_the_recorded_placement_and_scale(name, right) -> None:
    train = raw(name)[0]["scenario"]["train"]
    k, scaled = train["accumulate"], train["scale_loss"]
    assert right.startswith(f"{k} micro-batches") and ("loss ÷" in right) is scaled
    f = frame(load_recording(name), 0, 2, w=1800, h=900)
    text = title_right(f)
    assert text.text == right and text.color == THEME.muted


def test_a_placement_this_version_does_not_name_is_shown_as_recorded() -> None:
    events = load_recording(DEFAULT)
    train = {**events[0].scenario["train"], "no_sync": "every_other"}
    events = [replace(events[0], scenario={**events[0].scenario, "train": train}), *events[1:]]
    f = frame(events, 0, 2, w=1800, h=900)
    assert title_right(f).text == "3 micro-batches · every_other · loss ÷ 3"


def test_a_run_recorded_without_a_train_table_reads_its_defaults() -> None:
    """A plain DDP recording (no ``[train]`` recorded) on the accumulation stage: one
    micro-batch a step, no no_sync(), the loss divided by 1, as TrainSpec's defaults ran it,
    and the sentence that says what to change, in the muted colour."""
    assert "train" not in raw("default-run.jsonl")[0].get("scenario", {})
    for phase in range(4):
        f = frame(load_recording("default-run.jsonl"), 0, phase)
        assert title_right(f).text == "1 micro-batch · no no_sync() · loss ÷ 1"
        line = next(t for t in f.texts if "set Micro-batches above 1" in t.text)
        assert line.text == "One micro-batch a step: set Micro-batches above 1 to accumulate."
        assert line.color == THEME.muted
        assert not f.numbers()


def test_the_note_for_each_placement_word_for_word() -> None:
    late = sum(
        1
        for d in raw(BACKWARD_ONLY)
        if d["event"] == "micro_step" and d["step"] == 0 and d["rank"] == 0
        and d["allreduced"] and not d["sync_at_backward"]
    )  # fmt: skip
    assert late == 2
    assert (
        f"require_backward_grad_sync was False in {late} of these backward passes (recorded), "
        "yet they all-reduced: DDP had read it as True in the forward."
    ) in said(frame(load_recording(BACKWARD_ONLY), 0, 2))
    # without no_sync every backward all-reduced, and the flag was never off
    micro = [d for d in raw(UNSCALED) if d["event"] == "micro_step" and d["step"] == 0]
    assert all(d["allreduced"] and d["sync_at_backward"] for d in micro)
    text = said(frame(load_recording(UNSCALED), 0, 2))
    assert (
        "Every backward all-reduced: .grad after each is the running sum of the averages. "
        "The result is the same as with no_sync(); only the traffic differs."
    ) in text
    assert "skipped" not in text and "3 of 3 backward passes all-reduced on every rank" in text


def test_a_step_whose_hook_never_ran_says_every_all_reduce_was_skipped() -> None:
    """no_sync() around every micro-batch, the last too: the hook ran in none of the 3."""
    events = [
        replace(e, allreduced=[]) if isinstance(e, MicroStep) and e.step == 0 else e
        for e in load_recording(DEFAULT)
    ]
    f = frame(events, 0, 2)
    text = said(f)
    assert "0 of 3 backward passes all-reduced on every rank" in text
    assert "no_sync() skipped 3 of 3 all-reduces" in text
    assert f.numbers()["allreduces"] == 0


def norm_of(grads: dict) -> float:
    """‖all‖ from a raw line: a list's own squares, a summary's recorded norm."""
    total = 0.0
    for g in grads.values():
        total += g["norm"] ** 2 if isinstance(g, dict) else sum(x * x for x in g)
    return math.sqrt(total)


@pytest.mark.parametrize("step", [0, 1])
def test_a_big_model_shows_one_norm_line_per_micro_batch(step) -> None:
    lines = raw(MLP)
    assert len(lines[0]["params"]) == 6
    f = frame(load_recording(MLP), step, 2)
    micro = [d for d in lines if d["event"] == "micro_step" and d["step"] == step]
    assert {d["rank"] for d in micro} == {0, 1}
    for d in micro:
        key = f"rank{d['rank']}.micro{d['micro']}.grad.‖all‖"
        cell = f.text_with_key(key)
        want = norm_of(d["grads"])
        assert cell.value == pytest.approx(want, rel=1e-9), key
        assert cell.text == fmt(want)
    labels = [t.text for t in f.texts if t.box.x == f.texts[0].box.x and t.color == THEME.muted]
    assert labels.count("‖all‖") == 2 and not any(s.endswith(".grad") for s in labels)
    # a one-value tensor by its value, a bigger one by its norm
    text = said(f)
    grad = {p["name"]: p["shape"] for p in lines[0]["params"]}
    assert math.prod(grad["4.bias"]) == 1 and math.prod(grad["4.weight"]) == 16
    assert " 4.bias " in text and "‖4.bias‖" not in text and "‖4.weight‖" in text


def with_params(events, n: int):  # type: ignore[no-untyped-def]
    """The run's first ``n`` tensors only, as a smaller model would list them."""
    first = events[0]
    return [replace(first, params=first.params[:n]), *events[1:]]


def test_three_tensors_keep_a_line_each_and_four_share_one() -> None:
    names = [p["name"] for p in raw(MLP)[0]["params"]]
    f = frame(with_params(load_recording(MLP), 3), 0, 2)
    labels = [t.text for t in f.texts if t.color == THEME.muted and t.text.endswith(".grad")]
    assert labels[:3] == [f"{n}.grad" for n in names[:3]]
    assert f.text_with_key("rank0.micro0.grad.‖all‖") is None
    f = frame(with_params(load_recording(MLP), 4), 0, 2)
    assert not any(t.text.endswith(".grad") for t in f.texts)
    assert f.text_with_key("rank0.micro0.grad.‖all‖") is not None


def test_while_a_step_arrives_the_stage_counts_the_ranks_already_in() -> None:
    """Replayed event by event: before the second rank's step is in, the count is rank 0's
    alone; before rank 0's averaged .grad is in, DDP's .grad reads "—"."""
    events, lines = load_recording(DEFAULT), raw(DEFAULT)
    seen_one_rank = seen_dash = False
    for i in range(1, len(events) + 1):
        prefix = lines[:i]
        arrived = {(d["step"], d["rank"]) for d in prefix if d["event"] == "local_grad"}
        step = max((s for s, _ in arrived), default=None)
        if step is None:
            continue
        ranks = sorted(r for s, r in arrived if s == step)
        synced = {
            r: sum(1 for d in prefix if d["event"] == "micro_step" and d["step"] == step
                   and d["rank"] == r and d["allreduced"])
            for r in ranks
        }  # fmt: skip
        f = frame(events[:i], step, 2)
        n = synced[ranks[0]]
        assert set(synced.values()) == {n}
        line = f.text_with_key("allreduces")
        assert line.text.startswith(f"{n} of 3 backward passes all-reduced on every rank")
        assert line.value == n
        seen_one_rank |= len(ranks) == 1
        averaged = any(
            d["event"] == "averaged_grad" and d["step"] == step and d["rank"] == ranks[0]
            for d in prefix
        )
        if not averaged:
            assert "DDP's .grad at optimizer.step(): —" in said(f)
            seen_dash = True
    assert seen_one_rank and seen_dash


def test_a_step_without_its_reference_sets_nothing_against_one_process() -> None:
    """Before the reference of a step arrives (or a run without one), the stage shows DDP's
    .grad and the ranks' agreement, and no comparison with one process."""
    events = [e for e in load_recording(DEFAULT) if not isinstance(e, protocol.Reference)]
    f = frame(events, 2, 3)
    keys = {t.key for t in f.texts}
    assert "agree" in keys and "one_process" not in keys and "full_batch" not in keys
    assert "one process" not in f.all_text()
    assert f.text_with_key("agree").text.endswith("✓ all ranks equal")
