"""Inside a rank: gradients DDP never averaged (no ranks: fake DDP objects, torch's autograd
state). A gradient before DDP's first forward is a forward around DDP, said once; backwards
after forwards inside ``no_sync()`` are counted, and said at the end only if none synced."""

from __future__ import annotations

import json
from types import SimpleNamespace

import torch

from ddp_viz.kinds.watched.watch.sync_checks import SyncChecks

SYNCED = SimpleNamespace(require_backward_grad_sync=True)
NO_SYNC = SimpleNamespace(require_backward_grad_sync=False)  # inside model.no_sync()


def said(line: str | None) -> dict:
    assert line is not None
    return json.loads(line)


def test_a_gradient_before_ddps_first_forward_is_said_once_with_this_line() -> None:
    checks = SyncChecks(rank=2)
    first = said(checks.grad())
    assert (first["event"], first["rank"]) == ("watch_around", 2)
    assert first["site"].startswith("test_watch_sync_checks.py:")  # the caller's own line
    assert checks.grad() is None  # once
    checks.forward(SYNCED)
    assert checks.grad() is None and checks.last(synced=0) is None


def test_backwards_inside_no_sync_with_none_synced_are_said_at_the_end() -> None:
    checks = SyncChecks(rank=1)
    for _ in range(3):
        checks.forward(NO_SYNC)
        for _ in range(4):  # four parameters' gradients: one backward
            assert checks.grad() is None
    end = said(checks.last(synced=0))
    assert (end["event"], end["rank"], end["backwards"]) == ("watch_never_synced", 1, 3)
    assert end["site"].startswith("test_watch_sync_checks.py:")


def test_twin_accumulation_that_syncs_its_last_micro_step_says_nothing() -> None:
    checks = SyncChecks(rank=0)
    for sync in (NO_SYNC, NO_SYNC, NO_SYNC, SYNCED):
        checks.forward(sync)
        checks.grad()
    assert checks.unsynced == 3
    assert checks.last(synced=1) is None  # one step all-reduced: the accumulation worked


def test_twin_forwards_without_a_gradient_count_for_nothing() -> None:
    checks = SyncChecks(rank=0)
    with torch.no_grad():  # an evaluation inside no_sync(): no backward follows
        checks.forward(NO_SYNC)
    checks.grad()  # a gradient of something else, all the same
    checks.forward(NO_SYNC)  # a forward inside no_sync() with no backward after it
    assert checks.unsynced == 0 and checks.last(synced=0) is None
