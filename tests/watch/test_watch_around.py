"""Gradients DDP never averaged (pure: fake events). ``model.module(x)``, or ``no_sync()`` left
on for every backward, trains each rank on its own gradients with no error; the watch saw no
step and its report said nothing at all."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched.checks import findings, verdict
from ddp_viz.kinds.watched.events import (
    WatchAround,
    WatchFailure,
    WatchNeverSynced,
    WatchSummary,
)
from ddp_viz.model import protocol
from tests.conftest import load_recording
from tests.watch.made_runs import run

SITE = "train.py:31 in main"


def around(*ranks: int) -> list[WatchAround]:
    return [
        WatchAround(1, r, SITE if r == min(ranks) else f"train.py:{40 + r} in main") for r in ranks
    ]


def said(rec) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    return dict(findings(rec))


def test_every_ranks_forward_around_ddp_is_said_with_the_line_and_the_fix() -> None:
    rec = run(*around(2, 0, 1), WatchSummary(1, 0))  # in the order they came
    assert said(rec) == {
        "around": [
            "✗ around DDP: every rank computed gradients without a forward through DDP "
            f"(backward at {SITE}): a forward through model.module(x), or through the model DDP "
            "wrapped, leaves DDP unprepared for the backward, so it averages nothing and each "
            "rank trains on its own gradients; call the DDP model itself: model(x)"
        ]
    }
    assert verdict(rec) == (
        "ddp-viz verdict: DDP averaged no gradient: every rank ran the forward around DDP "
        f"(backward at {SITE}); call the DDP model itself"
    )


@pytest.mark.parametrize(
    ("ranks", "who", "world"),
    [
        ((2,), "rank 2", 3),
        ((1, 2), "ranks 1, 2", 3),
        ((0,), "rank 0", 1),
        ((0, 1, 2), "ranks 0–2", 4),
    ],
)
def test_the_ranks_that_went_around_are_named_by_the_lowest_ones_line(ranks, who, world) -> None:  # type: ignore[no-untyped-def]
    rec = run(*around(*ranks), WatchSummary(1, 0), world=world)
    assert said(rec)["around"][0].startswith(f"✗ around DDP: {who} computed gradients ")
    assert f"(backward at {SITE})" in said(rec)["around"][0]
    assert verdict(rec).startswith(f"ddp-viz verdict: DDP averaged no gradient: {who} ran ")


def test_twin_a_run_without_it_says_nothing_of_it() -> None:
    rec = run(WatchSummary(1, 0))
    assert "around" not in said(rec)
    assert "around" not in verdict(rec)


def test_a_crash_stays_the_verdict_and_the_forward_around_ddp_is_said_beside_it() -> None:
    crash = WatchFailure(1, 2, 3, 5.0, "ValueError", "bad batch", "train.py:12 in load")
    rec = run(*around(0, 1, 2), crash, WatchSummary(1, 1))
    assert list(said(rec)) == ["crash", "around"]
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause: ValueError")


def never(*ranks: int, backwards: int = 6) -> list[WatchNeverSynced]:
    return [WatchNeverSynced(1, r, backwards - r, f"train.py:{9 + r} in main") for r in ranks]


def test_no_sync_left_on_for_every_backward_is_said_with_its_line() -> None:
    rec = run(*never(1, 0, 2), WatchSummary(1, 0))
    assert said(rec) == {
        "never_synced": [
            "✗ never averaged: every rank ran every backward (6 on a rank) after a forward inside "
            "model.no_sync() (first at train.py:9 in main), so DDP all-reduced none and each rank "
            "trained on its own gradients: no_sync() is for all but the last micro-step of an "
            "accumulation; run that one outside it"
        ]
    }
    assert verdict(rec) == (
        "ddp-viz verdict: DDP averaged no gradient: every rank ran every backward inside "
        "model.no_sync() (first at train.py:9 in main)"
    )
    assert verdict(run(*never(2), WatchSummary(1, 0))).startswith(
        "ddp-viz verdict: DDP averaged no gradient: rank 2 ran every backward "
    )


def test_twin_a_rank_that_failed_mid_accumulation_is_the_crash_alone() -> None:
    """Its first micro-steps ran inside no_sync(), as they should; it failed before its sync."""
    crash = WatchFailure(1, 1, 0, 5.0, "ValueError", "bad batch", "train.py:12 in load")
    rec = run(*never(1, backwards=2), crash, WatchSummary(1, 1))
    assert list(said(rec)) == ["crash"]
    assert verdict(rec).startswith("ddp-viz verdict: rank 1 is the root cause: ValueError")


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (around(0, 1), "its forwards went around DDP (above)."),
        (never(0, 1), "DDP all-reduced none of its backwards (above)."),
        ([], "its ranks ended before their first forward."),
    ],
)
def test_the_page_of_a_run_with_no_step_says_why(extra: list, words: str) -> None:
    """The page's line under the ranks' table, once the run ended with no step to show."""
    from tests.watch.test_watch_page import MANY, frame

    events = [e for e in load_recording(MANY) if e.kind in ("run_started", "watched_rank")]
    _, f = frame(0, events=[*events, *extra, protocol.RunFinished(1, 0, 30.0)])
    said = f.text_with_key("before_first_step").text
    assert said == "No step of your script reached ddp-viz: " + words
