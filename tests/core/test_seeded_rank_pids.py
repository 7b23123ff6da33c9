"""Seeded-bug survivor: a report's "rank pids" are in rank order. In every recording the pids
rise with the rank, so listing them sorted by number read the same; a pool that reuses its
workers hands rank 0 whichever process is free, so here the pids fall as the rank rises."""

from __future__ import annotations

import json

from ddp_viz.model import protocol
from ddp_viz.model.report import run_report
from ddp_viz.model.timeline import record
from tests.conftest import DATA

NAME = "four-ranks-3-steps.jsonl"


def test_the_report_lists_the_pids_in_rank_order_whatever_their_numbers() -> None:
    raw = [json.loads(x) for x in (DATA / NAME).read_text().splitlines() if x.strip()]
    for d in raw:
        if d.get("event") == "rank_started":
            d["pid"] = 9000 - d["rank"]
    world = next(d for d in raw if d.get("event") == "run_started")["world_size"]
    rec = record([protocol.decode(json.dumps(d)) for d in raw])
    first = run_report(rec).splitlines()[0]
    pids = ", ".join(str(9000 - r) for r in range(world))
    assert first.endswith(f"rank pids {pids}"), first
