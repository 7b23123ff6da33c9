"""every-parameter at 8 ranks on a projector (issue 47, 8): 8 ranks × 4 tensors did not fit a
24 px row each, so the lanes showed ~12 px labels, one tensor and "+3 more". Now the tensors
take turns: each rank's lane shows one tensor at projector type, the line above the lanes names
it, and the stage's page (the T key) brings the next. Pure frames of a real 8-rank recording;
the expected values are computed here from the recording's raw JSON, not by the scene's code."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart

EIGHT = "every-parameter-8-ranks.jsonl"
TENSORS = ["0.weight", "0.bias", "2.weight", "2.bias"]
SHORT = {"0.weight": "‖0.w‖", "0.bias": "‖0.b‖", "2.weight": "‖2.w‖", "2.bias": "2.b"}
# the stage in the window: projector at 1280×800 (measured, and the conformance size) and at
# 1920×1080 (measured, and the conformance size)
STAGES = [(889, 472), (889, 495), (1341, 673), (1341, 696)]
KIND_OF = {"local_grad": "local", "averaged_grad": "averaged", "params": "params"}


def raw_values(name: str = EIGHT) -> dict[tuple[int, str], float]:
    """(step, "rank{r}.{kind}.{tensor}") -> the L2 norm of the recorded tensor (a scalar: it)."""
    out: dict[tuple[int, str], float] = {}
    path = Path(__file__).parents[1] / "data" / name
    for line in path.read_text().splitlines():
        e = json.loads(line)
        kind = KIND_OF.get(e["event"])
        if kind is None:
            continue
        values = e["grads"] if "grads" in e else e["params"]
        for name, v in values.items():
            norm = abs(v[0]) if len(v) == 1 else math.sqrt(sum(x * x for x in v))
            out[(e["step"], f"rank{e['rank']}.{kind}.{name}")] = norm if len(v) > 1 else v[0]
    return out


def ctx(w: float, h: float, page: int = 0, theme: str = "projector") -> SceneContext:
    info = load_lesson("every-parameter")
    return SceneContext(w, h, load_theme(theme), info.phase_text, estimate_width, page=page)


def frame(size: tuple[int, int], cursor: Cursor, page: int, progress: float = 1.0):
    rec = record(load_recording(EIGHT))
    assert rec.world_size == 8 and [p.name for p in rec.params] == TENSORS
    return stage_frame(
        rec, cursor, progress, ctx(*size, page), load_lesson("every-parameter").scene
    )


@pytest.mark.parametrize("size", STAGES)
def test_every_rank_at_projector_type_and_every_tensor_in_its_turn(size) -> None:
    want = raw_values()
    for step in (0, 1):  # values differ between the steps
        seen: set[str] = set()
        for page in range(4):
            for phase in range(4):
                for progress in (0.5, 1.0):  # mid-phase as well as at its end
                    f = frame(size, Cursor(step, phase), page, progress)
                    assert f.smallest_px() >= 24, (size, page, phase, f.smallest_px())
                    assert_inside_and_apart(f)
                    texts = [t.text for t in f.texts]
                    assert all(f"rank {r}" in texts for r in range(8)), (size, page, texts)
                    assert not any("more" in t for t in texts), texts
                    turns = [t.text for t in f.texts if t.key == "turns"]
                    assert len(turns) == 1, turns  # names the tensor and the key
                    said = f"tensor {page + 1} of 4: {SHORT[TENSORS[page]]}"
                    assert turns[0].startswith(said) and "T" in turns[0][len(said) :], turns
                    for t in f.texts:
                        if t.value is None or t.key.endswith(".loss"):
                            continue
                        assert t.key.endswith("." + TENSORS[page]), (page, t.key)
                        assert t.value == pytest.approx(want[(step, t.key)], rel=1e-6)
                        assert t.text == fmt(t.value), (t.key, t.text)
                        seen.add(t.key)
        for r in range(8):
            for kind in ("local", "averaged", "params"):
                for name in TENSORS:
                    assert f"rank{r}.{kind}.{name}" in seen, (size, step, r, kind, name)


def test_the_turns_go_round_and_a_stage_with_room_has_none() -> None:
    """Page 4 is page 0 again; a laptop's full-HD stage fits every tensor of 8 ranks, and two
    ranks fit a projector's 1341×696 stage at its type: no turns there, every tensor in each
    lane (tests/core/test_two_ranks_turns.py: at 1341×673 they did not)."""
    assert (
        frame((889, 472), Cursor(0, 3), 4).all_text()
        == frame((889, 472), Cursor(0, 3), 0).all_text()
    )
    rec8 = record(load_recording(EIGHT))
    rec2 = record(load_recording("mlp-2-ranks-3-steps.jsonl"))
    for rec, c in ((rec8, ctx(1341, 900, theme="light")), (rec2, ctx(1341, 696))):
        f = stage_frame(rec, Cursor(0, 3), 1.0, c, load_lesson("every-parameter").scene)
        assert not [t for t in f.texts if t.key == "turns"]
        for r in range(rec.world_size):
            for name in TENSORS:
                assert f"rank{r}.params.{name}" in f.numbers(), (rec.world_size, r, name)


@pytest.mark.parametrize("size", [(520, 440), (689, 430), (420, 300)])
def test_a_narrow_stage_keeps_the_turns_line_on_it(size) -> None:
    """The line's longest words (863 px at 24 px) ran off a 520 px stage: shorter words."""
    for page in range(4):
        f = frame(size, Cursor(0, 3), page)
        turns = [t for t in f.texts if t.key == "turns"]
        assert len(turns) == 1 and turns[0].box.right <= size[0], (page, turns)
        assert SHORT[TENSORS[page]] in turns[0].text


@pytest.mark.parametrize("size", STAGES)
def test_a_caption_cut_short_says_so(size) -> None:
    """Seen under Xvfb: with the turns line the caption kept one of its lines, which read as a
    whole sentence ("…; the same averaged gradients"). A caption cut short ends in "…"."""
    from ddp_viz.model.timeline import PHASES

    info = load_lesson("every-parameter")
    for phase in range(4):
        sentence = " ".join(info.phase_text[PHASES[phase]].split())
        f = frame(size, Cursor(0, phase), 0)
        lines = [
            t.text for t in f.texts if len(t.text) > 20 and t.text.removesuffix(" …") in sentence
        ]
        said = " ".join(x.removesuffix(" …") for x in lines)
        if lines and said != sentence:
            assert lines[-1].endswith(" …"), (size, phase, lines)
