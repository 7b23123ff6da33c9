"""What a kind declares so the conformance suite can turn each of its verdicts ✗: a real
recording on which the verdict holds, a pure change to its events that must break it (one rank's
value nudged, one byte count off, one rank late), and how the verdict reads in the scene, the
report and the status line. Each kind's declarations live in ``tests/kinds/<kind>/verdicts.py``
as ``VERDICTS`` (and ``NUMBERS``: numbers on the stage and the value the test computes for them
from the raw events).

The perturbations work on decoded events (dataclasses): a copy with one field replaced, never
the recording file itself.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ddp_viz.model.event_base import Event
from ddp_viz.model.timeline import Cursor, RunRecord

Events = list[Event]
Perturb = Callable[[Events], Events]
Pick = Callable[[Event], bool]


@dataclass(frozen=True)
class Said:
    """How a verdict reads in one place: a regex that matches when it holds, one that matches
    when it fails (each must match on its side and not on the other). ``key``: read only the
    scene's text of that key (the verdict of one row among several alike)."""

    ok: str
    bad: str
    key: str = ""


# where the scene shows a verdict: a cursor in the record (default: the last complete step's
# last phase), read at the end of its animation
At = Callable[[RunRecord], Cursor]
# a report of the kind's own, when its verdict is not in ``ddp-viz report``'s text
Report = Callable[[RunRecord], str]


def last_step(phase: int = 3) -> At:
    return lambda rec: Cursor(max(0, rec.complete_prefix() - 1), phase)


def at(step: int, phase: int) -> At:
    return lambda rec: Cursor(step, phase)


LAST = last_step()


@dataclass(frozen=True)
class Verdict:
    """One ✓/✗ a kind shows, and a change to a real recording that must turn it ✗.

    ``scene``/``report``/``status``: how it reads on the stage, in the run's report and in the
    status line; None where it is not said, and ``absent`` says why (a verdict said nowhere
    cannot be declared)."""

    name: str
    recording: str
    perturb: Perturb
    scene: Said | None = None
    report: Said | None = None
    status: Said | None = None
    at: At = LAST
    report_of: Report | None = None
    absent: str = ""
    # a change made to both sides first (events the recording lacks, added as a healthy run
    # sends them), so that the ✓ side exercises the check too
    base: Perturb | None = None
    # a change the verdict must survive: a value moved within the tolerance, one rank alone
    # doing what the ✗ needs every rank to do (a check made stricter, or an ``any`` for an
    # ``all``, turns it ✗)
    keeps: Perturb | None = None

    def places(self) -> list[tuple[str, Said]]:
        out = [("scene", self.scene), ("report", self.report), ("status", self.status)]
        return [(where, said) for where, said in out if said is not None]


@dataclass(frozen=True)
class Number:
    """A number the stage shows under ``key`` at ``at``, and its value computed by the test
    from the raw events (independently of the kind's code). ``perturb``: a change after which
    the number must follow the raw events (a byte count off, a loss moved)."""

    name: str
    recording: str
    key: str
    expected: Callable[[Events], float]
    at: At = LAST
    perturb: Perturb | None = None
    rel: float = 1e-9
    # the number as the text shows it, when the text carries no value: its digits' pattern
    pattern: str = ""


# --- perturbations ------------------------------------------------------------------------------
def changed(pick: Pick, make: Callable[[Event], dict[str, object]]) -> Perturb:
    """A copy with the first event ``pick`` accepts changed to ``make(event)``'s fields."""

    def run(events: Events) -> Events:
        out, done = [], False
        for e in events:
            if not done and pick(e):
                e, done = dataclasses.replace(e, **make(e)), True
            out.append(e)
        assert done, "the perturbation found no event to change"
        return out

    return run


def every(pick: Pick, make: Callable[[Event], dict[str, object]]) -> Perturb:
    """A copy with every event ``pick`` accepts changed to ``make(event)``'s fields."""

    def run(events: Events) -> Events:
        hits = [e for e in events if pick(e)]
        assert hits, "the perturbation found no event to change"
        return [dataclasses.replace(e, **make(e)) if pick(e) else e for e in events]

    return run


def dropped(pick: Pick) -> Perturb:
    def run(events: Events) -> Events:
        out = [e for e in events if not pick(e)]
        assert len(out) < len(events), "the perturbation found no event to drop"
        return out

    return run


def inserted(before: Pick, make: Callable[[Events], Events]) -> Perturb:
    """A copy with ``make(events)``'s events put before the first event ``before`` accepts."""

    def run(events: Events) -> Events:
        at = next(i for i, e in enumerate(events) if before(e))
        return [*events[:at], *make(events), *events[at:]]

    return run


def both(*changes: Perturb) -> Perturb:
    def run(events: Events) -> Events:
        for change in changes:
            events = change(events)
        return events

    return run


def event(kind: str, **fields: object) -> Pick:
    """Events of ``kind`` whose fields equal ``fields`` (rank=2, step=1 …)."""
    return lambda e: e.kind == kind and all(getattr(e, k, None) == v for k, v in fields.items())


def nudge_tensor(values: object, by: float) -> object:
    """A tensor moved by ``by`` relative (absolute below 1): a list's first value; a summary's
    sample, norm and digest (a summary compares by digest, else by norm)."""
    if isinstance(values, dict):
        out = dict(values)
        out["norm"] = float(out["norm"]) * (1 + by)
        if out.get("sample"):
            out["sample"] = [out["sample"][0] + by * max(1.0, abs(out["sample"][0]))]
            out["sample"] += list(values["sample"][1:])
        if out.get("digest"):
            out["digest"] = "0" * len(str(out["digest"]))
        return out
    assert isinstance(values, Sequence)
    first = float(values[0])
    return [first + by * max(1.0, abs(first)), *values[1:]]


def nudged(field: str, by: float, name: str | None = None) -> Callable[[Event], dict]:
    """The change that moves one tensor (``name``, else the first) of a ``field`` of tensors."""

    def make(e: Event) -> dict[str, object]:
        table = dict(getattr(e, field))
        key = name if name is not None else next(iter(table))
        table[key] = nudge_tensor(table[key], by)
        return {field: table}

    return make


def moved(field: str, to: Callable[[object], object]) -> Callable[[Event], dict]:
    return lambda e: {field: to(getattr(e, field))}


def close(a: float, b: float, rel: float) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=rel)
