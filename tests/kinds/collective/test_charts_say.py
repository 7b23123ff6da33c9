"""What the ring lesson's closing charts say, from the raw events: each rank's bytes beside its
bar (naive's root sends N − 1 vectors, every ring rank about 2 (N − 1) / N of one), the formulas
worked out for this run's length, the ranks an eight-rank chart leaves out and says so, the
colours of naive and ring, and the verdict under the ring on both sides."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_viz.kinds.collective.model import ring_steps
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart
from tests.kinds.collective.test_ring_scene import EIGHT, FOUR, TWO, frame


def raw(name: str) -> tuple[int, int, dict]:
    """(world, values per rank, (algo, rank) -> bytes sent), from the raw events."""
    events = load_recording(name)
    inputs = [e for e in events if e.kind == "collective_input"]
    length = inputs[0].chunks[-1][1]
    sent = {(e.algo, e.rank): e.bytes_sent for e in events if e.kind == "collective_result"}
    return len(inputs), length, sent


@pytest.mark.parametrize("name", [TWO, FOUR, EIGHT])
def test_the_bytes_chart_works_the_formulas_out_for_this_run(name: str) -> None:
    world, length, sent = raw(name)
    whole = length * 4
    _, f = frame(name, ring_steps(world) - 1, 3, w=1800, h=1400)
    text = " ".join(f.all_text().split())
    ring = 2 * (world - 1) * whole / world
    assert f"ring: about 2 (N − 1) / N × {whole:,} B = {ring:,.0f} B a rank" in text
    assert f"naive: rank 0 sends (N − 1) × {whole:,} B = {(world - 1) * whole:,} B" in text
    assert sent[("naive", 0)] == (world - 1) * whole  # the recorded count the line explains
    for (algo, r), n in sent.items():
        if algo == "all_reduce":
            continue
        label = f.text_with_key(f"bytes.{algo}.{r}")
        assert label.text == f"{n:,} B" and label.value == n
    assert "not drawn" not in text


def test_bars_are_as_long_as_their_bytes_and_coloured_by_algorithm() -> None:
    world, _, sent = raw(FOUR)
    _, f = frame(FOUR, ring_steps(world) - 1, 3, w=1800, h=1400)
    theme = load_theme("light")
    bars = {s.key: s for s in f.shapes if s.key.startswith("bar.")}
    assert set(bars) == {f"bar.{a}.{r}" for a in ("naive", "ring") for r in range(world)}
    most = max(n for (a, _), n in sent.items() if a != "all_reduce")
    longest = bars["bar.naive.0"].box.w
    for key, bar in bars.items():
        _, algo, r = key.split(".")
        assert bar.box.w == pytest.approx(longest * sent[(algo, int(r))] / most)
        assert bar.fill == (theme.bad if algo == "naive" else theme.accent)
    assert "■ naive" in f.all_text() and "■ ring" in f.all_text()


def test_eight_ranks_on_a_short_chart_draw_the_first_ones_and_the_last() -> None:
    world, _, sent = raw(EIGHT)
    _, f = frame(EIGHT, ring_steps(world) - 1, 3, w=900, h=600, theme="projector")
    drawn = sorted({int(s.key.split(".")[2]) for s in f.shapes if s.key.startswith("bar.")})
    assert drawn[-1] == world - 1 and len(drawn) < world
    assert drawn[:-1] == list(range(len(drawn) - 1))
    bars = {s.key: s.box.w for s in f.shapes if s.key.startswith("bar.")}
    for r in drawn:  # naive's root sends the most: the other bars are to its scale
        ratio = sent[("ring", r)] / sent[("naive", 0)]
        assert bars[f"bar.ring.{r}"] == pytest.approx(bars["bar.naive.0"] * ratio)
    assert f"rank {world - 1}" in [t.text for t in f.texts]


@pytest.mark.parametrize("h", [700, 724, 760])
def test_ranks_left_out_of_the_bytes_chart_are_said(h: int) -> None:
    """A projector's 900-wide stage drew ranks 0–5 and 7 and never said rank 6 was missing:
    the bars took every row the line saying so needed."""
    world, _, _ = raw(EIGHT)
    _, f = frame(EIGHT, ring_steps(world) - 1, 3, w=900, h=h, theme="projector")
    drawn = sorted({int(s.key.split(".")[2]) for s in f.shapes if s.key.startswith("bar.")})
    assert len(drawn) < world and drawn[:2] == [0, 1]
    text = " ".join(f.all_text().split())
    assert f"ranks {drawn[-2] + 1}–{world - 2} not drawn: like ranks 1 and {world - 1}" in text
    assert_inside_and_apart(f)


def test_the_verdict_under_the_ring_turns_when_the_last_ranks_sum_differs() -> None:
    theme = load_theme("light")
    _, f = frame(FOUR, ring_steps(4) - 1, 2, w=1800, h=1000)
    ok = f.text_with_key("verdict")
    assert ok.text == "✓ every rank holds the whole sum, equal to dist.all_reduce bit for bit"
    assert ok.color == theme.ok
    rec = record(load_recording(FOUR))
    col = rec.parts["collective"]
    col.results[("ring", 3)] = replace(col.results[("ring", 3)], equal=False)
    lesson = load_lesson("all-reduce")
    ctx = SceneContext(1800, 1000, theme, lesson.phase_text, estimate_width)
    bad = stage_frame(rec, Cursor(ring_steps(4) - 1, 2), 1.0, ctx, "ring").text_with_key("verdict")
    assert bad.text == "✗ a rank's sum differs from dist.all_reduce" and bad.color == theme.bad
    # before the last step there is no verdict, only what the colours mean
    _, early = frame(FOUR, ring_steps(4) - 2, 2, w=1800, h=1000)
    assert not [t for t in early.texts if t.key == "verdict"]
    assert "colour: the chunk's owner" in early.all_text()


@pytest.mark.parametrize("name", [TWO, FOUR, EIGHT])
def test_the_title_counts_ring_steps_and_names_the_half(name: str) -> None:
    events = load_recording(name)
    world, length, _ = raw(name)
    phases = {e.step: e.phase for e in events if e.kind == "ring_step"}
    for step, phase in sorted(phases.items()):
        _, f = frame(name, step, 1, w=2400, h=1400)
        half = "reduce-scatter" if phase == "reduce_scatter" else "all-gather"
        want = f"Ring step {step + 1} of {2 * (world - 1)} · {half} · 2 · chunks travel"
        assert want in [t.text for t in f.texts]
        assert f.section == half
        assert f"{world} ranks · {length} values each" in [t.text for t in f.texts]


def test_the_chip_and_outline_mark_what_each_rank_sends_until_it_arrives() -> None:
    events = load_recording(FOUR)
    moves = {e.rank: e for e in events if e.kind == "ring_step" and e.step == 1}
    for phase in (0, 1):
        _, f = frame(FOUR, 1, phase, 0.5, w=1800, h=1000)
        outlined = {s.key: s for s in f.shapes if s.key.startswith("sends.")}
        assert set(outlined) == {f"sends.{r}" for r in range(4)}
        cells = {s.key: s for s in f.shapes if s.key.startswith("rank") and s.fill}
        for r, m in moves.items():
            assert outlined[f"sends.{r}"].box == cells[f"rank{r}.chunk{m.sent}"].box
    _, f = frame(FOUR, 1, 2, w=1800, h=1000)
    assert not [s for s in f.shapes if s.key.startswith(("sends.", "move."))]
    cells = {s.key: s for s in f.shapes if s.key.startswith("rank") and s.fill}
    got = {s.key: s for s in f.shapes if s.key.startswith("got.")}
    for r, m in moves.items():
        assert got[f"got.{r}"].box == cells[f"rank{r}.chunk{m.received}"].box


def test_the_left_out_line_names_one_rank_or_a_range() -> None:
    from ddp_viz.kinds.collective.scene_charts import left_out

    # eight ranks: 0–5 and 7 drawn leaves rank 6 alone; 0–2 and 7 leaves 3 to 6
    assert left_out([0, 1, 2, 3, 4, 5, 7], 8) == "rank 6 not drawn: like ranks 1 and 7"
    assert left_out([0, 1, 2, 7], 8) == "ranks 3–6 not drawn: like ranks 1 and 7"
    assert left_out([0, 1, 4], 5) == "ranks 2–3 not drawn: like ranks 1 and 4"
