"""A forward that went around DDP (pure: fake events). ``model.module(x)`` trains each rank on
its own gradients with no error; the watch saw no step and its report said nothing at all."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched.checks import findings, verdict
from ddp_viz.kinds.watched.events import WatchAround, WatchFailure, WatchSummary
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
