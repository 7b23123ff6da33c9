"""The ``[collective]`` table's rules at their edges, and the record of what the ranks reported:
which steps every rank has finished, whether each hand-made all-reduce equals dist.all_reduce
(on every rank, value for value), and the buffers folded step by step (pure, no torch)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ddp_viz.kinds.collective.events import (
    CollectiveInput,
    CollectiveResult,
    CollectiveTiming,
    NaiveStep,
    RingStep,
)
from ddp_viz.kinds.collective.model import (
    MAX_LENGTH,
    CollectiveRecord,
    CollectiveSpec,
    ring_state,
    ring_steps,
)
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

FOUR = "ring-4-ranks.jsonl"


def error_of(data: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as err:
        CollectiveSpec.from_mapping(data)
    return err.value


def test_every_key_is_read_and_kept() -> None:
    spec = CollectiveSpec.from_mapping({"length": 12, "seed": 7, "sweep": [5, 50.0], "repeats": 4})
    assert spec == CollectiveSpec(12, 7, (5, 50), 4)
    assert spec.to_dict() == {"length": 12, "seed": 7, "sweep": [5, 50], "repeats": 4}
    assert CollectiveSpec.from_mapping({}) == CollectiveSpec()
    assert CollectiveSpec().to_dict() == {
        "length": 8,
        "seed": 0,
        "sweep": [1_000, 10_000, 100_000, 1_000_000],
        "repeats": 3,
    }
    assert CollectiveSpec.trains is False


@pytest.mark.parametrize(
    ("data", "ok"),
    [
        ({"length": 1}, True),
        ({"length": MAX_LENGTH}, True),
        ({"length": MAX_LENGTH + 1}, False),
        ({"seed": 0}, True),
        ({"seed": 2**31 - 1}, True),
        ({"seed": 2**31}, False),
        ({"seed": -1}, False),
        ({"repeats": 1}, True),
        ({"repeats": 20}, True),
        ({"repeats": 21}, False),
        ({"repeats": 0}, False),
        ({"sweep": [1] * 8}, True),
        ({"sweep": [MAX_LENGTH]}, True),
        ({"sweep": [MAX_LENGTH + 1]}, False),
        ({"sweep": [0]}, False),
    ],
)
def test_the_bounds_are_inclusive(data: dict, ok: bool) -> None:
    key, value = next(iter(data.items()))
    if ok:
        got = CollectiveSpec.from_mapping(data).to_dict()[key]
        assert got == (list(value) if key == "sweep" else value)
    else:
        field = f"collective.{key}" + ("[0]" if key == "sweep" else "")
        assert error_of(data).field == field


def test_a_sweep_must_be_a_list_of_up_to_eight() -> None:
    for bad in ([1] * 9, 1000, "1000"):
        err = error_of({"sweep": bad})
        assert err.field == "collective.sweep"
        assert err.message == "must be a list of up to 8 lengths"
    assert error_of({"sweep": [3, 4, 0]}).field == "collective.sweep[2]"
    assert CollectiveSpec.from_mapping({"sweep": (3, 4)}).sweep == (3, 4)


def test_the_vector_needs_a_value_for_every_rank() -> None:
    CollectiveSpec(length=4).check(4)  # one value a chunk is enough
    with pytest.raises(ScenarioError) as err:
        CollectiveSpec(length=3).check(4)
    assert err.value.field == "collective.length"
    assert err.value.message == (
        "4 ranks cut the vector into 4 chunks: it needs at least 4 values, got 3"
    )


def test_the_ring_steps_are_the_runs_and_say_so() -> None:
    spec = CollectiveSpec()
    assert [spec.fixed_steps(w) for w in (1, 2, 3, 8)] == [1, 2, 4, 14]
    s = Scenario.from_mapping({"world_size": 3, "collective": {"length": 3}})
    spec.check_scenario(s)
    with pytest.raises(ScenarioError) as err:
        spec.check_scenario(SimpleNamespace(world_size=3, steps=5))
    assert err.value.field == "steps"
    assert err.value.message == "a ring all-reduce over 3 ranks takes 4 steps; leave steps out"
    with pytest.raises(ScenarioError) as err:
        spec.check_scenario(SimpleNamespace(world_size=1, steps=1))
    assert (err.value.field, err.value.message) == (
        "world_size",
        "an all-reduce needs at least 2 ranks",
    )
    with pytest.raises(ScenarioError) as err:
        CollectiveSpec(length=2).check_scenario(s)
    CollectiveSpec(length=2).check_scenario(SimpleNamespace(world_size=2, steps=2))
    assert err.value.field == "collective.length"


def ring(step: int, rank: int, **kw) -> RingStep:
    base = dict(
        run=1,
        step=step,
        rank=rank,
        phase="reduce_scatter",
        sent=0,
        to=0,
        received=0,
        source=0,
        bytes_sent=4,
        bytes_received=4,
        chunk=[0.0],
        started=0.0,
        finished=1.0,
    )
    return RingStep(**{**base, **kw})


def result(algo: str, rank: int, values=(6.0, 8.0), equal: bool = True) -> CollectiveResult:
    return CollectiveResult(1, rank, algo, list(values), equal, 8, 8, 0.1)


def test_a_step_counts_once_every_rank_has_reported_it_in_order() -> None:
    col = CollectiveRecord()
    assert col.complete_steps(3) == 0
    for r in range(3):
        col.apply(ring(0, r))
    col.apply(ring(1, 0))
    col.apply(ring(1, 1))
    assert col.complete_steps(3) == 1  # rank 2 of step 2 still missing
    col.apply(ring(2, 0))
    col.apply(ring(2, 1))
    col.apply(ring(2, 2))
    assert col.complete_steps(3) == 1  # a later step does not fill the gap
    col.apply(ring(1, 2))
    assert col.complete_steps(3) == 3 and col.complete_steps(2) == 0


def test_each_kind_of_event_is_filed_under_its_own_key() -> None:
    col = CollectiveRecord()
    inp = CollectiveInput(1, 2, [1.0, 2.0], [[0, 1], [1, 2]])
    naive = NaiveStep(1, 1, 2, [0], [0], 8, 8, 0.0, 1.0)
    timing = CollectiveTiming(1, "ring", 1000, 0.5)
    step = ring(3, 2)
    res = result("naive", 2)
    for e in (inp, naive, timing, step, res):
        col.apply(e)
    assert col.inputs == {2: inp}
    assert col.naive == {1: {2: naive}}
    assert col.steps == {3: {2: step}}
    assert col.results == {("naive", 2): res}
    assert col.timings == [timing]
    col.add(timing)  # only apply keeps the timings
    assert col.timings == [timing]


def test_agreement_needs_both_algorithms_on_every_rank_value_for_value() -> None:
    col = CollectiveRecord()
    for r in range(3):
        for algo in ("naive", "ring", "all_reduce"):
            col.apply(result(algo, r))
    assert col.agree(3) is True
    assert col.equal("ring", 2) is True
    # the last rank's ring result said equal, but its values are not dist.all_reduce's
    col.apply(result("ring", 2, values=(6.0, 9.0)))
    assert col.equal("ring", 2) is False and col.equal("naive", 2) is True
    assert col.agree(3) is False and col.agree(2) is True
    # the engine's own verdict counts too
    col.apply(result("ring", 2))
    col.apply(result("naive", 2, equal=False))
    assert col.agree(3) is False
    # a missing result: not known yet, whichever rank it is
    col.apply(result("naive", 2))
    del col.results[("naive", 2)]
    assert col.agree(3) is None and col.equal("naive", 2) is None
    assert col.agree(2) is True
    # no reference to compare with: the engine's word alone
    del col.results[("all_reduce", 1)]
    assert col.equal("ring", 1) is True


def test_the_buffers_fold_the_reported_chunks_and_count_the_ranks_they_sum() -> None:
    rec = record(load_recording(FOUR))
    col, world = rec.parts["collective"], rec.world_size
    assert ring_state(CollectiveRecord(inputs=dict(list(col.inputs.items())[:3])), 4, 0) is None
    before = ring_state(col, world, -1)
    for r in range(world):
        values = col.inputs[r].values
        assert before.values[r] == [values[a:b] for a, b in col.inputs[r].chunks]
        assert before.sums[r] == [1] * world
    # after the first step each rank's received chunk is what it reported, summing two
    after = ring_state(col, world, 0)
    for r, move in col.steps[0].items():
        assert after.values[r][move.received] == move.chunk
        assert after.sums[r][move.received] == 2
        assert sum(after.sums[r]) == world + 1
    # the last reduce-scatter step: the received chunk sums every rank; all-gather copies it
    end = ring_state(col, world, world - 2)
    for r, move in col.steps[world - 2].items():
        assert end.sums[r][move.received] == world
    done = ring_state(col, world, ring_steps(world) - 1)
    assert done.sums == [[world] * world for _ in range(world)]
