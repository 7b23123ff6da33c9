"""What the restart stage says in each phase, against the raw events of the 4-rank recording
(the last rank killed, the ranks' waits and mask counts differ) and of copies with one value
moved, so each ✓ meets its ✗ and each = its ≠ (pure: recordings, no Qt, no torch)."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.resuming.widened import widened
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
FOUR = "resuming-4-ranks.jsonl"
# 48 rows at 4 ranks: 12 places a rank, 3 steps of 4 an epoch, 4 epochs
TOTAL = 4 * -(-(48 // 4) // 4)


def frame(events, phase: int, w: int = 1800, h: int = 1000) -> StageFrame:
    lesson = lesson_of("resuming")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)


def key(f: StageFrame, k: str):
    t = f.text_with_key(k)
    assert t is not None, (k, f.all_text())
    return t


def of(events, kind: str) -> list:
    return [e for e in events if e.kind == kind]


def moved(events, kind: str, where: dict, **change) -> list:
    return [
        dataclasses.replace(e, **change)
        if e.kind == kind and all(getattr(e, k) == v for k, v in where.items())
        else e
        for e in events
    ]


@pytest.fixture(scope="module")
def events():
    return load_recording(FOUR)


# --- 1. save --------------------------------------------------------------------------------
def test_the_checkpoint_and_every_ranks_load(events) -> None:
    saved = of(events, "checkpoint_saved")[0]
    f = frame(events, 0)
    line = key(f, "saved.bytes")
    assert line.value == saved.bytes == 28291
    assert line.text == f"after step {saved.step}: 28,291 bytes ({', '.join(saved.keys)})"
    waits = {e.rank: e.waited for e in of(events, "checkpoint_loaded")}
    assert len(set(waits.values())) == 4
    for r, waited in waits.items():
        t = key(f, f"load.{r}")
        assert t.value == waited and t.color == THEME.ok
        assert t.text == f"waited {waited:.3f} s · loaded CRC-32 {saved.weights} = rank 0's"
        label = next(x for x in f.texts if x.text == f"rank {r}")
        assert abs(label.box.y - t.box.y) < 1 and label.color == THEME.ranks[r]
    loads = key(f, "loads")
    assert loads.color == THEME.ok
    assert loads.text == f"✓ every rank loaded the weights rank 0 saved (CRC-32 {saved.weights})"


def test_a_rank_that_loaded_other_weights_is_a_cross(events) -> None:
    f = frame(moved(events, "checkpoint_loaded", {"rank": 3}, weights="deadbeef"), 0)
    t = key(f, "load.3")
    assert t.color == THEME.bad and t.text.endswith("loaded CRC-32 deadbeef ≠ rank 0's")
    assert key(f, "load.2").color == THEME.ok
    loads = key(f, "loads")
    assert loads.color == THEME.bad and loads.text.startswith("✗ every rank loaded")


def test_fsdp2s_reshard_and_zeros_state_with_their_bytes(events) -> None:
    reshards = {e.rank: e for e in of(events, "reshard_compared")}
    zeros = {e.rank: e for e in of(events, "zero_consolidated")}
    f = frame(events, 0)
    line = key(f, "reshard")
    assert line.color == THEME.ok
    assert line.text == (
        "✓ FSDP2 sharded over 4 ranks, saved with DCP, loaded over 3: parameters = saved"
    )
    files = ", ".join(f"{reshards[r].bytes:,}" for r in range(4))
    sizes = key(f, "reshard.bytes")
    assert sizes.text == f"each rank's file of it, bytes: {files}"
    assert sizes.value == reshards[3].bytes and sizes.color == THEME.muted
    z = key(f, "zero")
    assert z.color == THEME.ok
    assert z.text == (
        "✓ ZeRO: Adam's state split by parameter; consolidate_state_dict(to=0) gathers all "
        f"{zeros[0].full_params} on rank 0, = plain Adam's"
    )
    held = ", ".join(f"{zeros[r].state_bytes:,}" for r in range(4))
    zb = key(f, "zero.bytes")
    assert (
        zb.text
        == f"each rank's Adam state, bytes: {held}; gathered on rank 0: {zeros[0].full_bytes:,}"
    )
    assert zb.value == zeros[0].full_bytes


def test_a_reshard_off_and_a_zero_state_off_are_crosses(events) -> None:
    off = moved(events, "reshard_compared", {"rank": 2}, max_diff=1e-3)
    off = moved(off, "zero_consolidated", {"rank": 0}, state_diff=1e-3)
    f = frame(off, 0)
    assert key(f, "reshard").color == THEME.bad
    assert key(f, "reshard").text.startswith("✗ FSDP2 sharded over 4 ranks")
    assert key(f, "reshard").text.endswith("parameters ≠ saved")
    assert key(f, "zero").color == THEME.bad and key(f, "zero").text.endswith("≠ plain Adam's")


def test_before_every_rank_has_resumed_the_stage_waits(events) -> None:
    cut = [e for e in events if not (e.kind == "reshard_compared" and e.rank == 3)]
    for phase in (0, 1):
        f = frame(cut, phase)
        assert "Waiting for the ranks…" in f.all_text() and f.text_with_key("loads") is None
    cut = [e for e in events if e.kind != "restart_outcome"]
    assert "Waiting for the ranks…" in frame(cut, 2).all_text()
    assert frame(cut, 0).text_with_key("loads") is not None


# --- 2. resume ------------------------------------------------------------------------------
def test_each_way_of_resuming_rank_by_rank_against_the_run_never_stopped(events) -> None:
    compared = {(e.variant, e.rank): e for e in of(events, "resume_compared")}
    f = frame(events, 1)
    for variant in ("everything", "no_epoch", "no_rng", "no_optimizer"):
        for r in range(4):
            e = compared[(variant, r)]
            equal = e.max_diff == 0.0 and e.weights == e.weights_want
            cell = key(f, f"cell.{variant}.{r}")
            assert (cell.text, cell.color) == (("=", THEME.ok) if equal else ("≠", THEME.bad))
            head = key(f, f"head.{r}")
            assert abs(cell.box.x - head.box.x) < 1
        worst = max(compared[(variant, r)].max_diff for r in range(4))
        t = key(f, f"variant.{variant}")
        assert (t.text, t.color) == (f"✗ largest |Δ| {worst:.1e}", THEME.bad), variant


def test_a_way_equal_bit_for_bit_is_a_tick(events) -> None:
    same = events
    for r in range(4):
        want = next(
            e.weights_want
            for e in events
            if e.kind == "resume_compared" and (e.variant, e.rank) == ("everything", r)
        )
        same = moved(
            same,
            "resume_compared",
            {"variant": "everything", "rank": r},
            max_diff=0.0,
            weights=want,
        )
    f = frame(same, 1)
    t = key(f, "variant.everything")
    assert (t.text, t.color) == ("✓ bit for bit", THEME.ok)
    assert all(key(f, f"cell.everything.{r}").text == "=" for r in range(4))
    assert f.text_with_key("why.everything") is None  # nothing to explain
    # one rank's weights alone differ: that cell and the row turn
    one = moved(same, "resume_compared", {"variant": "everything", "rank": 3}, weights="0")
    f = frame(one, 1)
    assert [key(f, f"cell.everything.{r}").text for r in range(4)] == ["=", "=", "=", "≠"]
    assert key(f, "variant.everything").text == "✗ largest |Δ| 0.0e+00"


def test_what_the_first_resumed_step_did_differently_as_the_last_rank_saw_it(events) -> None:
    compared = {(e.variant, e.rank): e for e in of(events, "resume_compared")}
    f = frame(events, 1)
    why = key(f, "why.everything")
    assert why.color == THEME.muted
    assert why.text == (
        "everything: first step alike (rows, masks, Adam's step); a new DDP's first bucket is "
        "in another order, so the ring rounds otherwise"
    )
    e = compared[("no_epoch", 3)]
    assert e.rows == e.rows_start != e.rows_want
    rows = key(f, "rows")
    assert rows.color == THEME.bad
    assert rows.text == (
        f"no epoch: rank 3's first rows {', '.join(map(str, e.rows))} (step 1's again), "
        f"never stopped {', '.join(map(str, e.rows_want))}"
    )
    n = sum(compared[("no_rng", r)].mask_diff for r in range(4))
    size = sum(compared[("no_rng", r)].mask_size for r in range(4))
    masks = key(f, "masks")
    assert (masks.value, masks.color) == (n, THEME.bad)
    assert (
        masks.text == f"no RNG: {n} of {size} dropout-mask places differ in the first resumed step"
    )
    e = compared[("no_optimizer", 3)]
    adam = key(f, "adam")
    assert (adam.value, adam.color) == (e.adam_step, THEME.bad)
    assert adam.text == (
        f"no optimizer: Adam's step {e.adam_step:g} after the first resumed step, never "
        f"stopped {e.adam_step_want:g}"
    )


def test_a_first_step_unlike_and_pieces_that_changed_nothing(events) -> None:
    # the last rank's mask differed in the resume of everything: its first step was unlike
    off = moved(events, "resume_compared", {"variant": "everything", "rank": 3}, mask_diff=2)
    assert key(frame(off, 1), "why.everything").text == "everything: the first resumed step differs"
    # rows, masks and Adam's step as never stopped: said in muted type, not as a fault
    calm = events
    for r in range(4):
        e = next(
            x
            for x in events
            if x.kind == "resume_compared" and (x.variant, x.rank) == ("no_epoch", r)
        )
        calm = moved(calm, "resume_compared", {"variant": "no_epoch", "rank": r}, rows=e.rows_want)
        calm = moved(calm, "resume_compared", {"variant": "no_rng", "rank": r}, mask_diff=0)
        calm = moved(calm, "resume_compared", {"variant": "no_optimizer", "rank": r}, adam_step=7.0)
    f = frame(calm, 1)
    e = next(
        x for x in events if x.kind == "resume_compared" and (x.variant, x.rank) == ("no_epoch", 3)
    )
    assert key(f, "rows").color == THEME.muted
    assert key(f, "rows").text == (
        f"no epoch: rank 3's first rows {', '.join(map(str, e.rows_want))}, "
        f"never stopped {', '.join(map(str, e.rows_want))}"
    )
    assert (key(f, "masks").color, key(f, "masks").value) == (THEME.muted, 0)
    assert key(f, "adam").color == THEME.muted


# --- 3. dies --------------------------------------------------------------------------------
def test_the_first_attempt_a_lane_per_rank_and_how_each_ended(events) -> None:
    f = frame(events, 2)
    attempts = {e.rank: e for e in of(events, "restart_attempt") if e.attempt == 0}
    words = {"failed": "failed", "stopped": "stopped", "killed": "killed", "finished": "finished"}
    ink = {"failed": THEME.bad, "killed": THEME.bad, "stopped": THEME.muted, "finished": THEME.ok}
    for r, a in attempts.items():
        t = key(f, f"end.0.{r}")
        assert t.text == f"{words[a.end]} after {a.last_step}" and t.color == ink[a.end], r
    assert attempts[3].end == "killed"
    assert (
        "attempt 0 · a checkpoint every 3 steps (|) · rank 3 sends itself SIGKILL after step 5"
        in f.all_text()
    )
    outcome = of(events, "restart_outcome")[0]
    failed = [a for a in attempts.values() if a.end == "failed"]
    first = failed[0].error.split(". ")[0]
    assert key(f, "others").text == (
        f"torchrun sent SIGTERM {outcome.sigterms}×; {len(failed)} failed in a collective "
        f"({first}); 1 stopped before a word"
    )
    # each lane filled in its rank's colour from step 0 to the step it died after, of TOTAL
    bars = [s for s in f.shapes if s.kind == "rect" and s.fill and s.fill_alpha == 150]
    assert sorted(s.fill for s in bars) == sorted(THEME.ranks[r] for r in range(4))
    frames_ = [s for s in f.shapes if s.kind == "rect" and s.stroke == THEME.grid]
    assert len(frames_) == 4
    lane = frames_[0].box
    for bar in bars:
        assert bar.box.x == pytest.approx(lane.x)
        assert bar.box.w == pytest.approx(lane.w * 5 / TOTAL)
    ticks = [s for s in f.shapes if s.kind == "line"]
    assert len(ticks) == 4  # rank 0 saved after step 3: a tick on every lane
    assert all(t.points[0][0] == pytest.approx(lane.x + lane.w * 3 / TOTAL) for t in ticks)


# --- 4. restart -----------------------------------------------------------------------------
def test_the_restart_the_steps_lost_and_the_final_weights(events) -> None:
    o = of(events, "restart_outcome")[0]
    f = frame(events, 3)
    text = f.all_text()
    assert "attempt 1 (TORCHELASTIC_RESTART_COUNT=1): every rank resumed from step 3" in text
    assert key(f, "ports").text == (
        "the same store port in every attempt (35205); attempt 1 joined through keys of its own"
    )
    for r in range(4):
        assert (key(f, f"end.1.{r}").text, key(f, f"end.1.{r}").color) == (
            "finished after 12",
            THEME.ok,
        )
    restarts = key(f, "restarts")
    assert (restarts.text, restarts.value) == (f"restarts: {o.restarts} of --max-restarts 3", 1)
    n = o.killed_after - o.resumed_from
    lost = key(f, "lost")
    assert lost.value == n == 2
    assert lost.text == "steps lost: 2, outlined (killed after 5, last checkpoint 3; 5 mod 3 = 2)"
    final = key(f, "final")
    assert final.color == THEME.bad
    assert final.text == (
        f"✗ final weights ≠ the run never stopped (largest |Δ| {o.max_diff:.1e}): the restart "
        "is a new DDP, its first bucket in another order"
    )
    lane = next(s for s in f.shapes if s.kind == "rect" and s.stroke == THEME.grid).box
    redone = [s for s in f.shapes if s.kind == "rect" and s.stroke == THEME.bad]
    assert len(redone) == 4
    for s in redone:  # steps 3 to 5 of TOTAL, trained twice
        assert s.box.x == pytest.approx(lane.x + lane.w * 3 / TOTAL)
        assert s.box.w == pytest.approx(lane.w * 2 / TOTAL)
    bars = [s for s in f.shapes if s.kind == "rect" and s.fill and s.fill_alpha == 150]
    assert len(bars) == 4
    assert all(b.box.x == pytest.approx(lane.x + lane.w * 3 / TOTAL) for b in bars)
    assert all(b.box.right == pytest.approx(lane.right) for b in bars)


def test_final_weights_bit_for_bit_and_a_large_difference(events) -> None:
    o = of(events, "restart_outcome")[0]
    f = frame(moved(events, "restart_outcome", {}, max_diff=0.0, weights=o.weights_want), 3)
    final = key(f, "final")
    assert final.color == THEME.ok
    assert final.text == (
        f"✓ final weights = the run never stopped, bit for bit (CRC-32 {o.weights_want})"
    )
    f = frame(moved(events, "restart_outcome", {}, max_diff=0.5), 3)
    assert key(f, "final").text == "✗ final weights ≠ the run never stopped (largest |Δ| 5.0e-01)"
    # no step lost: nothing outlined
    f = frame(moved(events, "restart_outcome", {}, resumed_from=5), 3)
    assert key(f, "lost").value == 0
    assert not [s for s in f.shapes if s.kind == "rect" and s.stroke == THEME.bad]


def test_a_failed_rendezvous_gets_its_line_and_the_store_ports(events) -> None:
    f = frame(widened(3, failed_attempt=True), 3)
    line = key(f, "attempt.1")
    assert line.color == THEME.bad
    assert line.text == (
        "attempt 1: Gloo connectFullMesh failed with [/x/pair.cc:152] Connection refused"
    )
    assert "attempt 2 (TORCHELASTIC_RESTART_COUNT=2)" in f.all_text()
    assert key(f, "restarts").value == 2
    other = moved(events, "restart_attempt", {"attempt": 1}, store_port=40000)
    assert key(frame(other, 3), "ports").text.startswith(
        "store ports differ (35205, 40000); attempt 1 joined through keys of its own"
    )


def test_without_attempt_keys_the_restart_read_the_last_attempts() -> None:
    events = []
    for e in load_recording(FOUR):
        if e.kind == "run_started":
            table = {**e.scenario["resuming"], "attempt_keys": False}
            e = dataclasses.replace(e, scenario={**e.scenario, "resuming": table})
        events.append(e)
    assert key(frame(events, 3), "ports").text.endswith("joined through the keys left by the last")
