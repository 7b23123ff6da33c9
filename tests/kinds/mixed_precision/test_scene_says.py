"""What the precision stage says at every step, against the raw events of the 3-rank recording
(the ranks' losses and underflow counts differ, the last rank's gradient alone overflows at
the spike), and of copies with one value moved so each ✓ meets its ✗ (pure, no Qt)."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.kinds.mixed_precision.scene import human_bytes
from ddp_viz.model.frame import StageFrame, estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
THREE = "mixed-precision-3-ranks.jsonl"
SPIKE = 4  # spike_step 5, from 0
STEPS = 8


def frame(events, step: int, phase: int, w: int = 1600, h: int = 1000) -> StageFrame:
    lesson = lesson_of("mixed_precision")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(step, phase), 1.0, ctx, lesson.scene)


def key(f: StageFrame, k: str):
    t = f.text_with_key(k)
    assert t is not None, (k, f.all_text())
    return t


def steps(events, arm: str, step: int) -> dict[int, object]:
    return {
        e.rank: e for e in events if e.kind == "precision_step" and e.arm == arm and e.step == step
    }


@pytest.fixture(scope="module")
def events():
    return load_recording(THREE)


def test_the_title_names_the_step_and_the_phase(events) -> None:
    f = frame(events, 2, 1)
    assert "Step 3 of 8 · against float32" in f.all_text()
    assert "3 ranks · rank 0's view" in f.all_text()


def test_the_dtypes_rank_0_saw_in_each_arm_and_that_every_rank_saw_the_same(events) -> None:
    cols = ("activation", "param", "grad", "bucket", "wire")
    for step in (0, STEPS - 1):
        f = frame(events, step, 0)
        for arm in ("fp32", "bf16", "fp16", "wire_fp16", "wire_bf16"):
            mine = steps(events, arm, step)[0].dtypes
            for c in cols:
                t = key(f, f"dtype.{arm}.{c}")
                assert t.text == mine[c], (arm, c)
                assert t.color == (THEME.text if mine[c] == "float32" else THEME.accent)
        check = key(f, "check.dtypes")
        assert (check.text, check.color) == (
            "✓ every one of the 3 ranks saw the same dtypes",
            THEME.ok,
        )
    # the last rank's wire dtype moved in one arm: the ranks differ
    moved = [
        dataclasses.replace(e, dtypes={**e.dtypes, "wire": "float32"})
        if e.kind == "precision_step" and (e.arm, e.step, e.rank) == ("wire_bf16", 1, 2)
        else e
        for e in events
    ]
    check = key(frame(moved, 1, 0), "check.dtypes")
    assert (check.text, check.color) == ("✗ the ranks saw different dtypes", THEME.bad)
    assert key(frame(moved, 2, 0), "check.dtypes").color == THEME.ok


def test_each_autocast_arms_loss_is_the_ranks_mean_against_float32s(events) -> None:
    for step in range(STEPS):
        f = frame(events, step, 1)
        base = None
        for arm in ("fp32", "bf16", "fp16"):
            ranks = steps(events, arm, step)
            loss = sum(e.loss for e in ranks.values()) / len(ranks)
            base = loss if arm == "fp32" else base
            t = key(f, f"loss.{arm}")
            assert t.value == pytest.approx(loss, rel=1e-12) and t.text == fmt(loss, 6), (arm, step)
            d = key(f, f"dloss.{arm}")
            assert d.value == pytest.approx(loss - base, rel=1e-9, abs=1e-12)
            assert d.text == fmt(loss - base, 2)
            assert key(f, f"dparam.{arm}").text == fmt(ranks[0].param_diff, 2)


def test_the_scaler_per_rank_and_its_verdict_at_every_step(events) -> None:
    for step in range(STEPS):
        ranks = steps(events, "fp16", step)
        f = frame(events, step, 2)
        scale = key(f, "scale")
        assert scale.text == f"scale {ranks[0].scale:g} → {ranks[0].next_scale:g}"
        for r, e in ranks.items():
            local, avg, did = (key(f, f"{k}.{r}") for k in ("local", "averaged", "stepped"))
            assert (local.text, local.color) == (
                ("inf", THEME.bad) if e.local_inf else ("finite", THEME.text)
            )
            assert (avg.text, avg.color) == (
                ("inf", THEME.bad) if e.averaged_inf else ("finite", THEME.text)
            )
            assert (did.text, did.color) == (
                ("stepped", THEME.text) if e.stepped else ("skipped", THEME.bad)
            )
            label = next(t for t in f.texts if t.text == f"rank {r}")
            assert label.color == THEME.ranks[r] and abs(label.box.y - did.box.y) < 1
        verdict = key(f, "check.skip")
        if step == SPIKE:
            assert [r for r, e in ranks.items() if e.local_inf] == [2]
            want = "✓ every one of the 3 ranks skipped this step"
        else:
            want = "✓ every one of the 3 ranks stepped"
        assert (verdict.text, verdict.color) == (want, THEME.ok), step


def test_a_rank_stepping_while_the_others_skip_is_named(events) -> None:
    moved = [
        dataclasses.replace(e, stepped=True)
        if e.kind == "precision_step" and (e.arm, e.step, e.rank) == ("fp16", SPIKE, 0)
        else e
        for e in events
    ]
    verdict = key(frame(moved, SPIKE, 2), "check.skip")
    assert (verdict.text, verdict.color) == (
        "✗ ranks [1, 2] skipped, ranks [0] stepped",
        THEME.bad,
    )


def test_while_a_rank_has_not_reported_its_row_waits_and_no_verdict(events) -> None:
    last = max(
        i
        for i, e in enumerate(events)
        if e.kind == "precision_step" and (e.arm, e.step) == ("fp16", 1)
    )
    missing = events[last].rank
    f = frame(events[:last], 1, 2)
    assert f.text_with_key("check.skip") is None
    assert f.text_with_key(f"stepped.{missing}") is None
    label = next(t for t in f.texts if t.text == f"rank {missing}")
    dots = [t for t in f.texts if t.text == "…" and abs(t.box.y - label.box.y) < 1]
    assert len(dots) == 3


def test_the_wire_bytes_error_and_values_sent_as_0(events) -> None:
    for step in (0, SPIKE, STEPS - 1):
        f = frame(events, step, 3)
        for arm in ("fp32", "wire_fp16", "wire_bf16"):
            e = steps(events, arm, step)[0]
            b = key(f, f"bytes.{arm}")
            assert b.value == e.sent and b.text == human_bytes(e.sent)
            err = key(f, f"error.{arm}")
            assert err.value == e.error and err.text == f"{e.error:.1e}"
            u = key(f, f"underflow.{arm}")
            assert u.value == e.underflow and u.text == str(e.underflow)
            assert u.color == (THEME.bad if e.underflow else THEME.text)
        assert key(f, "bytes.wire_fp16").text == "866 B"
        ranks = steps(events, "wire_fp16", step)
        counts = [ranks[r].underflow for r in range(3)]
        assert len(set(counts)) == 3  # the ranks' counts differ
        for r in range(3):
            t = key(f, f"underflow.r{r}")
            assert (t.text, t.value, t.color) == (f"r{r} {counts[r]}", counts[r], THEME.ranks[r])
        refused = next(e for e in events if e.kind == "precision_refused")
        assert key(f, "refused").text.startswith("bf16_compress_hook by its own name: TypeError")
        assert refused.message.startswith("TypeError")


def test_fsdp2s_bytes_gathered_and_reduced_by_rank_0(events) -> None:
    step = 3
    f = frame(events, step, 3)
    for arm in ("fsdp_fp32", "fsdp_bf16"):
        e = next(
            x
            for x in events
            if x.kind == "precision_sharded" and (x.arm, x.step, x.rank) == (arm, step, 0)
        )
        g, r = key(f, f"gathered.{arm}"), key(f, f"reduced.{arm}")
        assert (g.value, g.text) == (e.gathered, human_bytes(e.gathered))
        assert (r.value, r.text) == (e.reduced, human_bytes(e.reduced))
    assert "bf16 / fp32" in f.all_text() and "fp32 / fp32" in f.all_text()


@pytest.mark.parametrize(
    ("n", "text"),
    [(0, "0 B"), (866, "866 B"), (9999, "9,999 B"), (10000, "10.00 kB"), (12345, "12.35 kB")],
)
def test_bytes_in_b_below_10_kb_and_in_kb_from_there(n: int, text: str) -> None:
    assert human_bytes(n) == text


def test_a_recording_of_another_lesson_asks_for_a_run(events) -> None:
    other = load_recording("evaluation-2-ranks.jsonl")
    f = frame(other, 0, 0)
    assert f.all_text() == "This lesson trains five ways side by side: press Run."


def test_mid_step_every_cell_says_what_the_ranks_reported_so_far(events) -> None:
    """After every report of step 2: each arm's loss is the mean of the ranks in so far, its
    difference once float32's is in too, rank 0's own numbers once rank 0's is in; "—" or
    "…" before. The wire table's rows and FSDP2's come as rank 0 reports them."""
    step = 1
    seen: dict[tuple[str, int], object] = {}
    marks = [
        i
        for i, e in enumerate(events)
        if e.kind in ("precision_step", "precision_sharded") and e.step == step
    ]
    assert len(marks) == 3 * (5 + 2)
    for i in marks:
        e = events[i]
        seen[(e.arm, e.rank)] = e
        prefix = events[: i + 1]
        f = frame(prefix, step, 1)

        def mean(arm: str) -> float | None:
            got = [x.loss for (a, _), x in seen.items() if a == arm]
            return sum(got) / len(got) if got else None

        for arm in ("fp32", "bf16", "fp16"):
            loss, base = mean(arm), mean("fp32")
            t = key(f, f"loss.{arm}")
            assert (t.text, t.value) == (fmt(loss, 6), loss), (i, arm)
            d = key(f, f"dloss.{arm}")
            want = None if loss is None or base is None else loss - base
            assert d.text == fmt(want, 2), (i, arm)
            own = seen.get((arm, 0))
            assert key(f, f"dparam.{arm}").text == fmt(own.param_diff if own else None, 2)
        w = frame(prefix, step, 3)
        for arm in ("fp32", "wire_fp16", "wire_bf16"):
            assert (w.text_with_key(f"bytes.{arm}") is not None) is ((arm, 0) in seen), (i, arm)
        if not any((a, 0) in seen for a in ("fp32", "wire_fp16", "wire_bf16")):
            assert "bytes a rank sent" not in w.all_text()
            continue
        for r in range(3):
            got = seen.get(("wire_fp16", r))
            t = key(w, f"underflow.r{r}")
            want = f"r{r} {got.underflow if got else '…'}"
            assert (t.text, t.value) == (want, got.underflow if got else None), (i, r)
        for arm in ("fsdp_fp32", "fsdp_bf16"):
            got = seen.get((arm, 0))
            t = w.text_with_key(f"gathered.{arm}")
            assert (t.value if t else None) == (got.gathered if got else None), (i, arm)
