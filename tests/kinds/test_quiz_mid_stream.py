"""Every quiz quantity of every kind, asked while its run is still arriving (pure: recorded
events, no Qt, no torch).

A learner locks a guess and the run streams in: the session reads the question's value as
events arrive, and grades it as soon as the value is there. So a value, once a quantity gives
one, must be the run's final value: one taken while a rank of that step was still missing
(the first two of three ranks agree, the third does not), or from a step's first events before
its last, or cached from an earlier read, grades the guess against the wrong number. Each
kind's recordings are replayed in the order their events arrived, and after every event every
quantity is read at every step and rank, and compared with its value in the whole run.
"""

from __future__ import annotations

from functools import cache

import pytest

from ddp_viz.model import registry
from ddp_viz.model.course import load_course
from ddp_viz.model.quiz import Quantity
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import recordings

CORE = ("loss", "local", "averaged", "params", "buckets", "rows", "steps_done")


@cache
def asked_params() -> dict[str, tuple[str, ...]]:
    """The params the course's questions ask each quantity about."""
    out: dict[str, set[str]] = {}
    for lesson in load_course():
        for q in lesson.questions:
            if q.quantity is not None and q.quantity.param:
                out.setdefault(q.quantity.what, set()).add(q.quantity.param)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def questions(kind_id: str, full: RunRecord) -> list[Quantity]:
    """Every quantity of the kind (the core's for DDP training) at every step and rank."""
    kind = registry.get(kind_id)
    names = list(kind.quantities) or (list(CORE) if kind.default else [])
    out = []
    for name in names:
        source = kind.quantities.get(name)
        if source is not None and source.needs_param:
            params = asked_params().get(name, ())
        elif name in ("local", "averaged", "params"):
            params = tuple(full.param_names[:2])
        else:
            params = ("",)
        for param in params:
            for step in range(1, max(len(full.steps), full.complete_prefix()) + 1):
                for rank in range(full.world_size):
                    out.append(Quantity(what=name, param=param, step=step, rank=rank))
    return out


KINDS = [kind.id for kind in registry.kinds() if kind.quantities or kind.default]


def replay(
    events: list, asked: list[Quantity], final: dict[Quantity, float | None]
) -> tuple[int, int]:
    """Feed ``events`` one by one, reading every question after each, each answer checked
    against ``final``: how many answers came before the last event, and in all."""
    growing = RunRecord()
    early = answers = 0
    for i, event in enumerate(events):
        growing.apply(event)
        for q in asked:
            got = q.read(growing)
            if got is None:
                continue
            assert got == final[q] or (got != got and final[q] != final[q]), (
                f"{q.what}[{q.param}] at step {q.step}, rank {q.rank}, after event {i} "
                f"({event.kind}): {got}, the whole run {final[q]}"
            )
            early += i < len(events) - 1
            answers += 1
    return early, answers


@pytest.mark.parametrize("kind_id", KINDS)
def test_a_quantity_never_answers_with_a_value_the_run_later_changes(kind_id: str) -> None:
    early = answers = 0
    for name in recordings()[kind_id]:
        events = load_recording(name)
        full = record(events)
        asked = questions(kind_id, full)
        final = {q: q.read(full) for q in asked}
        try:
            e, a = replay(events, asked, final)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
        early, answers = early + e, answers + a
    # the test can tell: some value of the kind is there before its run's last event (or,
    # for a value only the run's end says, the rank a debugging tool named, at its end)
    sources = registry.get(kind_id).quantities.values()
    at_end_only = bool(sources) and all(s.at_end for s in sources)
    assert answers > 0 and (early > 0 or at_end_only)
