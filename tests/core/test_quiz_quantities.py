"""Every quantity a prediction can ask about, read from a recorded run, against the raw events
themselves at every step and rank (pure: no Qt, no torch). The recordings are chosen so that
the quantities a slip would confuse differ (bucket all-reduces against backward passes that
synced, rows against batches), which the lessons' own runs do not always do."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.collective.model import naive_bytes_sent, ring_bytes_sent
from ddp_viz.kinds.collective.report import collective_report
from ddp_viz.model.quiz import Quantity
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

ACCUMULATE = [
    "accumulate-mlp-buckets.jsonl",
    "accumulate-3-micro.jsonl",
    "accumulate-backward-only.jsonl",
    "accumulate-4-ranks.jsonl",
]


def _by_step_rank(events, kind):
    out = {}
    for e in events:
        if e.kind == kind:
            out.setdefault((e.step, e.rank), []).append(e)
    return out


@pytest.mark.parametrize("name", ACCUMULATE)
def test_allreduces_counts_the_hooks_bucket_calls_not_the_backwards_that_synced(name) -> None:
    events = load_recording(name)
    rec = record(events)
    micro = _by_step_rank(events, "micro_step")
    assert micro
    for (step, rank), ms in micro.items():
        calls = sum(len(m.allreduced) for m in ms)
        got = Quantity(what="allreduces", step=step + 1, rank=rank).read(rec)
        assert got == calls, (step, rank)


def test_a_recording_where_bucket_calls_and_synced_backwards_differ_is_among_them() -> None:
    # without it, counting backward passes that synced would pass the test above
    micro = _by_step_rank(load_recording(ACCUMULATE[0]), "micro_step")
    assert any(
        sum(len(m.allreduced) for m in ms) != sum(1 for m in ms if m.allreduced)
        for ms in micro.values()
    )


@pytest.mark.parametrize(
    "name", ["buckets-lesson-2-ranks.jsonl", "mlp-buckets-2-ranks.jsonl", "default-run.jsonl"]
)
def test_buckets_loss_and_tensors_are_the_ones_each_rank_sent(name) -> None:
    events = load_recording(name)
    rec = record(events)
    timing = _by_step_rank(events, "timing")
    for (step, rank), (t,) in timing.items():
        q = Quantity(what="buckets", step=step + 1, rank=rank).read(rec)
        assert q == (len(t.buckets) or None), (step, rank)
    for kind, what in (
        ("local_grad", "local"),
        ("averaged_grad", "averaged"),
        ("params", "params"),
    ):
        for (step, rank), (e,) in _by_step_rank(events, kind).items():
            for param, values in e.grads.items() if kind != "params" else e.params.items():
                if not isinstance(values, list):
                    continue  # a summary of a big tensor
                for i, v in enumerate(values[:3]):
                    q = Quantity(what=what, param=param, step=step + 1, rank=rank, index=i)
                    assert q.read(rec) == v, (what, step, rank, param, i)
            if kind == "local_grad":
                assert Quantity(what="loss", step=step + 1, rank=rank).read(rec) == e.loss


@pytest.mark.parametrize("name", ["ring-4-ranks.jsonl", "ring-8-ranks.jsonl"])
def test_bytes_are_the_ones_each_rank_sent_in_its_own_algorithm(name) -> None:
    events = load_recording(name)
    rec = record(events)
    results = [e for e in events if e.kind == "collective_result" and e.algo != "all_reduce"]
    # the fixture tells the algorithms and the ranks apart
    assert len({(e.algo, e.bytes_sent) for e in results}) > 2
    for e in results:
        q = Quantity(what=f"{e.algo}_bytes", step=1, rank=e.rank)
        assert q.read(rec) == e.bytes_sent, (e.algo, e.rank)


@pytest.mark.parametrize(
    "name", ["ring-2-ranks.jsonl", "ring-4-ranks.jsonl", "ring-8-ranks.jsonl", "ring-long.jsonl"]
)
def test_the_byte_formulas_equal_what_every_rank_really_sent(name) -> None:
    """The formulas the lesson and the CLI print beside the bytes, against the bytes the gloo
    ranks counted (lengths that do not divide by the world size make every chunk count)."""
    events = load_recording(name)
    (started,) = [e for e in events if e.kind == "run_started"]
    length, world = int(started.scenario["collective"]["length"]), started.world_size
    for e in events:
        if e.kind == "collective_result" and e.algo in ("ring", "naive"):
            formula = {"ring": ring_bytes_sent, "naive": naive_bytes_sent}[e.algo]
            assert formula(length, world, e.rank) == e.bytes_sent, (e.algo, e.rank)
    report = collective_report(record(events))
    for e in events:
        if e.kind == "collective_result" and e.algo in ("ring", "naive"):
            row = next(x for x in report.splitlines() if x.split()[:2] == [str(e.rank), e.algo])
            assert row.split()[2:4] == [f"{e.bytes_sent:,}"] * 2, row
