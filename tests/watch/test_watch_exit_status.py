"""Every rank exited with the same status after its last word (pure): the script's own exit
status, as when every rank raised the same error. A script that trained to the end and then
returned 1 on every rank (its final check failed) read "rank 0 is the root cause", and ranks 1
and 2 "then exited … after rank 0 failed"."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched.checks import findings, verdict
from ddp_viz.kinds.watched.diagnosis import rank_states
from ddp_viz.kinds.watched.events import WatchDropped, WatchExit, WatchSummary
from tests.watch.made_runs import run


def ends(statuses: dict[int, int], steps: int = 6) -> list:
    """Each rank's last word after ``steps`` steps, then its exit status (0: torchrun names
    none); the command failed."""
    words = [WatchDropped(1, r, 0, steps=steps) for r in statuses]
    exits = [
        WatchExit(1, r, 100 + r, code, "", 5.0, first=True) for r, code in statuses.items() if code
    ]
    return [*words, *exits, WatchSummary(1, 1)]


def said(rec) -> list[str]:  # type: ignore[no-untyped-def]
    return [line for _, lines in findings(rec) for line in lines]


def test_every_rank_exiting_with_one_status_is_the_scripts_own() -> None:
    rec = run(*ends({0: 1, 1: 1, 2: 1}))
    assert said(rec) == [
        "✗ crash: every rank exited with status 1 without raising (sys.exit?), in or after its "
        "step 6 (loop index 5) (the same status on all 3 ranks, so the script's own: the cause)",
        "  rank 1 exited with status 1 without raising (sys.exit?), in or after its step 6 "
        "(loop index 5)",
        "  rank 2 exited with status 1 without raising (sys.exit?), in or after its step 6 "
        "(loop index 5)",
    ]
    assert verdict(rec) == (
        "ddp-viz verdict: every rank exited with status 1, without raising: the script's own "
        "exit status, not one rank's"
    )
    assert rank_states(rec) == {0: "failed", 1: "failed", 2: "failed"}


@pytest.mark.parametrize(
    ("statuses", "cause"),
    [
        ({0: 1, 1: 1, 2: 3}, 0),  # one rank's status differs: one rank's failure, the first
        ({0: 0, 1: 2, 2: 2}, 1),  # rank 0 exited with 0: not every rank
        ({0: 2, 1: 0, 2: 0}, 0),  # one rank alone
    ],
)
def test_twin_statuses_that_differ_or_a_rank_that_exited_cleanly_name_one_rank(
    statuses: dict[int, int], cause: int
) -> None:
    rec = run(*ends(statuses))
    assert verdict(rec).startswith(f"ddp-viz verdict: rank {cause} is the root cause: exited with")
    assert not any("every rank" in line for line in said(rec))
    assert rank_states(rec)[cause] == "failed"


def test_twin_a_world_of_one_names_its_rank() -> None:
    rec = run(*ends({0: 1}), world=1)
    assert verdict(rec).startswith(
        "ddp-viz verdict: rank 0 is the root cause: exited with status 1"
    )


def test_two_ranks_exiting_alike_are_the_scripts_own_too() -> None:
    rec = run(*ends({0: 4, 1: 4}), world=2)
    assert verdict(rec).startswith("ddp-viz verdict: every rank exited with status 4")
