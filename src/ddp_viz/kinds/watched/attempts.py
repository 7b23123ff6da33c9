"""A watched command whose ranks started more than once: each start is an attempt of its own.

``torchrun --max-restarts N`` stops every worker when one fails and starts them all again in
new processes (``TORCHELASTIC_RESTART_COUNT`` counts the restarts). The watch sees each new
process join as the same rank with a new pid, and its steps count from 0 again. Read as one
run, the restarted ranks' steps and ends mixed with the first processes': a run that failed
once and then finished read "rank 2 is the root cause" over a command that exited 0.

So the doctor reads attempts apart: a rank's k-th process (by pid, in the order they joined)
belongs to attempt k, and so does every event that rank sends until its next process joins.
Each earlier attempt that failed is said in one finding of its own; the findings and the
verdict of the last attempt come as they would for a run of one attempt, and the verdict says
what the earlier ones ended with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ddp_viz.kinds.watched import checks, stalls
from ddp_viz.kinds.watched.events import WatchedRank
from ddp_viz.model.event_base import Event
from ddp_viz.model.protocol import RankStarted, RunStarted
from ddp_viz.model.timeline import RunRecord, record

PART = "watched.attempts"
PREFIX = "ddp-viz verdict: "
# what only the whole command says: its end, for the last attempt alone
_COMMAND_ENDS = ("watch_summary", "run_finished")
# gloo's words when a restarted attempt's ranks cannot build their mesh: on torch 2.13 they
# dial addresses the ranks before them left in torchrun's store ("Connection refused"), or
# wait for peers that dialled those ("Connect timeout [none]"): see :func:`stale_store`
_MESH = re.compile(r"connectFullMesh")
STALE_STORE = (
    "the restarted ranks could not connect: torchrun's agent keeps one store for every "
    "attempt, and gloo found there the addresses the ranks before them had written; keys "
    "under a prefix of the attempt's own (TORCHELASTIC_RESTART_COUNT) or "
    "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 give each attempt a store that starts empty"
)


@dataclass
class _Starts:
    """The processes each rank ran in, in the order they joined (a part of the record)."""

    pids: dict[int, list[int]] = field(default_factory=dict)  # rank -> its pids
    built: tuple[int, list[RunRecord]] | None = None  # (events read, the attempts' records)

    def apply(self, e: Event) -> None:
        if isinstance(e, WatchedRank):  # the listener sends one as each process joins
            seen = self.pids.setdefault(e.rank, [])
            if e.pid not in seen:
                seen.append(e.pid)

    @property
    def count(self) -> int:
        return max([1, *(len(p) for p in self.pids.values())])


def _starts(rec: RunRecord) -> _Starts:
    part = rec.parts.get(PART)
    if not isinstance(part, _Starts):  # first asked: read what came so far, then fold the rest
        part = _Starts()
        for e in rec.events:
            part.apply(e)
        rec.parts[PART] = part
    return part


def split(events: list[Event]) -> list[list[Event]]:
    """``events`` by attempt: the run's start in each, the command's end in the last."""
    attempt_of: dict[int, int] = {}  # pid -> attempt
    order: dict[int, list[int]] = {}  # rank -> its pids, as they joined
    for e in events:
        if isinstance(e, WatchedRank) and e.pid not in attempt_of:
            order.setdefault(e.rank, []).append(e.pid)
            attempt_of[e.pid] = len(order[e.rank]) - 1
    count = max([1, *(len(p) for p in order.values())])
    out: list[list[Event]] = [[] for _ in range(count)]
    current: dict[int, int] = {}  # rank -> the attempt its latest process is in
    for e in events:
        if isinstance(e, RunStarted):
            for part in out:
                part.append(e)
            continue
        rank, pid = getattr(e, "rank", None), getattr(e, "pid", None)
        if pid in attempt_of:  # a process's own word, or the launcher's about it
            k = attempt_of[pid]
            if isinstance(e, WatchedRank):
                current[e.rank] = k
        elif e.kind in _COMMAND_ENDS:
            k = count - 1
        elif isinstance(rank, int):
            k = current.get(rank, 0)
        else:  # the listener's own word (a hang): about the latest processes
            k = max([0, *current.values()])
        out[k].append(e)
    return out


def records(rec: RunRecord) -> list[RunRecord]:
    """One record per attempt; ``[rec]`` itself when the ranks started once. Split once per
    attempt that began; the events after that go to their attempt's record as they come (the
    watch asks at every step's digests, and splitting the whole run each time was quadratic)."""
    starts = _starts(rec)
    if starts.count < 2:
        return [rec]
    built = starts.built
    if built is None or len(built[1]) != starts.count:
        built = starts.built = (len(rec.events), [record(part) for part in split(rec.events)])
    subs = built[1]
    for e in rec.events[built[0] :]:
        k = _attempt(starts, e, len(subs))
        if k >= len(subs):  # a new process not joined yet: split again when it has
            break
        for sub in subs if isinstance(e, RunStarted) else [subs[k]]:
            sub.apply(e)
        built = (built[0] + 1, subs)
    starts.built = built
    return subs


def _attempt(starts: _Starts, e: Event, count: int) -> int:
    """The attempt of an event that came after the split (see :func:`split`)."""
    rank, pid = getattr(e, "rank", None), getattr(e, "pid", None)
    for pids in starts.pids.values():
        if pid in pids:
            return pids.index(pid)
    if e.kind in _COMMAND_ENDS:
        return count - 1
    if isinstance(e, RankStarted):  # the process joins with the watched_rank that follows
        return len(starts.pids.get(e.rank, []))
    if isinstance(rank, int):
        return max(0, len(starts.pids.get(rank, [])) - 1)
    return max([0, *(len(p) - 1 for p in starts.pids.values())])


def last(rec: RunRecord) -> RunRecord:
    """The record of the latest attempt (``rec`` itself for a run that started once)."""
    return records(rec)[-1]


def _settled_findings(sub: RunRecord, stacks: bool) -> list[tuple[str, list[str]]]:
    """:func:`checks.findings` of ``sub`` without the hangs it got past, each said after them
    as the stall it was (see :mod:`.stalls`)."""
    settled, past = stalls.settled(sub)
    out = checks.findings(settled, stacks)
    return out + [(f"stall{i}", [stalls.stall_text(h)]) for i, h in enumerate(past)]


def _settled_verdict(sub: RunRecord) -> str:
    """:func:`checks.verdict` of ``sub`` as if the hangs it got past had not been named; a
    run found well says it had them."""
    settled, past = stalls.settled(sub)
    said = checks.verdict(settled)
    if past and said.startswith(PREFIX + "✓"):
        said += "; " + stalls.verdict_note(past)
    return said


def _attempt_finding(sub: RunRecord, k: int, of: int) -> list[str]:
    said = [line for _, lines in _settled_findings(sub, stacks=False) for line in lines]
    if not said:
        return []
    head = f"attempt {k} of {of}: {said[0].removeprefix('✗ ')}"
    started = "then every rank started again in a new process, as torchrun --max-restarts does"
    return [f"✗ {head}", *said[1:], started]


def findings(rec: RunRecord, stacks: bool = True) -> list[tuple[str, list[str]]]:
    """:func:`checks.findings`, attempt by attempt: each earlier attempt that failed in one
    finding (``attempt1``, …), then the last attempt's as for a run that started once."""
    subs = records(rec)
    if len(subs) == 1:
        return _settled_findings(rec, stacks)
    out = []
    for k, sub in enumerate(subs[:-1], 1):
        said = _attempt_finding(sub, k, len(subs))
        if said:
            out.append((f"attempt{k}", said))
    out += _settled_findings(subs[-1], stacks)
    if stale_store(subs[-1]):
        out.append(("stale_store", [STALE_STORE]))
    return out


def verdict(rec: RunRecord) -> str:
    """:func:`checks.verdict` of the last attempt, with what ended the earlier ones."""
    subs = records(rec)
    said = _settled_verdict(subs[-1])
    if len(subs) == 1:
        return said
    ended = []
    for k, sub in enumerate(subs[:-1], 1):
        if checks.findings(stalls.settled(sub)[0], stacks=False):
            ended.append(f"attempt {k} failed: {_settled_verdict(sub).removeprefix(PREFIX)}")
    if not ended:
        return said
    body, of = said.removeprefix(PREFIX), len(subs)
    if body.startswith("✓"):
        return f"{PREFIX}✓ attempt {of} of {of} ran to the end ({body[2:]}); " + "; ".join(ended)
    if stale_store(subs[-1]):  # no rank of the restart is a cause: the store is
        body = (
            f"attempt {of} of {of} failed before its first step: the restarted ranks could not "
            "connect, as torchrun's store still held the addresses of the ranks before them"
        )
        return f"{PREFIX}{body}; " + "; ".join(ended)
    return f"{PREFIX}{body} (in attempt {of} of {of}); " + "; ".join(ended)


def stale_store(sub: RunRecord) -> bool:
    """A restarted attempt whose ranks failed to build gloo's mesh before any step (gloo's
    "connectFullMesh failed", refused or timed out): on torch 2.13, what torchrun's shared
    store does to a restart unless each attempt's keys start empty. The first attempt
    connected over the same machines, so the network is not what changed."""
    d = checks.doctoring(sub)
    return any(f.step == 0 and _MESH.search(f.message) for f in d.raised)


def count(rec: RunRecord) -> int:
    """How many times the ranks started: 1 for a run that never restarted."""
    return _starts(rec).count
