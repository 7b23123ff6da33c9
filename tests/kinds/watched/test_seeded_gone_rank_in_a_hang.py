"""Seeded-bug probe: in a hang, a rank whose process vanished (or that finished its training)
is said as gone or finished, not as still inside the collective its last beat named. The
hang tests' ranks were all running; here one is lost mid-collective, one ended."""

from __future__ import annotations

from ddp_viz.kinds.watched.doctor import Doctor, hang_lines
from ddp_viz.kinds.watched.events import WatchBeat


def _inside(seq: int) -> dict:
    return {"op": "all_reduce", "seq": seq, "site": "train.py:40 in main", "sizes": [[4]]}


def test_a_lost_or_ended_rank_is_not_inside_its_last_collective() -> None:
    d = Doctor(fixed=10.0)
    for r in range(3):
        d.joined(r, 100 + r, now=0.0)
        d.beat(WatchBeat(1, r, 3, 7, 0.1, inside=_inside(7), stack=["train.py:40 in main"]), 0.0)
    assert d.lost(1) is not None  # its connection closed without its last word
    d.ended(2)
    h = d.check(now=60.0)
    assert h is not None
    states = {s["rank"]: s for s in h.ranks}
    assert states[0]["state"] == "inside" and states[0]["inside"]["seq"] == 7
    assert states[1]["state"] == "gone" and "inside" not in states[1]
    assert states[2]["state"] == "ended" and "inside" not in states[2]
    said = "\n".join(hang_lines(h, stacks=False))
    assert "rank 1: gone (its process vanished)" in said
    assert "rank 2: finished its training" in said
