"""The doctor's findings in words, and the chance behind the straggler verdict (pure): the
numbers a line says are computed here from what was fed in, and the chance from the binomial
distribution written out with exact integers (math.comb), not from the code under test."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from ddp_viz.kinds.watched.checks import MAX_NAMES, Desync, desync_text, non_finite_text
from ddp_viz.kinds.watched.events import WatchNonFinite
from ddp_viz.kinds.watched.steps import Straggler
from ddp_viz.kinds.watched.straggler import beyond_chance, chance_of_last, straggler_text
from tests.watch.test_watch_straggler_rule import watched


def exact_chance(k: int, n: int, world: int) -> float:
    p = Fraction(1, world)
    tail = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))
    return float(min(Fraction(1), world * tail))


@pytest.mark.parametrize(("k", "n", "world"), [(3, 5, 8), (15, 20, 2), (16, 20, 8), (40, 60, 4)])
def test_the_chance_some_rank_is_last_that_often_is_the_binomial_tail(k, n, world) -> None:
    assert chance_of_last(k, n, world) == pytest.approx(exact_chance(k, n, world), rel=1e-9)


def test_the_chance_is_a_probability_however_many_ranks() -> None:
    assert chance_of_last(0, 5, 4) == 1.0  # 4 × 1 by the bound, and a chance is at most 1


def test_between_the_two_chances_the_wait_decides() -> None:
    """Last in 15 of 20 steps of 2 ranks: 4% by chance, so it takes a wait at least twice the
    other rank's (averaged over the steps it was last in)."""
    assert 0.01 < exact_chance(15, 20, 2) <= 0.05
    them = [Straggler(0, 5, 0.1)]
    assert beyond_chance([Straggler(1, 15, 0.2), *them], 20, 2)  # exactly twice
    assert beyond_chance([Straggler(1, 15, 0.25), *them], 20, 2)
    assert not beyond_chance([Straggler(1, 15, 0.19), *them], 20, 2)
    # their wait is per step they were last in: two ranks of 4 and 1 steps
    mixed = [Straggler(0, 4, 0.1), Straggler(2, 1, 0.1)]
    assert beyond_chance([Straggler(1, 15, 0.2), *mixed], 20, 3) == (
        exact_chance(15, 20, 3) <= 0.05
    )


def test_the_straggler_line_says_the_mean_wait_and_the_total() -> None:
    waits = [0.2, 0.4, 0.3, 0.2, 0.4, 0.3, 0.2, 0.4, 0.3, 0.2]
    said = straggler_text(watched([{1: w} for w in waits], 2, step_s=2.0))
    counted = waits[1:]  # the first step is left out: one-off costs
    mean = sum(counted) / len(counted)
    assert said == (
        f"✗ straggler: rank 1 was the last to reach the all-reduce in {len(counted)} of "
        f"{len(counted)} steps; the others waited {mean * 1e3:.1f} ms for it on average "
        f"({sum(counted):.2f} s in all)"
    )


def test_the_straggler_line_waits_for_four_steps_and_calls_from_eight() -> None:
    def said(steps: int) -> str | None:  # steps counted: one more is fed, the first left out
        return straggler_text(watched([{1: 0.05}] * (steps + 1), 2, step_s=0.3))

    assert said(3) is None
    assert (said(4) or "").startswith("no straggler yet: rank 1 was the last")
    assert (said(7) or "").startswith("no straggler yet: ")
    assert (said(8) or "").startswith("✗ straggler: rank 1 ")


def test_a_non_finite_line_names_the_loss_and_at_most_six_tensors() -> None:
    names = [f"layer{i}.weight" for i in range(MAX_NAMES + 1)]
    e = WatchNonFinite(run=1, step=4, rank=2, loss=float("nan"), tensors=names)
    assert non_finite_text(e) == (
        "✗ non-finite: at step 5 on rank 2 (the first), its loss was nan; its local gradient "
        f"was not finite in {', '.join(names[:MAX_NAMES])} and 1 more"
    )
    e = WatchNonFinite(run=1, step=0, rank=1, loss=None, tensors=names[:MAX_NAMES])
    assert non_finite_text(e) == (
        "✗ non-finite: at step 1 on rank 1 (the first), its local gradient was not finite in "
        + ", ".join(names[:MAX_NAMES])
    )


def test_a_desync_line_names_every_rank_and_the_step_before_it_agreed() -> None:
    d = Desync(step=3, tensors={"bn.running_mean": [1, 2], "w": [2]}, agreed=2)
    assert desync_text(d) == (
        "✗ desync: entering step 4 (after step 3), rank 1, rank 2 held other bytes than rank 0 "
        "in bn.running_mean, w; identical entering step 3"
    )
    d = Desync(step=0, tensors={"w": [1]}, agreed=None)
    assert desync_text(d) == (
        "✗ desync: entering step 1 (after step 0), rank 1 held other bytes than rank 0 in w"
    )
