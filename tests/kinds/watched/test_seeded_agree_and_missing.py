"""Seeded-bug survivors of the watch's pure answers, on hand-made inputs: a summary that came
without its digest can't be called bit-identical even when every rank sent the same dict (the
digest check must hold for every summary, not for any), and a hang where the ranks wait in
the same op and sizes but at different places in their sequence (all_reduce #8 against #7)
names the rank that is one collective behind as missing."""

from __future__ import annotations

import copy

from ddp_viz.kinds.watched.agree import averages_identical
from ddp_viz.kinds.watched.doctor import hang_lines, missing
from ddp_viz.kinds.watched.events import WatchHang
from ddp_viz.model.timeline import StepRecord


def _summary(digest: str | None) -> dict:
    out = {"shape": [10, 10], "norm": 1.25, "absmax": 0.5, "mean": 0.01, "sample": [0.1] * 8}
    if digest is not None:
        out["digest"] = digest
    return out


def _step(averages: list[dict]) -> StepRecord:
    st = StepRecord(step=0)
    for r, avg in enumerate(averages):
        st.rank(r).averaged = avg
    return st


def test_bit_identical_needs_every_summary_s_digest() -> None:
    both = {"a.weight": _summary("0badf00d"), "b.weight": _summary("12345678")}
    assert averages_identical(_step([copy.deepcopy(both) for _ in range(3)])) is True
    odd = copy.deepcopy(both)
    odd["b.weight"]["digest"] = "87654321"  # the last rank's second tensor differs
    assert averages_identical(_step([copy.deepcopy(both), copy.deepcopy(both), odd])) is False
    # the second tensor came without a digest: equal dicts, yet nothing says the bytes are
    one_short = {"a.weight": _summary("0badf00d"), "b.weight": _summary(None)}
    assert averages_identical(_step([copy.deepcopy(one_short) for _ in range(3)])) is False


def _inside(seq: int) -> dict:
    return {"op": "all_reduce", "seq": seq, "site": "train.py:40 in main", "sizes": [[4]]}


def test_a_rank_one_collective_behind_is_missing_from_the_others_one() -> None:
    ranks = [
        {"rank": r, "state": "inside", "quiet_s": 12.0, "step": 3, "inside": _inside(seq)}
        for r, seq in ((0, 8), (1, 7), (2, 8))
    ]
    h = WatchHang(1, 12.0, 10.0, ranks)
    call, absent = missing(h)
    assert call is not None and call["seq"] == 8
    assert absent == [1]
    assert "  missing from all_reduce #8: rank 1" in hang_lines(h)
    # all three in the same #8: nobody is missing
    same = WatchHang(1, 12.0, 10.0, [{**s, "inside": _inside(8)} for s in ranks])
    assert missing(same)[1] == []
    assert not any("missing from" in line for line in hang_lines(same))
