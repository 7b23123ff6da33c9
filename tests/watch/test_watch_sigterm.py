"""A SIGTERM torchrun did not send (pure: the launcher's lines and fake events, no torch).

torchrun looks for failed workers, stops the others with SIGTERM, then looks again. A rank
whose SIGTERM it saw before it began stopping any (a scheduler's preemption, a ``kill``) is
the cause; before, every SIGTERM was read as torchrun's, and a run where rank 1 was sent one
named rank 0, which torchrun had stopped, the root cause."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from ddp_viz.kinds.watched.checks import findings, verdict
from ddp_viz.kinds.watched.diagnosis import rank_states
from ddp_viz.kinds.watched.events import WatchExit, WatchRankLost, WatchSummary
from ddp_viz.kinds.watched.watch import launcher
from tests.watch.made_runs import run


def lines(path: Path, *items: dict) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in items), encoding="utf-8")
    return path


def ended(pid: int, code: int = -15, rank: int = 0) -> dict:
    return {"pid": pid, "local_rank": rank, "exitcode": code, "at": 100.0 + pid / 1000}


def test_an_exit_seen_before_torchrun_began_stopping_its_workers_is_first(tmp_path) -> None:
    path = lines(
        tmp_path / "exits.jsonl",
        {"start": 1.0},
        ended(11, rank=1),  # the one torchrun found: it then stops the others
        {"close": 2.0},
        ended(10, rank=0),
        ended(12, rank=2),
        {"close": 3.0},  # torchrun closes again as it shuts down
    )
    got = {e.pid: e for e in launcher.read_exits(path, {10: 0, 11: 1, 12: 2})}
    assert {pid: e.first for pid, e in got.items()} == {11: True, 10: False, 12: False}
    assert {pid: (e.rank, e.signal) for pid, e in got.items()} == {
        11: (1, "SIGTERM"), 10: (0, "SIGTERM"), 12: (2, "SIGTERM")}  # fmt: skip


def test_a_restart_opens_its_own_window_and_lines_without_marks_are_never_first(tmp_path) -> None:
    path = lines(
        tmp_path / "exits.jsonl",
        {"start": 1.0},
        ended(11, code=1, rank=1),
        {"close": 2.0},
        ended(10, rank=0),
        {"start": 3.0},  # torchrun's restart: attempt 1's workers
        ended(21, code=-9, rank=1),
        {"close": 4.0},
        ended(20, rank=0),
        ended(11, code=-15, rank=1),  # a pid seen twice: its first line stands
        "not a line",
        {"pid": "x", "exitcode": 1},
    )
    got = {e.pid: e.first for e in launcher.read_exits(path, {})}
    assert got == {11: True, 10: False, 21: True, 20: False}
    unmarked = lines(tmp_path / "old.jsonl", ended(11, rank=1), ended(10, rank=0))
    assert [e.first for e in launcher.read_exits(unmarked, {})] == [False, False]


def test_the_launchers_start_and_close_leave_a_line_each_and_still_run(
    tmp_path, monkeypatch
) -> None:
    path = tmp_path / "exits.jsonl"
    monkeypatch.setenv(launcher.EXITS_ENV, str(path))
    calls: list[tuple] = []

    class PContext:
        def start(self) -> None:
            calls.append(("start",))

        def close(self, death_sig=None, timeout: int = 30) -> None:  # type: ignore[no-untyped-def]
            calls.append(("close", death_sig, timeout))

    module = types.SimpleNamespace(PContext=PContext)
    launcher.patch_workers(module)  # type: ignore[arg-type]
    launcher.patch_workers(module)  # type: ignore[arg-type]  # once only
    p = PContext()
    p.start()
    p.close("SIGTERM", timeout=5)
    assert calls == [("start",), ("close", "SIGTERM", 5)]
    said = [json.loads(x) for x in path.read_text().splitlines()]
    assert [list(d) for d in said] == [["start"], ["close"]]
    assert said[0]["start"] <= said[1]["close"]


def lost(rank: int, step: int, inside: dict | None = None) -> WatchRankLost:
    return WatchRankLost(1, rank, 100 + rank, step, inside)  # type: ignore[arg-type]


STEP_4_BUCKET = {
    "seq": 9,
    "op": "all_reduce",
    "site": "t.py:40 in main",
    "bucket": 0,
    "step": 3,
}  # DDP's all-reduce of step 4 (from 0: 3)


def sigterms(first: tuple[int, ...]) -> list:
    """Ranks 0 and 2 went silent inside step 4's all-reduce; rank 1's word stopped at step 3;
    each was killed by SIGTERM, the ranks of ``first`` before torchrun stopped any."""
    exits = [WatchExit(1, r, 100 + r, -15, "SIGTERM", 2.0, first=r in first) for r in (0, 1, 2)]
    waiting = [lost(0, 4, STEP_4_BUCKET), lost(2, 4, STEP_4_BUCKET)]
    return [waiting[0], lost(1, 3), waiting[1], *exits, WatchSummary(1, 1)]


def test_a_sigterm_torchrun_saw_first_is_the_cause_with_where_it_came_from() -> None:
    rec = run(*sigterms(first=(1,)))
    (key, said), *_ = findings(rec)
    assert key == "crash"
    assert said[0] == (
        "✗ crash: rank 1 was killed by SIGTERM: asked to stop, not torchrun's, which had "
        "stopped no rank yet: a job scheduler's or a kill, in its step 4 (loop index 3) or just "
        "before it: after step 3's all-reduce, before step 4's, which the others reached (the "
        "first failure: the cause)"
    )
    assert said[1:] == [
        "  then rank 0 was killed by SIGTERM: asked to stop (torchrun sends it to the other "
        "ranks once one failed), in or after its step 4 (loop index 3), after rank 1 failed",
        "  then rank 2 was killed by SIGTERM: asked to stop (torchrun sends it to the other "
        "ranks once one failed), in or after its step 4 (loop index 3), after rank 1 failed",
    ]
    assert verdict(rec) == (
        "ddp-viz verdict: rank 1 is the root cause: killed by SIGTERM (not torchrun's, which "
        "had stopped no rank yet: a job scheduler's or a kill), in its step 4 (loop index 3) or "
        "just before it: after step 3's all-reduce, before step 4's, which the others reached"
    )
    assert rank_states(rec) == {0: "killed (SIGTERM)", 1: "killed (SIGTERM)", 2: "killed (SIGTERM)"}


@pytest.mark.parametrize("first", [(), (0, 1, 2)])
def test_twin_sigterms_all_alike_keep_their_old_reading(first: tuple[int, ...]) -> None:
    """None seen first (a launcher without the marks, a recording made before): every SIGTERM
    is torchrun's, and the first by rank stands, as before. All seen first (the whole job sent
    one at once): each came from outside, and none is named as torchrun's."""
    rec = run(*sigterms(first))
    said = findings(rec)[0][1]
    assert said[0].startswith("✗ crash: rank 0 was killed by SIGTERM")
    outside = "not torchrun's" in " ".join(said)
    assert outside == bool(first)
    assert ("asked to stop (torchrun sends it" in " ".join(said)) == (not first)
