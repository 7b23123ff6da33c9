"""When a row for each tensor does not fit, the DDP step stage shows the tensors in turns (T for
the next): the line above the lanes says which ones this page holds, counted from 1, with their
labels (‖·‖ for a tensor of more than one value), and the lanes show those tensors' recorded
numbers on every rank, and no others. Pages are as even as they can be and wrap around."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_frame_matches_record, assert_inside_and_apart


def raw_params(name: str) -> list[tuple[str, str]]:
    """(name, label) of each tensor, from the raw run_started event."""
    start = next(e for e in load_recording(name) if e.kind == "run_started")
    out = []
    for p in start.params:
        n = 1
        for d in p["shape"]:
            n *= d
        short = re.sub(r"weight$", "w", re.sub(r"bias$", "b", p["name"]))
        out.append((p["name"], short if n == 1 else f"‖{short}‖"))
    return out


def frame_at(name: str, w: int, h: int, theme: str, page: int, step: int = 0, phase: int = 3):
    ctx = SceneContext(w, h, load_theme(theme), load_lesson().phase_text, estimate_width)
    rec = record(load_recording(name))
    return rec, stage_frame(rec, Cursor(step, phase), 1.0, replace(ctx, page=page))


@pytest.mark.parametrize(
    ("name", "w", "h", "theme", "per"),
    [
        ("every-parameter-8-ranks.jsonl", 1341, 400, "light", 2),
        ("accumulate-mlp-buckets.jsonl", 1800, 400, "projector", 2),
        ("mlp-2-ranks-3-steps.jsonl", 900, 300, "projector", 1),
    ],
)
def test_each_page_names_its_tensors_and_shows_their_numbers(name, w, h, theme, per) -> None:
    params = raw_params(name)
    pages = -(-len(params) // per)
    for page in range(pages + 1):  # one past the last: back to the first
        rec, f = frame_at(name, w, h, theme, page)
        first = (page % pages) * per
        shown = params[first : first + per]
        labels = ", ".join(label for _, label in shown)
        count = f"tensors {first + 1}–{first + per}" if per > 1 else f"tensor {first + 1}"
        said = f.text_with_key("turns")
        turns = "(the others in turns: T for the next)"
        assert said.text == f"{count} of {len(params)}: {labels} {turns}"
        keys = {t.key for t in f.texts if t.value is not None and ".local." in t.key}
        assert keys == {f"rank{r}.local.{n}" for r in range(rec.world_size) for n, _ in shown}
        assert_frame_matches_record(f, rec, 0)
        assert "more" not in f.all_text()


def test_a_narrower_stage_says_the_turns_in_fewer_words() -> None:
    name = "mlp-2-ranks-3-steps.jsonl"
    params = raw_params(name)
    _, f = frame_at(name, 700, 700, "projector", 1)
    assert f.text_with_key("turns").text == f"tensor 2 of 4: {params[1][1]} · T: next"
    assert_inside_and_apart(f)


def test_a_stage_with_room_shows_every_tensor_and_no_turns() -> None:
    name = "every-parameter-8-ranks.jsonl"
    rec, f = frame_at(name, 1341, 1400, "light", 0)
    assert f.text_with_key("turns") is None and rec.world_size == 8
    keys = {t.key for t in f.texts if t.value is not None and ".averaged." in t.key}
    assert keys == {f"rank{r}.averaged.{n}" for r in range(8) for n, _ in raw_params(name)}


def test_the_narrowest_stage_says_the_tensor_and_its_count_at_projector_type() -> None:
    name = "every-parameter-8-ranks.jsonl"
    params = raw_params(name)
    for page in range(len(params)):
        _, f = frame_at(name, 300, 400, "projector", page)
        said = f.text_with_key("turns")
        assert said.text == f"{params[page][1]} ({page + 1}/{len(params)}) · T"
        assert said.font.px >= 24
