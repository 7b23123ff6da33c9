"""What the ring stage says in the cases the finished 4-rank recording alone never shows: a step
that has not arrived yet (the caption waits, the code view lights no loop), a narrow stage (the
caption cut to two lines, the short verdicts and titles, and the shortest when even it does not
fit), values with more digits than the recording's whole numbers (three significant digits a
cell, from the raw events), and a run of another kind. Expected from the raw events and the
lesson's words (pure, no Qt)."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

FOUR = "ring-4-ranks.jsonl"
THEME = load_theme("light")
LESSON = load_lesson("all-reduce")
WAITING = "Waiting for the ranks to report this step…"
PHASES = ("shards", "local", "allreduce", "step")


def frame(events, step, phase, w=1280, h=720, theme=THEME):
    ctx = SceneContext(w, h, theme, LESSON.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(step, phase), 1.0, ctx, "ring")


def texts(f) -> list[str]:
    return [t.text for t in f.texts]


def sign(v: float) -> str:
    return f"{v:.3g}".replace("-", "−")


# --- a step not arrived yet ----------------------------------------------------------------
def until(events, kind: str, count: int = 1):
    """The events before the ``count``-th of ``kind``."""
    seen = 0
    for i, e in enumerate(events):
        if e.kind == kind:
            seen += 1
            if seen == count:
                return events[:i]
    raise AssertionError(kind)


@pytest.mark.parametrize("phase", [0, 1, 2, 3])
@pytest.mark.parametrize("w", [1280, 400])
def test_before_a_step_arrives_the_stage_waits_and_lights_no_loop(phase, w) -> None:
    events = until(load_recording(FOUR), "ring_step")
    assert len([e for e in events if e.kind == "collective_input"]) == 4
    f = frame(events, 0, phase, w=w)
    assert f.section == ""
    said = " ".join(texts(f))
    assert WAITING in said
    assert LESSON.phase_text[PHASES[phase]] not in said
    assert not [t for t in f.texts if t.key]  # no cell, chip or verdict
    assert not f.shapes


def test_once_a_rank_reports_the_step_the_stage_names_its_half() -> None:
    events = load_recording(FOUR)
    steps = [e for e in events if e.kind == "ring_step"]
    for step, half in ((0, "reduce-scatter"), (3, "all-gather")):
        first = next(e for e in steps if e.step == step)
        assert first.phase == half.replace("-", "_")
        upto = events[: events.index(first) + 1]
        f = frame(upto, step, 1)
        assert f.section == half
        assert WAITING not in " ".join(texts(f))
        assert LESSON.phase_text["local"] in " ".join(texts(f))
        assert f.text_with_key(f"move.{first.rank}").text == f"c{first.sent}"


def test_a_narrow_stage_cuts_the_caption_to_two_lines_ending_in_an_ellipsis() -> None:
    sentence = LESSON.phase_text["allreduce"]
    f = frame(load_recording(FOUR), 1, 2, w=300, h=900)
    lines = [t for t in f.texts if t.color == THEME.muted and t.text.rstrip(" …") in sentence]
    assert len(lines) == 2, texts(f)
    assert sentence.startswith(lines[0].text)
    assert lines[1].text.endswith(" …") and not sentence.endswith(lines[1].text)


# --- values with more digits ---------------------------------------------------------------
def thirds(e):
    third = [v / 3 for v in e.values] if e.kind == "collective_input" else None
    if e.kind == "collective_input":
        heads = [[v / 3 for v in h] for h in e.heads]
        return dataclasses.replace(e, values=third, heads=heads)
    if e.kind == "ring_step":
        return dataclasses.replace(e, chunk=[v / 3 for v in e.chunk])
    return e


def test_a_cell_shows_three_significant_digits_of_the_values_it_holds() -> None:
    events = [thirds(e) for e in load_recording(FOUR)]
    inputs = {e.rank: e for e in events if e.kind == "collective_input"}
    f = frame(events, 0, 0, w=1900, h=1000)
    # as many values a cell as fit every cell of the run: the same number in every cell
    most = len(f.text_with_key("rank0.chunk0").text.removesuffix(" …").split())
    assert most >= 2
    long = 0  # cells where a fourth significant digit would show
    for r, e in inputs.items():
        for c, head in enumerate(e.heads):
            shown = " ".join(sign(v) for v in head[:most]) + (" …" if len(head) > most else "")
            long += any(len(sign(v)) > 4 for v in head[:most])
            assert f.text_with_key(f"rank{r}.chunk{c}").text == shown, (r, c)
    assert long >= 8
    # after the first step the chunk each rank received is the sum it reported
    f = frame(events, 0, 2, w=1900, h=1000)
    for e in (e for e in events if e.kind == "ring_step" and e.step == 0):
        cell = f.text_with_key(f"rank{e.rank}.chunk{e.received}")
        more = " …" if len(e.chunk) > most else ""
        assert cell.text == " ".join(sign(v) for v in e.chunk[:most]) + more


# --- a run of another kind ------------------------------------------------------------------
def test_a_run_of_another_kind_says_what_to_do_at_the_top_left_in_muted_type() -> None:
    ctx = SceneContext(1280, 720, THEME, LESSON.phase_text, estimate_width)
    f = stage_frame(record(load_recording("default-run.jsonl")), Cursor(0, 0), 1.0, ctx, "ring")
    (t,) = f.texts
    assert t.text == "This lesson shows a collective run: press Run."
    assert t.color == THEME.muted and not t.font.bold
    pad = max(ctx.base_px, ctx.min_px) * 0.6
    assert (t.box.x, t.box.y) == (pytest.approx(pad), pytest.approx(pad))


# --- the verdict and the closing title, narrow ----------------------------------------------
def last_rank_unequal(events):
    """The engine said the last rank's ring sum differs from dist.all_reduce."""
    world = next(e for e in events if e.kind == "run_started").world_size
    return [
        dataclasses.replace(e, equal=False)
        if e.kind == "collective_result" and (e.algo, e.rank) == ("ring", world - 1)
        else e
        for e in events
    ]


LONG_OK = "✓ every rank holds the whole sum, equal to dist.all_reduce bit for bit"
MID_OK = "✓ equal to dist.all_reduce, bit for bit"
SHORT_OK = "✓ = dist.all_reduce"
LONG_BAD = "✗ a rank's sum differs from dist.all_reduce"
SHORT_BAD = "✗ ≠ dist.all_reduce"


@pytest.mark.parametrize(
    ("theme", "w", "h", "ok", "bad"),
    [
        ("light", 600, 400, LONG_OK, LONG_BAD),
        ("light", 420, 600, MID_OK, LONG_BAD),
        ("light", 360, 600, MID_OK, SHORT_BAD),
        ("light", 320, 480, SHORT_OK, SHORT_BAD),
        ("projector", 420, 600, SHORT_OK, SHORT_BAD),
        # a 320 px GIF on a projector: not even the shortest fits, and it is still said
        ("projector", 320, 480, SHORT_OK, SHORT_BAD),
    ],
)
def test_the_verdict_shortens_with_the_stage_and_keeps_its_mark(theme, w, h, ok, bad) -> None:
    events = load_recording(FOUR)
    results = [e for e in events if e.kind == "collective_result"]
    assert all(e.equal for e in results)
    for evs, said, ink in ((events, ok, "ok"), (last_rank_unequal(events), bad, "bad")):
        f = frame(evs, 5, 2, w=w, h=h, theme=load_theme(theme))
        verdict = f.text_with_key("verdict")
        assert verdict.text == said, (theme, w)
        assert verdict.color == getattr(load_theme(theme), ink) and verdict.font.bold
        assert verdict.box.bottom <= h


@pytest.mark.parametrize(("w", "title"), [(1280, True), (500, True), (420, False), (320, False)])
def test_the_closing_title_shortens_to_what_it_cost(w, title) -> None:
    f = frame(load_recording(FOUR), 5, 3, w=w, h=600)
    long, short = "After the ring: what each algorithm cost", "What it cost"
    assert texts(f)[0] == (long if title else short)
    assert f.texts[0].font.bold and f.texts[0].color == THEME.text


def verdict_px(f) -> float:
    """The buffers' type, in which the verdict is said (bold)."""
    return next(t for t in f.texts if t.text == "rank 0").font.px


@pytest.mark.parametrize("h", range(420, 720, 10))
def test_an_eight_rank_verdict_is_said_only_where_its_line_fits(h) -> None:
    projector = load_theme("projector")
    f = frame(load_recording("ring-8-ranks.jsonl"), 13, 2, w=320, h=h, theme=projector)
    verdict = f.text_with_key("verdict")
    lowest = max(t.box.bottom for t in f.texts if t.key != "verdict")
    if verdict is None:  # under the buffers less room is left than two lines' height
        assert h - lowest < 2 * verdict_px(f)
    else:
        assert verdict.text == SHORT_OK
        assert lowest <= verdict.box.y and verdict.box.bottom <= h


@pytest.mark.parametrize("world", [2, 4, 8])
def test_a_step_not_arrived_yet_is_titled_with_the_half_it_belongs_to(world) -> None:
    """While the cursor waits on a ring step no rank has reported, the title names the half
    that step is in: the half the recording's own ring_step lines of that step say."""
    events = load_recording(f"ring-{world}-ranks.jsonl")
    halves = {e.step: e.phase for e in events if e.kind == "ring_step"}
    assert set(halves.values()) == {"reduce_scatter", "all_gather"}
    for step, half in sorted(halves.items()):
        first = next(i for i, e in enumerate(events) if e.kind == "ring_step" and e.step == step)
        f = frame(events[:first], step, 1)
        assert WAITING in " ".join(texts(f)), step  # step not in yet
        title = texts(f)[0]
        assert title.startswith(f"Ring step {step + 1} of {len(halves)} · "), title
        assert title.split(" · ")[1] == half.replace("_", "-"), (step, title)
        assert f.section == ""  # the code view lights no loop while it waits
