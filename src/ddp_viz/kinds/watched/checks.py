"""What the watch doctor found in a watched run, read from its record (pure): hangs, ranks
that vanished, the first non-finite loss or gradient, the first step whose parameters or
buffers differ between ranks, and the straggler verdict. The ``--no-window`` report and the
watched page say the same words (:func:`findings`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ddp_viz.kinds.watched import apart, around, monitored, secondhand, threads, waited_for
from ddp_viz.kinds.watched import failures as fail
from ddp_viz.kinds.watched.doctor import hang_lines, mismatch, missing, p2p_waits, running_frame
from ddp_viz.kinds.watched.events import (
    CommCall,
    StuckRank,
    WatchAround,
    WatchDigests,
    WatchDropped,
    WatchExit,
    WatchFailure,
    WatchHang,
    WatchNeverSynced,
    WatchNonFinite,
    WatchRankLost,
    WatchSummary,
)
from ddp_viz.kinds.watched.history import complete_count
from ddp_viz.kinds.watched.straggler import straggler_text
from ddp_viz.model.event_base import Event
from ddp_viz.model.protocol import Timing
from ddp_viz.model.timeline import RunRecord

PART = "watched.doctor"  # the record's part that folds them
MAX_NAMES = 6  # tensors named in one line; the rest are counted


@dataclass(frozen=True)
class Desync:
    """The first step whose state differs between ranks, and the tensors that do."""

    step: int  # the step the ranks entered with it (after step ``step - 1``)
    tensors: dict[str, list[int]]  # name -> the ranks whose digest is not rank 0's
    agreed: int | None  # the last step compared before, where every rank agreed


@dataclass
class Doctoring:
    """The doctor's events, folded as they arrive (a part of the record)."""

    world: int = 0
    hangs: list[WatchHang] = field(default_factory=list)
    lost: list[WatchRankLost] = field(default_factory=list)
    non_finite: list[WatchNonFinite] = field(default_factory=list)
    around: list[WatchAround] = field(default_factory=list)  # forwards that went around DDP
    never: list[WatchNeverSynced] = field(default_factory=list)  # no_sync() every backward
    digests: dict[int, dict[int, dict[str, str]]] = field(default_factory=dict)  # step, rank
    desync: Desync | None = None
    agreed: int | None = None
    failures: list[WatchFailure] = field(default_factory=list)
    threads: list[WatchFailure] = field(default_factory=list)  # another thread's; rank went on
    exits: list[WatchExit] = field(default_factory=list)
    finished: dict[int, int] = field(default_factory=dict)  # rank -> steps begun, last word
    exit_code: int | None = None
    resumed: bool = False  # a step came after the latest hang: the ranks moved again
    stopped: bool = False  # the user stopped the command (Ctrl-C, or the window closed)

    @property
    def raised(self) -> list[WatchFailure]:
        """The ranks' own reports, less the KeyboardInterrupts of a run the user stopped (each
        rank gets the Ctrl-C): one rank's KeyboardInterrupt alone is its failure like any."""
        if not self.stopped:
            return self.failures
        return [f for f in self.failures if f.type != "KeyboardInterrupt"]

    def apply(self, e: Event) -> None:
        if isinstance(e, Timing):
            self.resumed = bool(self.hangs)
        elif isinstance(e, WatchFailure):
            (self.threads if e.thread else self.failures).append(e)
        elif isinstance(e, WatchExit):
            self.exits.append(e)
        elif isinstance(e, WatchDropped) and e.steps >= 0:
            self.finished[e.rank] = e.steps
        elif isinstance(e, WatchSummary):
            self.exit_code = 0 if e.stopped else e.exit_code  # stopped: no rank crashed
            self.stopped = e.stopped
        elif isinstance(e, WatchHang):
            self.hangs.append(e)
            self.resumed = False
        elif isinstance(e, WatchRankLost):
            self.lost.append(e)
        elif isinstance(e, WatchNonFinite):
            self.non_finite.append(e)
        elif isinstance(e, WatchAround):
            self.around.append(e)
        elif isinstance(e, WatchNeverSynced):
            self.never.append(e)
        elif isinstance(e, WatchDigests) and self.desync is None:
            got = self.digests.setdefault(e.step, {})
            got[e.rank] = e.digests
            if self.world and len(got) == self.world:
                self._compare(e.step, self.digests.pop(e.step))

    def _compare(self, step: int, by_rank: dict[int, dict[str, str]]) -> None:
        first = by_rank[min(by_rank)]
        differ: dict[str, list[int]] = {}
        for r, theirs in sorted(by_rank.items()):
            for name in sorted(set(first) | set(theirs)):
                if theirs.get(name) != first.get(name):
                    differ.setdefault(name, []).append(r)
        if not differ:
            self.agreed = step if self.agreed is None else max(self.agreed, step)
            return
        self.desync = Desync(step, differ, self.agreed)
        self.digests.clear()  # the first is what matters; nothing more to hold


def doctoring(rec: RunRecord) -> Doctoring:
    part = rec.parts.get(PART)
    if not isinstance(part, Doctoring):  # first asked: read what came so far, then fold the rest
        part = Doctoring(rec.world_size)
        for e in rec.events:
            part.apply(e)
        rec.parts[PART] = part
    return part


# --- in words ---------------------------------------------------------------------------------
def _names(names: list[str]) -> str:
    more = len(names) - MAX_NAMES
    return ", ".join(names[:MAX_NAMES]) + (f" and {more} more" if more > 0 else "")


def non_finite_text(e: WatchNonFinite) -> str:
    parts = []
    if e.loss is not None:
        parts.append(f"its loss was {e.loss}")
    if e.tensors:
        parts.append(f"its local gradient was not finite in {_names(e.tensors)}")
    return f"✗ non-finite: at step {e.step + 1} on rank {e.rank} (the first), " + "; ".join(parts)


def desync_text(d: Desync) -> str:
    ranks = sorted({r for rs in d.tensors.values() for r in rs})
    who = ", ".join(f"rank {r}" for r in ranks)
    before = f"; identical entering step {d.agreed + 1}" if d.agreed is not None else ""
    return (
        f"✗ desync: entering step {d.step + 1} (after step {d.step}), {who} held other bytes "
        f"than rank 0 in {_names(sorted(d.tensors))}{before}"
    )


def rank_ends(rec: RunRecord) -> list[fail.RankEnd]:
    """The ranks that did not end cleanly, the cause first. A rank that left its peers
    waiting is no cause of an uneven end, which says why it left; an error every rank raised
    alike at one line, or a status every rank exited with, is the script's, and said so."""
    d = doctoring(rec)
    # the steps made, for a lost rank's place only: counting them reads every step, and the
    # live page asks for the ends on every batch of events (a run of 4,000 steps fell behind)
    made = complete_count(rec) if d.lost else 0
    ends = fail.rank_ends(d.raised, d.lost, d.exits, d.exit_code, d.finished, made)
    if uneven_end(rec) is not None:
        ends = [r for r in ends if r.end is not fail.End.LEFT]
    named = monitored.late(d.raised)
    if named is not None:
        ends = waited_for.named_first(ends, named)
    elif not d.hangs:  # a hang, named live, says where each rank was: it is the diagnosis
        ends = waited_for.absent_first(ends)
    first = ends[0] if ends else None
    world = rec.world_size
    if first is not None and first.failure is not None and not first.peer_gone and world > 1:
        same = [r for r in ends if r.failure is not None and _alike(r.failure, first.failure)]
        if len({r.rank for r in same}) == world and not first.model_odd:
            ends[0] = replace(first, everyone=world)
    elif first is not None and secondhand.applies(first, world):
        ends[0] = replace(first, secondhand=True)
    elif first is not None and first.end is fail.End.EXITED and world > 1:
        same = {r.rank for r in ends if r.end is first.end and r.status == first.status}
        if len(same) == world:  # every rank said its last word, then exited alike
            ends[0] = replace(first, everyone=world)
    return ends


def _alike(a: WatchFailure, b: WatchFailure) -> bool:
    return fail.same_error(a, b) and a.site == b.site


def uneven(rec: RunRecord) -> str | None:
    """The uneven end in words (see :func:`uneven_end`), if any."""
    found = uneven_end(rec)
    return None if found is None else found.text()


def uneven_end(rec: RunRecord) -> apart.Uneven | None:
    """A rank that began a step after another finished its loop (see failures.uneven_end):
    finished are the ranks that sent their last word without failing, and ranks a hang found
    at a barrier or ended; entered, the ranks that failed, vanished, or hung inside DDP's
    gradient all-reduce."""
    d = doctoring(rec)
    failed = {f.rank for f in d.raised} | {e.rank for e in d.exits if e.exitcode != 0}
    # a rank that raised an error of its own did not finish its loop, though a hang saw it
    # end: under load the hang is named while its failure is on its way, and counted finished
    # it made its peers' next all-reduce an "uneven end" instead of the crash it was. (A rank
    # whose closing barrier timed out did finish: that error is the hang's, a peer's doing.)
    raised = {f.rank for f in d.raised if not fail.peer_gone(f.message)}
    finished = {r: n for r, n in d.finished.items() if r not in failed}
    # A rank the hang saw running its own code (in no collective, not ended) was still in its
    # loop, as far as anyone can tell: once the user stopped the run, its last word came from
    # the stop, not from the end of its loop (a rank asleep in its loop is no uneven input).
    if d.stopped:
        for h in d.hangs[:1]:
            for s in h.ranks:
                if s["state"] == "outside":
                    finished.pop(s["rank"], None)
    at_barrier: dict[int, CommCall] = {}  # ranks counted done only because a hang saw a barrier
    entered: dict[int, int] = {}
    for f in d.raised:
        entered[f.rank] = max(entered.get(f.rank, 0), f.step)
    for e in d.lost:
        if e.rank not in finished:
            entered[e.rank] = max(entered.get(e.rank, 0), e.step)
    for h in d.hangs[:1]:
        for s in h.ranks:
            call, step = s.get("inside"), s.get("step", 0)
            if s["state"] == "inside" and call is not None and "bucket" in call:
                entered[s["rank"]] = max(entered.get(s["rank"], 0), step)
            elif s["rank"] not in raised and (
                s["state"] == "ended" or (call is not None and "barrier" in call["op"])
            ):
                if s["rank"] not in finished and call is not None:  # not its last word
                    at_barrier[s["rank"]] = call
                finished.setdefault(s["rank"], step)
    found = apart.uneven_end(finished, entered)
    if found is not None and found.done_rank in at_barrier:
        found = replace(found, barrier=at_barrier[found.done_rank])
    return found


def _follows(first: fail.RankEnd) -> bool:
    """A first end that a hang explains: a lost peer, torchrun's stop after it, or a rank a
    monitored barrier named with no end of its own seen."""
    return first.peer_gone or first.end in (fail.End.STOPPED, fail.End.LATE)


def _crash(rec: RunRecord, hung: bool) -> list[str]:
    ends = rank_ends(rec)
    first = fail.cause(ends)
    if first is None:
        return []
    if hung and _follows(first):
        # the collectives' timeouts after a hang, a lost peer after an uneven end: the hang or
        # the uneven end is the diagnosis, these follow from it
        return ["after that:"] + [line for r in ends for line in fail.failure_text(r, None)]
    d = doctoring(rec)
    odd = apart.call_mismatch(d.raised, d.lost)
    more = ["  " + odd[0]] if odd is not None else []
    lines = fail.crash_lines(ends) + more
    late = secondhand.late_line(rec, ends) if first.secondhand else None
    if late is not None:  # the late rank leads; the first error is one of its consequences
        return [late, "  " + lines[0].removeprefix("✗ crash: "), *lines[1:]]
    return lines


def findings(rec: RunRecord, stacks: bool = True) -> list[tuple[str, list[str]]]:
    """Everything the doctor found so far, each with a key (the report prints each once),
    the diagnosis first: an uneven end, the first failure, a hang."""
    d = doctoring(rec)
    out: list[tuple[str, list[str]]] = []
    late = uneven(rec)
    if late is not None:
        out.append(("uneven", [late]))
    crash = _crash(rec, bool(d.hangs) or late is not None)
    if crash and not crash[0].startswith("after that"):
        out.append(("crash", crash))
    lost = [threads.thread_text(f) for f in threads.first_each(d.threads)]
    # a thread's error on a rank the hang names explains it: said first, as it came first
    explains = bool(lost) and any(threads.hang_note(h, d.threads) for h in d.hangs)
    if explains:
        out.append(("thread", lost))
    for i, h in enumerate(d.hangs):
        out.append((f"hang{i}", hang_lines(h, stacks)))
    if lost and not explains:
        out.append(("thread", lost))
    if crash and crash[0].startswith("after that"):
        out.append(("crash", crash))
    if d.around:
        out.append(("around", [around.text(d.around, rec.world_size)]))
    if d.never and not crash:  # a rank that failed mid-accumulation never got to its sync
        out.append(("never_synced", [around.never_text(d.never, rec.world_size)]))
    if d.non_finite:
        first = min(d.non_finite, key=lambda e: (e.step, e.rank))
        out.append(("non_finite", [non_finite_text(first)]))
    if d.desync is not None:
        out.append(("desync", [desync_text(d.desync)]))
    said = unexplained_exit(rec)
    if said is not None and not (crash or d.hangs or late):
        out.append(("exit", [said]))
    return out


def unexplained_exit(rec: RunRecord) -> str | None:
    """A command that failed with no rank's failure seen: never a clean bill of health. A
    launcher other than torchrun can catch a rank's exception itself (``mp.spawn`` writes it
    to its parent and exits the rank with status 1), and a script can fail outside its ranks."""
    code = doctoring(rec).exit_code
    if code is None or code == 0:
        return None
    return (
        f"✗ the command exited with status {code}, yet no rank reported an error, a signal or "
        "a lost connection: what started the ranks may have caught a rank's exception itself "
        "(torch.multiprocessing.spawn does, and exits the rank with status 1), or the command "
        "failed outside its ranks; its own output above says what"
    )


def verdict(rec: RunRecord) -> str:
    """One line, printed last: the diagnosis and its root-cause rank, or none found."""
    d = doctoring(rec)
    late = uneven_end(rec)
    if late is not None:
        what = "uneven inputs"
        if late.barrier is not None:
            what += f", or a collective only rank {late.done_rank} makes"
        return f"ddp-viz verdict: {what}: {late.headline()}"
    ends = rank_ends(rec)
    first = fail.cause(ends)
    odd = apart.call_mismatch(d.raised, d.lost) if first is not None else None
    if odd is not None and odd[1] is not None and (first.peer_gone or first.signal):
        # gloo aborts whichever rank met the mismatch: the odd call is the cause
        calls = odd[0].split(": ", 1)[1]
        return f"ddp-viz verdict: rank {odd[1]}'s collective does not match the others': {calls}"
    if first is not None and not (d.hangs and _follows(first)):
        return secondhand.verdict(ends, rec) if first.secondhand else fail.verdict(first)
    if d.hangs:  # the latest: a stall that went on says more than its first moments
        note = threads.hang_note(d.hangs[-1], d.threads)
        return "ddp-viz verdict: " + hang_verdict(d.hangs[-1]) + note
    if d.around:
        return around.verdict(d.around, rec.world_size)
    if d.never:  # a crash or a hang came first, above
        return around.never_verdict(d.never, rec.world_size)
    if d.non_finite:
        e = min(d.non_finite, key=lambda e: (e.step, e.rank))
        return f"ddp-viz verdict: rank {e.rank} is the first non-finite, at step {e.step + 1}"
    if d.desync is not None:
        ranks = sorted({r for rs in d.desync.tensors.values() for r in rs})
        who = ", ".join(map(str, ranks))
        return (
            f"ddp-viz verdict: desync: rank(s) {who} differ from rank 0 entering step "
            f"{d.desync.step + 1}"
        )
    if unexplained_exit(rec) is not None:
        return (
            f"ddp-viz verdict: the command exited with status {d.exit_code} with no rank's "
            "failure seen (see the command's own output)"
        )
    if d.threads:
        return threads.alone_verdict(d.threads)
    said = straggler_text(rec)
    if said is not None and said.startswith("✗"):
        return "ddp-viz verdict: " + said.removeprefix("✗ ").split(";")[0]
    return "ddp-viz verdict: ✓ no hang, no crash, no NaN, no desync and no straggler found"


def hang_verdict(h: WatchHang) -> str:
    deadlock = [line for line in p2p_waits(h) if "deadlock" in line]
    if deadlock:  # the cause, where a collective the two are missing is its consequence
        return "hang: " + deadlock[0]
    call, absent = missing(h)
    places = {s["rank"]: s for s in h.ranks}
    if call is not None and absent:
        who = fail_ranks(absent)
        said = f"hang: {who} never joined {call['op']} #{call['seq']} that the others are in"
        # of them, one running its own code is what the others wait on (one inside a call of
        # its subgroup waits for it too)
        running = [r for r in absent if places[r]["state"] == "outside"]
        return said + _doing(places[(running or absent)[0]])
    bad = mismatch(h)
    if call is not None and bad and not absent:  # all in one call, not agreeing on its root
        return "hang: " + bad
    outside = [s for s in h.ranks if s["state"] == "outside"]
    if outside:
        return f"hang: {fail_ranks([s['rank'] for s in outside])} in no communication" + (
            _doing(outside[-1])
        )
    return "hang: no rank moved (see each rank's place above)"


def _doing(s: StuckRank) -> str:
    """What a stuck rank is doing: the collective it is in, or the line it runs."""
    if s["state"] == "inside":
        c = s["inside"]
        return f"; rank {s['rank']} is inside {c['op']} #{c['seq']} at {c['site']}"
    frame = running_frame(s)
    return f"; rank {s['rank']} is running {frame}" if frame else ""


def fail_ranks(ranks: list[int]) -> str:
    return ("ranks " if len(ranks) > 1 else "rank ") + ", ".join(map(str, ranks))
