"""The watched page of a real 3-rank ``ddp-viz watch`` recording, at every step, against the
raw lines: each rank's host, pid, step time, mean step and when it reached the all-reduce; whom
the others waited for this step and so far; each bucket's size, all-reduce and wait; every
gradient norm, the widest spread first. Rank 0 stops a step before the others (no arrival, no
straggler in that step). Expected values come from the JSON lines, read here with ``json``."""

from __future__ import annotations

import json
import math

import pytest

from ddp_viz.model.assets import asset
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

UNEVEN = "watched-uneven-3-ranks.jsonl"  # rank 0 runs 6 steps, ranks 1 and 2 run 7
STEPS = 7
THEME = load_theme("light")


def raw(name: str) -> list[dict]:
    return [json.loads(ln) for ln in (DATA / name).read_text().splitlines() if ln.strip()]


def frame(step: int, name: str = UNEVEN, w: int = 1280, h: int = 800, events=None):  # type: ignore[no-untyped-def]
    rec = record(events if events is not None else load_recording(name))
    lesson = load_lesson_folder(asset("watched"))
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, 3), 1.0, ctx, lesson.scene)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def said(f, key: str) -> str | None:  # type: ignore[no-untyped-def]
    t = f.text_with_key(key)
    return None if t is None else t.text


TIMING = {(d["step"], d["rank"]): d for d in raw(UNEVEN) if d["event"] == "timing"}
FORWARD = {k: d["spans"]["forward"][0][0] for k, d in TIMING.items()}
JOINED = {d["rank"]: d for d in raw(UNEVEN) if d["event"] == "watched_rank"}


def arrived(step: int) -> dict[int, float]:
    out = {}
    for (s, r), d in TIMING.items():
        launched = [b["launched"] for b in d["buckets"] if b["launched"] is not None]
        if s == step and launched:
            out[r] = min(launched)
    return out


def last_of(step: int) -> tuple[int, float] | None:
    got = arrived(step)
    if len(got) < 3:
        return None
    last = max(got, key=lambda r: (got[r], r))
    return last, got[last] - min(got.values())


@pytest.mark.parametrize("step", range(STEPS))
def test_each_ranks_row_is_its_host_pid_step_times_and_arrival(step) -> None:
    f = frame(step)
    assert said(f, "rank0.host") is not None
    first_line = f.texts[0].text
    assert first_line == f"Your run · step {step + 1} of {STEPS} reported"
    got = arrived(step)
    for r in range(3):
        assert said(f, f"rank{r}.host") == JOINED[r]["host"]
        assert said(f, f"rank{r}.pid") == str(JOINED[r]["pid"])
        pairs = [a for a in (step, step - 1) if (a, r) in FORWARD and (a + 1, r) in FORWARD]
        latest = FORWARD[(pairs[0] + 1, r)] - FORWARD[(pairs[0], r)] if pairs else None
        assert said(f, f"rank{r}.step_time") == ("—" if latest is None else ms(latest))
        end = min(step + 1, STEPS - 1)
        while (end, r) not in FORWARD:
            end -= 1
        mean = (FORWARD[(end, r)] - FORWARD[(0, r)]) / end
        assert said(f, f"rank{r}.mean_step") == ms(mean)
        want = f"+{ms(got[r] - min(got.values()))}" if r in got else "—"
        assert said(f, f"rank{r}.reached_all-reduce") == want, (step, r)
    # every rank's row in its own colour, the heads muted
    names = [t for t in f.texts if t.text in ("rank 0", "rank 1", "rank 2") and not t.key]
    assert [t.color for t in names[:3]] == [THEME.rank_color(r) for r in range(3)]  # the table


@pytest.mark.parametrize("step", range(STEPS))
def test_whom_the_others_waited_for_this_step_and_so_far(step) -> None:
    f = frame(step)
    found = last_of(step)
    line = f.text_with_key("straggler")
    if found is None:  # rank 0 never reached step 7's all-reduce: no one is named
        assert line is None
    else:
        rank, late = found
        assert line.text == (
            f"this step the others waited {ms(late)} for rank {rank}, the last to reach "
            "the all-reduce"
        )
        assert line.value == pytest.approx(late, abs=1e-12)
    waits: dict[int, list[float]] = {}
    for s in range(1, step + 1):  # from step 2: step 1's one-off costs left out
        if (x := last_of(s)) is not None:
            waits.setdefault(x[0], []).append(x[1])
    line = f.text_with_key("stragglers")
    if not waits:
        assert line is None
        return
    order = sorted(waits, key=lambda r: (-len(waits[r]), r))
    parts = "; ".join(
        f"rank {r} × {len(waits[r])}, mean wait {ms(sum(waits[r]) / len(waits[r]))}" for r in order
    )
    n = sum(len(w) for w in waits.values())
    assert line.text == f"last to the all-reduce in steps 2–{step + 1} ({n}): {parts}"
    top = waits[order[0]]
    assert line.value == pytest.approx(sum(top) / len(top), abs=1e-12)


@pytest.mark.parametrize("step", range(STEPS - 1))
def test_the_buckets_row_is_its_size_tensors_all_reduce_and_wait(step) -> None:
    f = frame(step)
    launched = {r: TIMING[(step, r)]["buckets"][0]["launched"] for r in range(3)}
    finished = {r: TIMING[(step, r)]["buckets"][0]["finished"] for r in range(3)}
    bucket = TIMING[(step, 0)]["buckets"][0]
    last = max(launched, key=lambda r: (launched[r], r))
    assert said(f, "bucket0.0") == "#0"
    assert said(f, "bucket0.1") == f"{bucket['bytes']} B"
    assert said(f, "bucket0.2") == str(len(bucket["params"]))
    assert said(f, "bucket0.3") == ms(finished[last] - launched[last])
    assert said(f, "bucket0.4") == ms(max(launched.values()) - min(launched.values()))
    # a faint bar for each rank that waited, a solid one for every rank's all-reduce
    keys = {s.key for s in f.shapes}
    for r in range(3):
        assert f"bucket.{r}.0" in keys
        assert (f"bucket.{r}.0.wait" in keys) is (launched[r] < launched[last])


@pytest.mark.parametrize("step", [0, 2, 5])
def test_every_gradient_norm_per_rank_the_average_and_the_spread(step) -> None:
    f = frame(step)
    lines = raw(UNEVEN)
    local = {
        d["rank"]: d["grads"] for d in lines if d["event"] == "local_grad" and d["step"] == step
    }
    avg = {
        d["rank"]: d["grads"] for d in lines if d["event"] == "averaged_grad" and d["step"] == step
    }
    numbers = f.numbers()
    spreads = {}
    for name in local[0]:
        norms = [math.sqrt(sum(v * v for v in local[r][name])) for r in range(3)]
        for r in range(3):
            assert numbers[f"rank{r}.local.{name}"] == pytest.approx(norms[r], rel=1e-9)
            assert said(f, f"rank{r}.local.{name}") == fmt(numbers[f"rank{r}.local.{name}"])
        mean = math.sqrt(sum(v * v for v in avg[0][name]))
        assert numbers[f"averaged.{name}"] == pytest.approx(mean, rel=1e-9)
        spreads[name] = max(norms) - min(norms)
        assert numbers[f"spread.{name}"] == pytest.approx(spreads[name], rel=1e-9)
    # the rows top to bottom: the widest spread first
    rows = sorted((f.text_with_key(f"spread.{n}").box.y, n) for n in spreads)
    assert [n for _, n in rows] == sorted(spreads, key=lambda n: -spreads[n])
    verdict = f.text_with_key("averages.identical")
    assert verdict.text == "✓ averages identical on every rank, bit for bit"
    assert verdict.color == THEME.ok
    assert f"step {step + 1}, captured in full:" in f.all_text()


def test_a_narrow_stage_shows_the_smallest_and_largest_ranks_norm() -> None:
    f = frame(2, w=560, h=900)
    lines = raw(UNEVEN)
    local = {d["rank"]: d["grads"] for d in lines if d["event"] == "local_grad" and d["step"] == 2}
    numbers = f.numbers()
    assert not any(k.startswith("rank0.local.") for k in numbers)
    shown = [k.removeprefix("smallest.") for k in numbers if k.startswith("smallest.")]
    assert shown
    for name in shown:
        norms = [math.sqrt(sum(v * v for v in local[r][name])) for r in range(3)]
        assert numbers[f"smallest.{name}"] == pytest.approx(min(norms), rel=1e-9)
        assert numbers[f"largest.{name}"] == pytest.approx(max(norms), rel=1e-9)
    heads = {t.text for t in f.texts}
    assert {"smallest", "largest", "averaged", "spread"} <= heads


def test_an_average_that_differs_on_the_last_rank_is_a_red_row_and_a_cross() -> None:
    events = load_recording(UNEVEN)
    for e in events:
        if e.kind == "averaged_grad" and e.step == 3 and e.rank == 2:
            e.grads["0.bias"] = [v + 1e-6 for v in e.grads["0.bias"]]
    f = frame(3, events=events)
    verdict = f.text_with_key("averages.identical")
    assert verdict.text == "✗ the averaged gradients differ between ranks"
    assert verdict.color == THEME.bad
    names = [t for t in f.texts if t.text in ("0.bias", "0.weight", "2.bias", "2.weight")]
    assert names[0].text == "0.bias"  # a differing average comes first
    assert {t.text: t.color for t in names} == {
        "0.bias": THEME.bad, "0.weight": THEME.text, "2.bias": THEME.text, "2.weight": THEME.text
    }  # fmt: skip


def test_a_narrower_stage_drops_host_and_pid_then_the_mean_then_the_step_time() -> None:
    allowed = [
        {"host", "pid", "step_time", "mean_step", "reached_all-reduce"},
        {"step_time", "mean_step", "reached_all-reduce"},
        {"step_time", "reached_all-reduce"},
        {"reached_all-reduce"},
    ]
    seen = []
    for w in range(1280, 150, -10):
        f = frame(3, w=w, h=900)
        cols = [{t.key.split(".", 1)[1] for t in f.texts if t.key.startswith(f"rank{r}.")
                 and "local" not in t.key} for r in range(3)]  # fmt: skip
        assert cols[0] == cols[1] == cols[2], w
        assert cols[0] in allowed, (w, cols[0])
        seen.append(allowed.index(cols[0]))
        # the numbers stay the recorded ones whatever is left out
        got = arrived(3)
        want = f"+{ms(got[2] - min(got.values()))}"
        assert said(f, "rank2.reached_all-reduce") == want
    assert seen == sorted(seen) and set(seen) == {0, 1, 2, 3}


def test_the_ranks_table_is_one_row_a_rank_under_its_heads() -> None:
    f = frame(3)
    names = ["host", "pid", "step_time", "mean_step", "reached_all-reduce"]
    heads = ["rank", "host", "pid", "step time", "mean step", "reached all-reduce"]
    head = [next(t for t in f.texts if t.text == h and t.color == THEME.muted) for h in heads]
    assert len({t.box.y for t in head}) == 1 and [t.box.x for t in head] == sorted(
        t.box.x for t in head
    )
    tops = []
    for r in range(3):
        label = next(t for t in f.texts if t.text == f"rank {r}" and not t.key)
        cells = [f.text_with_key(f"rank{r}.{n}") for n in names]
        assert {t.box.y for t in cells} == {label.box.y}  # one line a rank
        assert all(t.color == THEME.text for t in cells)
        # each cell under its head, on the head's left edge
        assert [t.box.x for t in [label, *cells]] == [t.box.x for t in head]
        tops.append(label.box.y)
    assert head[0].box.y < tops[0] < tops[1] < tops[2]  # rank 0 first


def test_the_gradient_table_puts_each_number_under_its_head() -> None:
    from ddp_viz.model.frame import Align

    f = frame(3)
    names = ["2.weight", "2.bias", "0.weight", "0.bias"]
    heads = ["rank 0", "rank 1", "rank 2", "averaged", "spread"]
    head = {h: [t for t in f.texts if t.text == h and t.color == THEME.muted][-1] for h in heads}
    assert len({t.box.y for t in head.values()}) == 1
    rights = [head[h].box.right for h in heads]
    assert rights == sorted(rights) and len(set(rights)) == 5
    title = next(t for t in f.texts if t.text == "‖gradient‖")
    assert title.box.y == head["rank 0"].box.y and title.box.right < rights[0]
    for n in names:
        label = next(t for t in f.texts if t.text == n and not t.key)
        keys = [f"rank0.local.{n}", f"rank1.local.{n}", f"rank2.local.{n}", f"averaged.{n}",
                f"spread.{n}"]  # fmt: skip
        cells = [f.text_with_key(k) for k in keys]
        assert {t.box.y for t in cells} == {label.box.y} and label.box.y > title.box.y
        assert [t.box.right for t in cells] == pytest.approx(rights)
        assert all(t.align == Align.RIGHT and t.color == THEME.text for t in cells)
        assert label.box.x == title.box.x and label.box.right < cells[0].box.x


def test_five_ranks_each_last_name_three_and_count_the_other_two() -> None:
    from ddp_viz.model import protocol

    events: list = [protocol.RunStarted(1, 5, 0, {"watched": True}, params=[
        {"name": "w", "shape": [2]}
    ])]  # fmt: skip
    # step 1 is left out of the count; then rank 4 last 3 times, 1 and 3 twice, 0 and 2 once
    lasts = [0, 4, 4, 4, 1, 1, 3, 3, 0, 2]
    waits = {0: 0.004, 1: 0.002, 2: 0.001, 3: 0.003, 4: 0.005}
    for step, last in enumerate(lasts):
        for r in range(5):
            t = float(step)
            late = waits[last] if r == last else 0.0
            bucket = {"index": 0, "params": ["w"], "bytes": 8}
            bucket.update(launched=t + 0.25 + late, finished=t + 0.5)
            spans = {"forward": [[t, t + 0.125]], "allreduce": [[t + 0.25 + late, t + 0.5]]}
            events.append(protocol.Timing(1, step, r, spans, buckets=[bucket]))
    f = frame(len(lasts) - 1, w=1900, h=1200, events=events)
    line = f.text_with_key("stragglers")
    assert line.text == (
        f"last to the all-reduce in steps 2–10 (9): rank 4 × 3, mean wait {ms(0.005)}; "
        f"rank 1 × 2, mean wait {ms(0.002)}; rank 3 × 2, mean wait {ms(0.003)}; "
        "2 other ranks fewer times"
    )
    assert line.value == pytest.approx(0.005, abs=1e-9)
    assert f.text_with_key("straggler").text.startswith(f"this step the others waited {ms(0.001)}")


def test_the_title_names_the_hosts_the_ranks_run_on() -> None:
    from dataclasses import replace

    hosts = {0: "node-b", 1: "node-a", 2: "node-b"}
    events = [
        replace(e, host=hosts[e.rank]) if e.kind == "watched_rank" else e
        for e in load_recording(UNEVEN)
    ]
    f = frame(2, events=events)
    assert f.texts[0].text == f"Your run · step 3 of {STEPS} reported"
    right = f.texts[1]
    assert right.text == "3 ranks on node-a, node-b"  # a laptop's stage has room for it
    assert [said(f, f"rank{r}.host") for r in range(3)] == ["node-b", "node-a", "node-b"]
