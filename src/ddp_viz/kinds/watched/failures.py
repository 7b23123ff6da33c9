"""A crashed run, explained (pure): which rank failed first (the cause), what the others then
did (the consequences), DDP's own errors in words that name the parameter, and uneven ends.

The first failure is the earliest by the ranks' own reports (each rank's exception hook stamps
its clock, moved onto the listener's). A lost connection or a collective's timeout follows
from a peer gone or silent: of several ranks', never the cause, and when no rank failed
otherwise the report says so (:mod:`.secondhand`). A rank that left no word and whose launcher
says a signal killed it (torchrun's bookkeeping: ``WatchExit``) is named with the signal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum

from ddp_viz.kinds.watched.ddp_errors import ddp_error, model_culprit
from ddp_viz.kinds.watched.events import WatchExit, WatchFailure, WatchRankLost
from ddp_viz.kinds.watched.loader_errors import worker_error
from ddp_viz.kinds.watched.monitored import WORDS as MONITORED
from ddp_viz.kinds.watched.monitored import Absent, Late
from ddp_viz.kinds.watched.signals import OUTSIDE, signal_words

# what a rank raises when a peer is gone or silent: gloo's and the store's words
_PEER_GONE = re.compile(
    r"connection closed by peer|connection reset|broken pipe|socket timeout|timed out|"
    r"timeout|econnreset|peer closed|recvvalue|connection refused|nccl communicator was aborted",
    re.IGNORECASE,
)
NO_OWN = "no rank raised an error of its own"


class End(Enum):
    """How a rank's training ended, as the doctor reads it."""

    RAISED = "raised"  # its own exception hook reported it
    KILLED = "killed"  # a signal, by its launcher's word
    VANISHED = "vanished"  # no last word and no launcher's word: killed or crashed
    STOPPED = "stopped"  # torchrun's SIGTERM after another rank failed
    EXITED = "exited"  # its last word said, then a status other than 0 (sys.exit(3))
    LEFT = "left"  # its last word said, cleanly, while its peers still waited for it
    LATE = "late"  # named by a monitored barrier as not arrived; no other end seen


@dataclass(frozen=True)
class RankEnd:
    rank: int
    end: End
    at: float  # when (listener's clock; inf: not known)
    step: int  # steps begun
    failure: WatchFailure | None = None
    signal: str = ""
    peer_gone: bool = False  # its error says a peer went away (a consequence if any did)
    waited: int = 0  # the step (from 1) whose all-reduce the others waited in for it, if any
    status: int = 0  # its exit status, when it exited with one other than 0 (EXITED)
    model_odd: bool = False  # the ranks' words as DDP was built name its model as the odd one
    everyone: int = 0  # every one of this many ranks raised this same error at the same line
    # a monitored barrier named it as not arrived, or the others timed out waiting for it
    late: Late | Absent | None = None
    # the first failure, yet a lost peer or a timeout: no rank raised an error of its own
    secondhand: bool = False


def peer_gone(message: str) -> bool:
    """An error that follows from another rank's: a peer gone or silent, or a monitored
    barrier's (which names the ranks it waited for)."""
    return bool(_PEER_GONE.search(message) or MONITORED.search(message))


def rank_ends(
    failures: list[WatchFailure],
    lost: list[WatchRankLost],
    exits: list[WatchExit],
    exit_code: int | None,
    finished: dict[int, int] | None = None,
    made: int = 0,
) -> list[RankEnd]:
    """Each rank that did not end cleanly, earliest first. A lost rank whose launcher says it
    exited with 0 (or whose whole command did) ended cleanly and is not listed; a rank that
    sent its last word (``finished``: rank -> steps begun) but exited with another status
    without raising (``sys.exit(3)``) is. ``made``: the steps whose all-reduce a rank saw
    finish, which every rank then joined (a lost rank's last beat may be older)."""
    by_rank: dict[int, RankEnd] = {}
    for f in failures:
        if f.rank not in by_rank:
            by_rank[f.rank] = RankEnd(f.rank, End.RAISED, f.at, f.step, f, "", peer_gone(f.message))
    signals = {e.rank: e for e in exits if e.exitcode != 0}
    waits = _waits(failures, lost, made)
    for e in lost:
        if e.rank in by_rank:
            continue
        ex = signals.get(e.rank)
        if ex is None and exit_code == 0:
            continue  # the command exited with 0: so did every rank
        step = max(e.step, made)
        if ex is not None and ex.signal:
            at = ex.at or float("inf")
            by_rank[e.rank] = RankEnd(e.rank, _signalled(ex), at, step, signal=ex.signal)
        else:
            by_rank[e.rank] = RankEnd(e.rank, End.VANISHED, float("inf"), step)
        waited = max((s for r, s in waits.items() if r != e.rank), default=0)
        if waited > step:  # the others got further: it finished the steps before theirs
            by_rank[e.rank] = replace(by_rank[e.rank], waited=waited)
    for r, steps in (finished or {}).items():
        ex = signals.get(r)
        if r in by_rank or ex is None:
            continue
        at = ex.at or float("inf")
        if ex.exitcode > 0:
            by_rank[r] = RankEnd(r, End.EXITED, at, steps, status=ex.exitcode)
        elif ex.signal == "SIGINT" and exit_code != 0:  # its last word, then a KeyboardInterrupt
            # of its own (a stopped command's status is 0); a SIGKILL or SIGTERM after the last
            # word is the launcher's teardown, not a failure of its loop
            by_rank[r] = RankEnd(r, End.KILLED, at, steps, signal=ex.signal)
    seen = {e.rank for e in lost} | set(finished or {})
    for ex in signals.values():  # ranks that never connected (they ended before DDP was built)
        if ex.rank not in by_rank and ex.rank not in seen:
            end = _signalled(ex)
            by_rank[ex.rank] = RankEnd(ex.rank, end, ex.at or float("inf"), 0, signal=ex.signal)
            if not ex.signal:
                by_rank[ex.rank] = replace(by_rank[ex.rank], end=End.VANISHED)
    if by_rank and all(r.peer_gone or r.end is End.STOPPED for r in by_rank.values()):
        # only lost peers and torchrun's stops: the peer they lost is one that said its last
        # word cleanly while they still waited in a collective for it (it left its loop early,
        # or made fewer all-reduces: a forward under no_grad, a skipped backward)
        others = max(waits.values(), default=0)
        for r, steps in (finished or {}).items():
            if r not in by_rank and r not in signals:
                by_rank[r] = RankEnd(r, End.LEFT, float("inf"), steps, waited=others)
    out = sorted(by_rank.values(), key=_order)
    odd = model_culprit(failures, _world(failures, lost))
    if odd is not None and odd in by_rank:  # every rank raised; the votes name the odd model
        out = [replace(r, model_odd=True) if r.rank == odd else r for r in out]
        out.sort(key=lambda r: r.rank != odd)
    return out


def _signalled(ex: WatchExit) -> End:
    """A SIGTERM is torchrun's stop after a failure, unless torchrun saw it first (then it
    came from outside: a scheduler, ``kill``); any other signal killed the rank."""
    return End.STOPPED if ex.signal == "SIGTERM" and not ex.first else End.KILLED


def _world(failures: list[WatchFailure], lost: list[WatchRankLost]) -> int:
    return 1 + max([f.rank for f in failures] + [e.rank for e in lost], default=0)


def _waits(failures: list[WatchFailure], lost: list[WatchRankLost], made: int) -> dict[int, int]:
    """The step (from 1) whose DDP all-reduce each rank waited in when it failed or went: the
    bucket's it was inside, or else the step it had begun, if no rank saw that step's
    all-reduce finish (``made``): a rank in the script's own collective after a step whose
    all-reduce finished (a metric's all_reduce) waited in no all-reduce of DDP's."""
    out: dict[int, int] = {}
    for x in [*failures, *lost]:
        c = x.inside
        if c is not None and "bucket" in c and "step" in c:
            step = int(c["step"]) + 1
        elif x.step > made:
            step = x.step
        else:
            continue
        out[x.rank] = max(out.get(x.rank, 0), step)
    return out


def _order(r: RankEnd) -> tuple:
    # own reports by time; a killed rank (the launcher's time is another clock) before a
    # peer-gone error, which it explains; torchrun's SIGTERMs last (they follow a failure)
    rank_of = {End.RAISED: 1, End.STOPPED: 2}.get(r.end, 0)
    if r.end is End.RAISED and not r.peer_gone:
        rank_of = 0
    return (rank_of, r.at if r.end is End.RAISED else float("inf"), r.rank)


def cause(ends: list[RankEnd]) -> RankEnd | None:
    """The first failure (see the module's words); None when every rank ended cleanly."""
    return ends[0] if ends else None


# --- in words ---------------------------------------------------------------------------------
def step_phrase(step: int, sure: bool = True) -> str:
    """A step as the page numbers them (from 1) and as a loop counting from 0 would; a rank
    that left no word of its own is known to have begun it, no more (``sure`` False)."""
    if step < 1:
        return "before its first step" if sure else "before any step of its reached ddp-viz"
    return f"{'in' if sure else 'in or after'} its step {step} (loop index {step - 1})"


def raised_phrase(f: WatchFailure) -> str:
    """Where a rank's own error came, as far as its step count says: a rank counts a step begun
    at DDP's forward, so an error outside any collective after step n's forward may come
    later in that loop turn or early in the next, before its forward (a data loader's)."""
    if f.inside is not None or f.step < 1:
        return step_phrase(f.step)
    n = f.step
    return f"in its step {n} (loop index {n - 1}) or after it, before it began any later step"


def first_line(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else ""
    return line if len(line) <= 160 else line[:157] + "…"


def failure_text(
    r: RankEnd, first: RankEnd | None, peers: list[WatchFailure] | None = None
) -> list[str]:
    """One rank's end: the cause's in full, a consequence's in one line."""
    is_cause = first is not None and r.rank == first.rank
    if r.late is not None:
        return late_text(r, first)
    if r.end is End.RAISED and r.failure is not None:
        f = r.failure
        where = f" inside {_call(f)}" if f.inside is not None else ""
        said = first_line(f.message)  # a KeyboardInterrupt says nothing
        head = f"rank {f.rank} raised {f.type}" + (f": {said}" if said else "")
        head += f" — at {f.site}, {raised_phrase(f)}{where}"
        worker = worker_error(f.message)
        if worker is not None:  # the worker's own error and line, not the loader's wrapper
            line, at, n = worker
            head = f"rank {f.rank} raised {line} — at {at} in DataLoader worker process {n} "
            head += f"(its main process re-raised it at {f.site}), {raised_phrase(f)}"
        if is_cause:
            said = ddp_error(f, peers)
            if r.model_odd and not said:  # the others' words say it: its model is the odd one
                said = next((x for p in peers or [] if (x := ddp_error(p, peers))), [])
            cause = "its model is the odd one" if r.model_odd else "the first failure"
            if r.secondhand:  # first, yet no cause: see secondhand.py
                return [f"✗ crash: {head} (the first failure, itself a consequence: {NO_OWN})"]
            if r.everyone:
                head = head.replace(f"rank {f.rank} raised", "every rank raised", 1)
                cause = f"the same error on all {r.everyone} ranks, so the script's own"
            return [f"✗ crash: {head} ({cause}: the cause)"] + ["  " + line for line in said]
        if first is not None and first.failure is not None and same_error(f, first.failure):
            return [f"  rank {f.rank} raised the same {f.type} at {f.site}, {raised_phrase(f)}"]
        if r.peer_gone:
            head = f"rank {f.rank} failed{where or ' at ' + f.site}, {step_phrase(f.step)}: "
            head += gone_words(f.message)
        gone = "left" if first is not None and first.end is End.LEFT else "failed"
        blamed = first is not None and not first.secondhand  # see secondhand.py
        because = f", because rank {first.rank} had {gone}" if blamed else ""
        if first is not None and first.late is not None:
            because = f", because {first.late.who()} had not arrived"
        return [f"  then {head}{because}"]
    head = f"rank {r.rank} {own_end(r)}"
    if r.end is End.LEFT and is_cause:  # how a rank comes to leave its peers waiting
        head += (
            ": a rank that leaves its loop early, or makes fewer all-reduces than its "
            "peers (a forward under no_grad, a skipped backward), leaves them waiting"
        )
    if is_cause and r.everyone:  # every rank exited alike, after its last word
        everyone = f"the same status on all {r.everyone} ranks, so the script's own"
        return [f"✗ crash: every rank {own_end(r)} ({everyone}: the cause)"]
    if is_cause:
        return [f"✗ crash: {head} (the first failure: the cause)"]
    if first is not None and first.everyone:
        return [f"  {head}"]
    return [f"  then {head}" + (f", after rank {first.rank} failed" if first else "")]


def late_text(r: RankEnd, first: RankEnd | None) -> list[str]:
    """A rank a monitored barrier named: the cause, with how it ended after; one it named
    beside the cause, or after a hang (the diagnosis then), in one line."""
    assert r.late is not None
    then = "" if r.end is End.LATE else own_end(r)
    if first is None or first.late is None:
        head = f"  then rank {r.rank} did not reach {r.late.place()} ({r.late.words()})"
        return [head + (f"; it {then}" if then else "")]
    if r.rank != first.rank:
        return [f"  rank {r.rank} was named too" + (f"; it {then}" if then else "")]
    head = f"✗ crash: {r.late.who()} never reached {r.late.place()}: {r.late.words()}"
    return [f"{head} (the cause)"] + ([f"  then rank {r.rank} {then}"] if then else [])


def own_end(r: RankEnd) -> str:
    """How a rank ended, after the word "rank N", when it is not the cause by its own error."""
    f = r.failure  # only a rank that raised has one
    if f is not None:
        return f"failed at {f.site}, {raised_phrase(f)}: {gone_words(f.message)}"
    if r.end in (End.KILLED, End.STOPPED):
        return f"was killed by {signal_words(r.signal, r.end is End.KILLED)}, {lost_step(r)}"
    if r.end is End.EXITED:
        return f"exited with status {r.status} without raising (sys.exit?), " + step_phrase(
            r.step, sure=False
        )
    if r.end is End.LEFT:
        return left_words(r)
    return f"vanished without its last word (killed or crashed), {lost_step(r)}"


def left_words(r: RankEnd) -> str:
    """A rank that said its last word cleanly while its peers still waited for it."""
    waited = f" in step {r.waited}'s all-reduce" if r.waited else " in a collective"
    return (
        f"ended its training cleanly (its last word, after beginning {r.step} step(s)) while "
        f"the others still waited for it{waited}"
    )


def lost_step(r: RankEnd) -> str:
    """Where a rank that left no word was: the step whose all-reduce the others waited in
    for it (it finished the one before, or they could not have gone on), or as far as its own
    events and beats said. Before the others' first all-reduce there is none before it."""
    if r.waited > 1:
        return (
            f"in its step {r.waited} (loop index {r.waited - 1}) or just before it: after step "
            f"{r.waited - 1}'s all-reduce, before step {r.waited}'s, which the others reached"
        )
    if r.waited == 1:
        return (
            "in its step 1 (loop index 0) or just before it: before step 1's all-reduce, which "
            "the others reached"
        )
    return step_phrase(r.step, sure=False)


def same_error(a: WatchFailure, b: WatchFailure) -> bool:
    """The same kind of error, saying the same first line."""
    return a.type == b.type and first_line(a.message) == first_line(b.message)


def gone_words(message: str) -> str:
    """A peer-gone error in a few words (gloo's own run to three lines)."""
    low = message.lower()
    for key, words in (
        ("failed to pass monitoredbarrier", "its monitored_barrier gave up on the ranks it named"),
        (
            "successfully reached monitoredbarrier",
            "it reached the monitored barrier, then rank 0's gave up",
        ),
        ("closed by peer", "connection closed by a peer"),
        ("reset", "connection reset by a peer"),
        ("broken pipe", "broken pipe to a peer"),
        ("timed out", "the collective timed out"),
        ("timeout", "the collective timed out"),
    ):
        if key in low:
            return words
    return first_line(message)


def _call(f: WatchFailure) -> str:
    c = f.inside
    if c is None:
        return ""
    if "bucket" in c:
        return f"DDP's gradient {c['op']} #{c['seq']}"
    return f"{c['op']} #{c['seq']} at {c['site']}"


def crash_lines(ends: list[RankEnd]) -> list[str]:
    first = cause(ends)
    out: list[str] = []
    peers = [r.failure for r in ends if r.failure is not None]
    for r in ends:
        out += failure_text(r, first, peers)
    return out


def verdict(first: RankEnd) -> str:
    """The report's last line: the root-cause rank, what and where."""
    if first.model_odd:
        return (
            f"ddp-viz verdict: rank {first.rank} is the root cause: its model differs from "
            "the other ranks' (found as DDP was built)"
        )
    if first.late is not None:
        late = first.late
        are, they = ("is", "it") if len(late.ranks) == 1 else ("are", "they")
        return (
            f"ddp-viz verdict: {late.who()} {are} the root cause: {they} never reached "
            f"{late.place()} ({late.words()})"
        )
    if first.failure is not None:
        f = first.failure
        if first.everyone:
            return (
                f"ddp-viz verdict: every rank raised {f.type} at {f.site}, {raised_phrase(f)}: "
                "the script's own error, not one rank's"
            )
        worker = worker_error(f.message)
        at = f.site if worker is None else f"{worker[1]} in DataLoader worker process {worker[2]}"
        return f"ddp-viz verdict: rank {f.rank} is the root cause: {f.type} at {at}, " + (
            raised_phrase(f)
        )
    if first.end is End.LEFT:
        return f"ddp-viz verdict: rank {first.rank} is the root cause: it {left_words(first)}"
    how = f"killed by {first.signal}" if first.signal else "vanished (killed or crashed)"
    if first.signal == "SIGTERM" and first.end is End.KILLED:
        how += f" ({OUTSIDE})"
    if first.end is End.EXITED and first.everyone:
        return (
            f"ddp-viz verdict: every rank exited with status {first.status}, without raising: "
            "the script's own exit status, not one rank's"
        )
    if first.end is End.EXITED:
        how = f"exited with status {first.status}"
        return f"ddp-viz verdict: rank {first.rank} is the root cause: {how}, " + step_phrase(
            first.step, sure=False
        )
    return f"ddp-viz verdict: rank {first.rank} is the root cause: {how}, {lost_step(first)}"
