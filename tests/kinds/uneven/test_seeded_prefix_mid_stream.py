"""Seeded-bug survivor: how many leading steps of an uneven run are complete, asked after
every event (not only after the last). A rank that has not yet reported a step it trains
must hold the step back; only a rank that ran out of data before it is not waited for. The
expected count is worked out here from the raw events seen so far."""

from __future__ import annotations

import json

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord
from tests.conftest import DATA

STEP_EVENTS = ("local_grad", "averaged_grad", "params", "timing", "reference")


def _expected(raw: list[dict], world: int) -> int:
    parts: dict[tuple[int, int], dict[str, dict]] = {}
    out: dict[int, int] = {}
    steps = 0
    for d in raw:
        if d.get("event") in STEP_EVENTS:
            steps = max(steps, d["step"] + 1)
            if "rank" in d:
                parts.setdefault((d["step"], d["rank"]), {})[d["event"]] = d
        elif d.get("event") == "out_of_data":
            out[d["rank"]] = d["steps"]

    def done(n: int, r: int) -> bool:
        got = parts.get((n, r), {})
        local = got.get("local_grad")
        if local is None:
            return False
        if not local.get("values", True):
            return "timing" in got
        return "averaged_grad" in got and "params" in got

    n = 0
    while n < steps and all(done(n, r) for r in range(world) if out.get(r, n + 1) > n):
        n += 1
    return n


@pytest.mark.parametrize("name", ["uneven-monitored-3-ranks.jsonl", "uneven-join.jsonl"])
def test_the_complete_steps_wait_for_every_rank_that_trains_them(name) -> None:
    lines = [x for x in (DATA / name).read_text().splitlines() if x.strip()]
    raw = [json.loads(x) for x in lines]
    world = next(d for d in raw if d.get("event") == "run_started")["world_size"]
    rec = RunRecord()
    seen: list[dict] = []
    counts = []
    for line, d in zip(lines, raw, strict=True):
        rec.apply(protocol.decode(line))
        seen.append(d)
        want = _expected(seen, world)
        assert rec.complete_prefix() == want, (len(seen), d.get("event"))
        counts.append(want)
    # the run's steps came one by one: the count rose through every value on the way
    assert counts[-1] >= 2 and sorted(set(counts)) == list(range(counts[-1] + 1))
