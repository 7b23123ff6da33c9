"""A watched step read closely, against the raw lines of real ``ddp-viz watch`` recordings:
each bucket's launch and finish on every rank, who launched last and how long the first waited,
each rank's step times (the newest step, a rank that stopped a step early), the training's span,
the gradient norms and the tensors' rows. Expected values come from the JSON lines, read here
with ``json`` alone."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from ddp_viz.kinds.watched import steps
from ddp_viz.kinds.watched.steps import BucketTime, TensorRow
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording

UNEVEN = "watched-uneven-3-ranks.jsonl"  # rank 0 runs 6 steps, ranks 1 and 2 run 7
MANY = "watched-120-tensors.jsonl"  # 7 buckets, rank 1 sleeps 20 ms before every step
RAISES = "watched-raises-3-ranks.jsonl"  # 3 ranks, step 5 reported by ranks 0 and 1 only


def raw(name: str, event: str) -> list[dict]:
    lines = (DATA / name).read_text().splitlines()
    return [d for d in map(json.loads, filter(str.strip, lines)) if d.get("event") == event]


def timings(name: str) -> dict[tuple[int, int], dict]:
    return {(d["step"], d["rank"]): d for d in raw(name, "timing")}


def forward(name: str) -> dict[tuple[int, int], float]:
    return {k: d["spans"]["forward"][0][0] for k, d in timings(name).items()}


def rec_of(name: str):  # type: ignore[no-untyped-def]
    return record(load_recording(name))


# --- buckets -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [UNEVEN, MANY, RAISES])
def test_each_buckets_launch_and_finish_on_every_rank_as_recorded(name) -> None:
    rec, got = rec_of(name), timings(name)
    for st in rec.steps:
        want: dict[int, dict] = {}
        for (s, r), d in sorted(got.items()):
            if s != st.step:
                continue
            for b in d["buckets"]:
                if b.get("launched") is None or b.get("finished") is None:
                    continue  # a bucket the rank never finished (it hung): not on the clock
                entry = want.setdefault(b["index"], {"launched": {}, "finished": {}})
                entry.update(params=tuple(b["params"]), bytes=b["bytes"])
                entry["launched"][r], entry["finished"][r] = b["launched"], b["finished"]
        times = steps.bucket_times(st)
        assert [bt.index for bt in times] == sorted(want)
        for bt in times:
            w = want[bt.index]
            assert bt.launched == w["launched"] and bt.finished == w["finished"]
            assert bt.bytes == w["bytes"]
            launched = w["launched"]
            late = max(launched, key=lambda r: launched[r])
            assert bt.last == late
            assert bt.waited_s == max(launched.values()) - min(launched.values())
            assert bt.own_s == w["finished"][late] - launched[late]


def test_the_many_tensors_run_has_its_seven_buckets_with_their_parameters() -> None:
    rec = rec_of(MANY)
    times = steps.bucket_times(rec.steps[2])
    assert [bt.index for bt in times] == list(range(7))
    first_rank = min(rec.steps[2].ranks)
    mine = timings(MANY)[(2, first_rank)]["buckets"]
    assert [bt.params for bt in times] == [tuple(b["params"]) for b in mine]
    assert sum(len(bt.params) for bt in times) == 120


def test_a_bucket_launched_at_once_by_two_ranks_names_the_higher_one_last() -> None:
    bt = BucketTime(0, ("w",), 8, {0: 1.0, 1: 3.0, 2: 3.0}, {0: 4.0, 1: 4.5, 2: 5.0})
    assert bt.last == 2 and bt.own_s == 2.0 and bt.waited_s == 2.0
    bt = BucketTime(0, ("w",), 8, {0: 3.0, 1: 1.0, 2: 2.0}, {0: 3.5, 1: 4.0, 2: 5.0})
    assert bt.last == 0 and bt.own_s == 0.5 and bt.waited_s == 2.0


def test_a_bucket_a_rank_did_not_finish_is_left_out_of_its_times() -> None:
    events = load_recording(MANY)
    for e in events:
        if e.kind == "timing" and e.step == 1 and e.rank == 1:
            e.buckets[0]["finished"] = None  # the first of its 7: the others still count
        if e.kind == "timing" and e.step == 2 and e.rank == 0:
            e.buckets[3]["launched"] = None
    rec = record(events)
    times = {bt.index: bt for bt in steps.bucket_times(rec.steps[1])}
    assert sorted(times[0].launched) == [0]  # rank 1's bucket 0 never finished
    assert all(sorted(times[i].launched) == [0, 1] for i in range(1, 7))
    times = {bt.index: bt for bt in steps.bucket_times(rec.steps[2])}
    assert sorted(times[3].finished) == [1]
    assert all(sorted(times[i].finished) == [0, 1] for i in (0, 1, 2, 4, 5, 6))


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (216, "216 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (1024**2 - 1, "1024.0 KiB"),
        (1024**2, "1.0 MiB"),
        (25 * 1024**2 + 1024**2 // 2, "25.5 MiB"),
    ],
)
def test_a_size_reads_in_bytes_kib_or_mib(n, text) -> None:
    assert steps.size_text(n) == text


# --- step times --------------------------------------------------------------------------------


def test_each_ranks_latest_step_time_is_forward_to_next_forward() -> None:
    rec, fw = rec_of(UNEVEN), forward(UNEVEN)
    last = len(rec.steps) - 1
    assert last == 6
    for r in range(3):
        for s in range(len(rec.steps)):
            # this step's forward to the next; for the newest step, the one before it
            pairs = [(a, a + 1) for a in (s, s - 1) if (a, r) in fw and (a + 1, r) in fw]
            want = fw[(pairs[0][1], r)] - fw[(pairs[0][0], r)] if pairs else None
            got = steps.latest_step_time(rec, s, r)
            assert got == pytest.approx(want) if want is not None else got is None, (s, r)
    # rank 0 stopped after step 6 of 7: at the 7th it has no step of its own, and at its 6th
    # the latest whole step is its 5th
    assert steps.latest_step_time(rec, 6, 0) is None
    assert steps.latest_step_time(rec, 5, 0) == pytest.approx(fw[(5, 0)] - fw[(4, 0)])
    assert steps.latest_step_time(rec, 6, 2) == pytest.approx(fw[(6, 2)] - fw[(5, 2)])
    assert steps.latest_step_time(rec, 0, 1) == pytest.approx(fw[(1, 1)] - fw[(0, 1)])
    assert steps.latest_step_time(rec, 99, 1) is None
    assert steps.latest_step_time(rec, -5, 1) is None


def test_each_ranks_mean_step_time_runs_from_its_first_forward_to_its_latest() -> None:
    rec, fw = rec_of(UNEVEN), forward(UNEVEN)
    for r in range(3):
        for s in range(len(rec.steps)):
            last = min(s + 1, 6)
            while (last, r) not in fw:
                last -= 1
            want = (fw[(last, r)] - fw[(0, r)]) / last
            assert steps.mean_step_time(rec, s, r) == pytest.approx(want, rel=1e-12), (s, r)
    # rank 0's last forward is step 6's of 7 (index 5): five steps
    assert steps.mean_step_time(rec, 6, 0) == pytest.approx((fw[(5, 0)] - fw[(0, 0)]) / 5)
    assert steps.mean_step_time(rec, 6, 1) == pytest.approx((fw[(6, 1)] - fw[(0, 1)]) / 6)


def test_a_single_step_has_no_mean_step_time() -> None:
    events = [e for e in load_recording(UNEVEN) if getattr(e, "step", 0) == 0]
    rec = record(events)
    assert len(rec.steps) == 1
    assert steps.mean_step_time(rec, 0, 1) is None
    assert steps.latest_step_time(rec, 0, 1) is None
    assert steps.typical_step_s(rec, 0) is None


def test_the_typical_step_is_the_median_of_the_ranks_means_from_step_2() -> None:
    rec, fw = rec_of(UNEVEN), forward(UNEVEN)
    for upto in range(len(rec.steps)):
        means = []
        for r in range(3):
            end = min(upto, 6)
            while end > 1 and (end, r) not in fw:
                end -= 1
            if end > 1:
                means.append((fw[(end, r)] - fw[(1, r)]) / (end - 1))
        got = steps.typical_step_s(rec, upto)
        if not means:
            assert got is None, upto
        else:
            assert got == pytest.approx(sorted(means)[len(means) // 2], rel=1e-12), upto
    assert steps.typical_step_s(rec, 1) is None  # step 1's one-off costs are left out
    assert steps.typical_step_s(rec, 99) == steps.typical_step_s(rec, 6)


def test_the_typical_step_of_two_ranks_is_the_slower_ones_mean() -> None:
    rec, fw = rec_of(MANY), forward(MANY)
    means = sorted((fw[(3, r)] - fw[(1, r)]) / 2 for r in (0, 1))
    assert steps.typical_step_s(rec, 3) == pytest.approx(means[1], rel=1e-12)
    assert means[1] > means[0]


@pytest.mark.parametrize("name", [UNEVEN, MANY, RAISES])
def test_the_training_span_runs_from_the_first_forward_to_the_last_all_reduce(name) -> None:
    got = timings(name)
    starts = [s[0] for d in got.values() for s in d["spans"].get("forward", [])]
    ends = [b["finished"] for d in got.values() for b in d["buckets"] if b.get("finished")]
    want = max(ends) - min(starts)
    assert steps.training_span(rec_of(name)) == pytest.approx(want, rel=1e-12)


def test_the_elapsed_words_name_the_training_and_the_whole_command() -> None:
    rec = rec_of(UNEVEN)
    got = timings(UNEVEN)
    starts = [d["spans"]["forward"][0][0] for d in got.values()]
    ends = [b["finished"] for d in got.values() for b in d["buckets"] if b["finished"]]
    span = max(ends) - min(starts)
    (finished,) = raw(UNEVEN, "run_finished")
    whole = rec.elapsed_s
    assert whole is not None and whole == pytest.approx(finished["elapsed_s"])
    assert steps.watched_elapsed(rec) == (
        f" in {span:.3f} s of training ({whole:.2f} s with the launcher's start-up)"
    )
    rec.elapsed_s = None
    assert steps.watched_elapsed(rec) == f" in {span:.3f} s of training"
    bare = record([e for e in load_recording(UNEVEN) if e.kind in ("run_started", "run_finished")])
    assert steps.watched_elapsed(bare) == f" in {whole:.3f} s (the whole command)"
    bare.elapsed_s = None
    assert steps.watched_elapsed(bare) == ""
    assert steps.training_span(bare) is None


# --- gradients ---------------------------------------------------------------------------------


def norm(values: list[float]) -> float:
    return math.sqrt(sum(v * v for v in values))


@pytest.mark.parametrize("name", [UNEVEN, RAISES])
def test_the_whole_models_gradient_norm_per_rank_and_of_the_average(name) -> None:
    rec = rec_of(name)
    local = {(d["step"], d["rank"]): d["grads"] for d in raw(name, "local_grad")}
    avg = {(d["step"], d["rank"]): d["grads"] for d in raw(name, "averaged_grad")}
    for st in rec.steps:
        got_local, got_avg = steps.gradient_norms(st)
        want = {
            r: norm([v for g in grads.values() for v in g])
            for (s, r), grads in local.items()
            if s == st.step
        }
        assert got_local.keys() == want.keys()
        for r in want:
            assert got_local[r] == pytest.approx(want[r], rel=1e-9)
        mine = [grads for (s, _), grads in sorted(avg.items()) if s == st.step]
        if mine:
            assert got_avg == pytest.approx(norm([v for g in mine[0].values() for v in g]))
        else:
            assert got_avg is None


def test_every_tensors_row_holds_each_ranks_norm_the_averages_and_its_bucket() -> None:
    rec = rec_of(UNEVEN)
    (start,) = raw(UNEVEN, "run_started")
    shapes = {p["name"]: tuple(p["shape"]) for p in start["params"]}
    local = {(d["step"], d["rank"]): d["grads"] for d in raw(UNEVEN, "local_grad")}
    avg = {(d["step"], d["rank"]): d["grads"] for d in raw(UNEVEN, "averaged_grad")}
    buckets = timings(UNEVEN)
    for s in (0, 3, 5):
        rows = steps.tensor_rows(rec, rec.steps[s])
        assert [row.name for row in rows] == [p["name"] for p in start["params"]]
        for row in rows:
            want = {r: norm(local[(s, r)][row.name]) for r in range(3)}
            assert row.local == pytest.approx(want, rel=1e-9)
            assert row.spread == pytest.approx(max(want.values()) - min(want.values()))
            assert row.averaged == pytest.approx(norm(avg[(s, 0)][row.name]), rel=1e-9)
            assert row.shape == shapes[row.name]
            same = all(avg[(s, r)][row.name] == avg[(s, 0)][row.name] for r in range(3))
            assert row.identical is same
            (b,) = buckets[(s, 0)]["buckets"]
            assert row.bucket == b["index"] == 0


def test_a_rank_whose_average_differs_makes_its_tensors_row_not_identical() -> None:
    events = load_recording(UNEVEN)
    for e in events:
        if e.kind == "averaged_grad" and e.step == 2 and e.rank == 2:
            e.grads["2.bias"] = [e.grads["2.bias"][0] + 1e-3]
    rec = record(events)
    rows = {row.name: row for row in steps.tensor_rows(rec, rec.steps[2])}
    assert rows["2.bias"].identical is False
    assert all(rows[n].identical is True for n in rows if n != "2.bias")
    # the tensor whose averages differ comes first, whatever its spread
    assert steps.telling_rows(rec, rec.steps[2], 1)[0].name == "2.bias"
    assert steps.most_telling(list(rows.values()), 1)[0].name == "2.bias"


def row(name: str, spread: float, identical: bool | None = True) -> TensorRow:
    return TensorRow(name, (1,), 0, {0: 1.0}, 1.0, spread, identical)


def test_the_most_telling_rows_differ_first_then_widest_spread() -> None:
    rows = [row("a", 0.1), row("b", 0.5), row("c", math.nan), row("d", 0.2, False),
            row("e", 0.3, None), row("f", 0.05, False)]  # fmt: skip
    got = [r.name for r in steps.most_telling(rows, 6)]
    assert got == ["d", "f", "b", "e", "a", "c"]
    assert [r.name for r in steps.most_telling(rows, 3)] == ["d", "f", "b"]


def test_the_telling_rows_are_the_widest_spreads_of_the_recorded_norms() -> None:
    rec = rec_of(MANY)
    local = {(d["step"], d["rank"]): d["grads"] for d in raw(MANY, "local_grad")}
    st = rec.steps[1]
    spread = {}
    for name in local[(1, 0)]:
        a, b = norm(local[(1, 0)][name]), norm(local[(1, 1)][name])
        spread[name] = abs(a - b)
    widest = sorted(spread, key=lambda n: -spread[n])[:8]
    assert [r.name for r in steps.telling_rows(rec, st, 8)] == widest
    every = steps.tensor_rows(rec, st)
    assert len(every) == 120
    assert [r.name for r in steps.most_telling(every, 8)] == widest


def test_averages_are_the_same_value_by_value_or_digest_by_digest() -> None:
    same = steps._same
    assert same([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]]) is True
    assert same([[1.0, 2.0], [1.0, 2.0], [1.0, 2.5]]) is False  # the last rank's differs
    assert same([[1.0], None, [1.0]]) is None  # a rank's average has not come
    d = {"shape": [9], "norm": 3.0, "digest": "ab12"}
    assert same([d, dict(d), dict(d)]) is True
    assert same([d, dict(d), {**d, "digest": "ab13"}]) is False
    assert same([d, {**d, "norm": 4.0}, dict(d)]) is True  # the digest says, not the norm
    assert same([{"norm": 3.0}, {"norm": 3.0}]) is False  # no digest: not known equal
    assert same([d, [1.0, 2.0]]) is False and same([[1.0, 2.0], d]) is False
    assert same([[5.0]]) is True


def test_without_a_history_the_stragglers_are_counted_from_the_steps() -> None:
    rec = rec_of(UNEVEN)
    with_history = {upto: steps.stragglers_with_waits(rec, upto, 1) for upto in range(7)}
    rec.parts.pop("watched")
    fw: dict[int, dict[int, float]] = {}
    for (s, r), d in timings(UNEVEN).items():
        launched = [b["launched"] for b in d["buckets"] if b["launched"] is not None]
        if launched:
            fw.setdefault(s, {})[r] = min(launched)
    for upto in range(7):
        waits: dict[int, list[float]] = {}
        for s in range(1, upto + 1):
            got = fw.get(s, {})
            if len(got) == 3:
                last = max(got, key=lambda r: (got[r], r))
                waits.setdefault(last, []).append(got[last] - min(got.values()))
        want = sorted(
            ((r, len(w), sum(w) / len(w)) for r, w in waits.items()), key=lambda x: (-x[1], x[0])
        )
        found = steps.stragglers_with_waits(rec, upto, 1)
        assert [(x.rank, x.count) for x in found] == [(r, n) for r, n, _ in want], upto
        assert [x.mean_wait_s for x in found] == pytest.approx([m for _, _, m in want])
        assert found == with_history[upto]
    assert steps.stragglers_with_waits(rec, 6, 0)[0].count >= 1


def test_a_tensor_a_rank_did_not_send_is_nan_and_the_average_is_rank_0s() -> None:
    events = load_recording(UNEVEN)
    for e in events:
        if e.kind == "local_grad" and e.step == 1 and e.rank == 2:
            e.grads.pop("2.bias")
        if e.kind == "averaged_grad" and e.step == 1 and e.rank == 1:
            e.grads["0.bias"] = [v * 2 for v in e.grads["0.bias"]]
    rec = record(events)
    lines = raw(UNEVEN, "local_grad") + raw(UNEVEN, "averaged_grad")
    local = {d["rank"]: d["grads"] for d in lines if d["event"] == "local_grad" and d["step"] == 1}
    avg0 = next(d["grads"] for d in lines if d["event"] == "averaged_grad" and d["step"] == 1
                and d["rank"] == 0)  # fmt: skip
    rows = {r.name: r for r in steps.tensor_rows(rec, rec.steps[1])}
    bias = rows["2.bias"]
    assert math.isnan(bias.local[2])
    want = [norm(local[r]["2.bias"]) for r in (0, 1)]
    assert bias.spread == pytest.approx(max(want) - min(want))
    # the "averaged" column is rank 0's average, whichever rank's differs
    assert rows["0.bias"].averaged == pytest.approx(norm(avg0["0.bias"]))
    assert rows["0.bias"].identical is False


def test_forwards_without_a_finished_all_reduce_have_no_training_span() -> None:
    events = [replace(e, buckets=[]) if e.kind == "timing" else e for e in load_recording(UNEVEN)]
    rec = record(events)
    assert steps.training_span(rec) is None
    assert steps.watched_elapsed(rec) == f" in {rec.elapsed_s:.3f} s (the whole command)"
