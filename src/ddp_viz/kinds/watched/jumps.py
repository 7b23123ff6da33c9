"""Where a diagnosis on the watched page leads (pure): the step it names, to put on the stage,
and the rank whose stack (its frames in the user's code, ddp-viz's left out by the rank's
hook) tells where it was. The page makes each finding a link (``scene``); the window's Qt
part (``qt/diagnosis_tab``) moves the stage and shows the words this module writes.

A crash goes to the step the first failure was in and its rank's stack; a hang to the rank
the others wait for (or the one in no communication) and its stack as the hang found it; an
uneven end to the rank that entered a step alone, with the course's lesson on it; a
non-finite value and a desync to their first step and rank (a value, not an exception: no
stack).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddp_viz.kinds.watched import apart, attempts, threads
from ddp_viz.kinds.watched import failures as fail
from ddp_viz.kinds.watched.checks import doctoring, findings, rank_ends, uneven_end
from ddp_viz.kinds.watched.doctor import missing
from ddp_viz.kinds.watched.events import StuckRank, WatchHang
from ddp_viz.model.timeline import RunRecord


@dataclass(frozen=True)
class Jump:
    """One finding's destination."""

    key: str  # the finding's key on the page and in the report: "crash", "hang0", "uneven", …
    said: list[str]  # the finding's words, as the page says them
    step: int | None = None  # the step it happened in, from 0 (None: before any step)
    rank: int | None = None  # the rank it names
    stack: list[str] = field(default_factory=list)  # that rank's frames, innermost last
    no_stack: str = ""  # why there is none, when there is none
    lesson: str = ""  # the course's lesson on it


def _index(steps_begun: int) -> int | None:
    """A rank's count of steps begun (3: in its third step) as the page's step index."""
    return steps_begun - 1 if steps_begun >= 1 else None


def _crash(rec: RunRecord, key: str, said: list[str]) -> Jump:
    first = fail.cause(rank_ends(rec))
    assert first is not None  # the finding is there
    if first.failure is not None:
        f = first.failure
        gone = "" if f.stack else "its hook found no frame of your code"
        return Jump(key, said, _index(f.step), f.rank, list(f.stack), gone)
    steps = first.waited or first.step
    why = f"rank {first.rank} left no word of its own ({first.end.value}): no stack"
    return Jump(key, said, _index(steps), first.rank, no_stack=why)


def _hang_rank(h: WatchHang) -> StuckRank:
    """The rank a hang is about: one the others wait for, else one in no communication,
    else the first."""
    _call, absent = missing(h)
    places = {s["rank"]: s for s in h.ranks}
    if absent:
        return places[absent[0]]
    outside = [s for s in h.ranks if s["state"] == "outside"]
    return outside[-1] if outside else h.ranks[0]


def _hang(h: WatchHang, key: str, said: list[str]) -> Jump:
    s = _hang_rank(h)
    stack = list(s.get("stack") or [])
    why = "" if stack else f"rank {s['rank']} sent no stack ({s['state']})"
    return Jump(key, said, _index(s.get("step", 0)), s["rank"], stack, why)


def _uneven(rec: RunRecord, key: str, said: list[str]) -> Jump:
    found = uneven_end(rec)
    assert found is not None  # the finding is there
    d = doctoring(rec)
    stack = next((list(f.stack) for f in d.failures if f.rank == found.rank), [])
    for h in d.hangs[:1]:
        stack = stack or next(
            (list(s.get("stack") or []) for s in h.ranks if s["rank"] == found.rank), []
        )
    why = "" if stack else f"rank {found.rank} sent no stack"
    return Jump(
        key, said, _index(found.entered), found.rank, stack, why, lesson=apart.UNEVEN_LESSON
    )


def jumps(rec: RunRecord) -> dict[str, Jump]:
    """Every finding of the page that leads somewhere, by its key: the last attempt's (an
    earlier attempt's steps were counted again by the processes that followed it)."""
    rec = attempts.last(rec)
    d = doctoring(rec)
    out: dict[str, Jump] = {}
    for key, said in findings(rec, stacks=False):
        lines = [line.strip() for line in said]
        if key == "uneven":
            out[key] = _uneven(rec, key, lines)
        elif key == "crash":
            out[key] = _crash(rec, key, lines)
        elif key.startswith("hang"):
            out[key] = _hang(d.hangs[int(key.removeprefix("hang"))], key, lines)
        elif key == "thread":  # the first thread's error: its rank, its step, its frames
            f = threads.first_each(d.threads)[0]
            gone = "" if f.stack else "its hook found no frame of your code"
            out[key] = Jump(key, lines, _index(f.step), f.rank, list(f.stack), gone)
        elif key == "non_finite":
            e = min(d.non_finite, key=lambda e: (e.step, e.rank))
            out[key] = Jump(key, lines, e.step, e.rank, no_stack="a value, not an exception")
        elif key == "desync" and d.desync is not None:
            first = min(r for rs in d.desync.tensors.values() for r in rs)
            out[key] = Jump(key, lines, d.desync.step, first, no_stack="a value, not an exception")
    return out


def shown_step(j: Jump, available: int) -> int | None:
    """The step the stage can show for ``j``: its own, or the last step every rank reported
    (a crash's step never completes)."""
    if j.step is None or available < 1:
        return None
    return min(j.step, available - 1)


def link_hint(j: Jump) -> str:
    """What a click on the finding does, in a few words (the page's hint, the tooltip)."""
    where = f"step {j.step + 1}" if j.step is not None else "the first step"
    who = f" and rank {j.rank}'s stack" if j.rank is not None and j.stack else ""
    if j.rank is not None and not j.stack:
        who = f", rank {j.rank}"
    return f"{where}{who}"


def jump_text(j: Jump, available: int) -> list[str]:
    """The Diagnosis tab's words: the step shown, the rank's stack (first: on a projector's
    short column the stack is what the stage does not show), then the finding in full."""
    out: list[str] = []
    shown = shown_step(j, available)
    if j.step is not None:
        out += [f"Step {j.step + 1}" + (f", rank {j.rank}" if j.rank is not None else "")]
        if shown is not None and shown != j.step:
            out[-1] += (
                f": the stage shows step {shown + 1}, the last every rank reported (step "
                f"{j.step + 1} never completed)"
            )
        out.append("")
    if j.rank is not None:
        out += [f"rank {j.rank}'s stack, innermost last (ddp-viz's frames left out):"]
        out += [f"  {frame}" for frame in j.stack] or [f"  none: {j.no_stack}"]
        out.append("")
    return [*out, "The diagnosis:", *(f"  {line}" for line in j.said)]
