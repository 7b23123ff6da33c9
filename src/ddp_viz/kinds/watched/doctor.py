"""A hang, named (pure): the listener's side of the watch doctor.

Every watched rank beats every half second (:class:`WatchBeat`): its step, a counter that moves
with each collective and step, the collective it is inside and the last it issued, and, once
stuck, its Python stack. :class:`Doctor` keeps each rank's latest beat and when its counter last
moved; when no rank has moved for longer than the threshold it makes one :class:`WatchHang`
(per stall). :func:`hang_lines` says it in words: which collective each rank is in and where
the script issued it, which ranks are missing from it, whether the ranks' collectives match,
and each rank's stack.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ddp_viz.kinds.watched.events import (
    P2P_OPS,
    TO_ROOT,
    CommCall,
    StuckRank,
    WatchBeat,
    WatchHang,
    WatchRankLost,
)
from ddp_viz.kinds.watched.tensors import tensor_words, tensors_key

RUN = 1
HANG_ENV = "DDP_VIZ_HANG_S"  # a fixed threshold (``watch --hang-after``), for ranks and listener
MIN_HANG_S = 10.0  # no rank moved for this long (or STEPS_HANG steps' time, if longer): a hang
STEPS_HANG = 20
STACK_WAIT_S = 1.0  # past the threshold, how long a hang waits for a rank's stack to come


def threshold_from_env(environ: Mapping[str, str]) -> float | None:
    """The fixed threshold ``watch --hang-after`` set (None: the default's rule)."""
    try:
        value = float(environ.get(HANG_ENV, ""))
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def hang_threshold(step_s: float, fixed: float | None = None) -> float:
    """How long no rank may move before it is a hang: ``fixed`` if given, else the larger of
    ``MIN_HANG_S`` and ``STEPS_HANG`` median steps."""
    if fixed is not None:
        return fixed
    return max(MIN_HANG_S, STEPS_HANG * step_s) if math.isfinite(step_s) else MIN_HANG_S


@dataclass
class _Rank:
    pid: int
    moved_at: float
    beat: WatchBeat | None = None
    state: str = "running"  # or "gone", "ended"
    begun: int = 0  # steps begun, as far as its step events tell (a beat may be older)


class Doctor:
    """The ranks' latest beats, as the listener receives them (its clock: ``now``)."""

    def __init__(self, fixed: float | None = None) -> None:
        self.fixed = fixed
        self.ranks: dict[int, _Rank] = {}
        self.reported = False  # this stall was named already

    def joined(self, rank: int, pid: int, now: float) -> None:
        self.ranks[rank] = _Rank(pid, now)

    def beat(self, b: WatchBeat, now: float) -> None:
        r = self.ranks.setdefault(b.rank, _Rank(0, now))
        if r.beat is None or r.beat.progress != b.progress:
            r.moved_at = now
        r.beat = b

    def stepped(self, rank: int, step: int) -> None:
        """The rank sent step ``step``'s events: it sends them as step ``step + 1`` begins."""
        r = self.ranks.get(rank)
        if r is not None:
            r.begun = max(r.begun, step + 2)

    def ended(self, rank: int) -> None:
        """The rank sent its last word: its training is over."""
        if rank in self.ranks:
            self.ranks[rank].state = "ended"

    def lost(self, rank: int) -> WatchRankLost | None:
        """The rank's connection closed; without its last word, it is gone."""
        r = self.ranks.get(rank)
        if r is None or r.state != "running":
            return None
        r.state = "gone"
        b = r.beat
        step = max(b.step if b is not None else 0, r.begun)
        return WatchRankLost(RUN, rank, r.pid, step, b.inside if b else None, b.last if b else None)

    def threshold(self) -> float:
        steps = [r.beat.step_s for r in self.ranks.values() if r.beat is not None]
        finite = [s for s in steps if math.isfinite(s)]
        return hang_threshold(max(finite, default=math.nan), self.fixed)

    def check(self, now: float) -> WatchHang | None:
        """A hang once no running rank has moved for the threshold (once per stall)."""
        running = [r for r in self.ranks.values() if r.state == "running"]
        if not running:
            return None
        quiet = min(now - r.moved_at for r in running)
        limit = self.threshold()
        if quiet < limit:
            self.reported = False
            return None
        if self.reported:
            return None
        stacks = all(r.beat is not None and r.beat.stack for r in running)
        if not stacks and quiet < limit + STACK_WAIT_S:
            return None
        self.reported = True
        return WatchHang(RUN, quiet, limit, [self._stuck(i, now) for i in sorted(self.ranks)])

    def _stuck(self, rank: int, now: float) -> StuckRank:
        r = self.ranks[rank]
        state = r.state if r.state != "running" else "outside"
        out = StuckRank(rank=rank, state=state, quiet_s=now - r.moved_at)
        b = r.beat
        if b is None:
            return out
        out["step"] = b.step
        if b.inside is not None and r.state == "running":
            out["state"] = "inside"
            out["inside"] = b.inside
        if b.last is not None:
            out["last"] = b.last
        if b.stack:
            out["stack"] = list(b.stack)
        return out


# --- in words ---------------------------------------------------------------------------------
def call_text(c: CommCall) -> str:
    """``all_reduce #7 [3] at train.py:52 in main``; DDP's buckets say so; a point-to-point
    call names its other rank (``recv from rank 1 [3]``), its number being of its own kind."""
    sizes = tensor_words(c)
    group = f" of {rank_list(c['group'])}" if c.get("group") else ""
    what = f"{c['op']} #{c['seq']}{group}" + (f" {sizes}" if sizes else "")
    if c["op"] in P2P_OPS:
        what = f"{c['op']} {_peer_words(c)}" + (f" {sizes}" if sizes else "")
    elif c.get("root", -1) >= 0:
        to = "to" if c["op"] in TO_ROOT else "from"
        what += f" {to} rank {c['root']}"
    if "bucket" in c:
        what = f"DDP's gradient {what} (bucket {c['bucket']} of step {c.get('step', 0) + 1})"
    return f"{what} at {c['site']}"


def _key(c: CommCall) -> tuple:
    return c["op"], tensors_key(c)


def _agreed(c: CommCall) -> tuple:
    """What every rank's call must agree on: op, sizes and, for a rooted one, its root (every
    rank's call of a rooted op carries one)."""
    return (*_key(c), c.get("root"))


def _peer_words(c: CommCall) -> str:
    to = "to" if c["op"] in ("send", "isend") else "from"
    peer = c.get("peer", -1)
    return f"{to} rank {peer}" if peer >= 0 else f"{to} any rank"


def _collective(s: StuckRank) -> bool:
    """Inside a call every rank makes: not a point-to-point one, nor a subgroup's (numbered
    apart per group: see :func:`group_waits`)."""
    c = s.get("inside")
    return c is not None and c["op"] not in P2P_OPS and not c.get("group")


def group_waits(h: WatchHang) -> list[str]:
    """Each subgroup's collective its ranks wait in, with the group's ranks that are not in
    it and where they are: ``dist.new_group([0, 1])``'s all_reduce waits for ranks 0 and 1
    only, and a rank outside the group is missing from nothing of it."""
    places = {s["rank"]: s for s in h.ranks}
    calls: dict[tuple, list[int]] = {}
    for s in h.ranks:
        c = s.get("inside")
        if c is not None and c.get("group") and c["op"] not in P2P_OPS:
            calls.setdefault((tuple(c["group"]), c["seq"]), []).append(s["rank"])
    out = []
    for (group, _), inside in calls.items():
        away = [r for r in group if r not in inside]
        if not away:
            continue
        c = places[inside[0]]["inside"]
        head = f"{rank_list(inside)} {'waits' if len(inside) == 1 else 'wait'} in {call_text(c)}"
        there = [stuck_text(places[r]) for r in away if r in places]
        out.append(f"{head} for {rank_list(away)}" + "".join(f"; {t}" for t in there))
    return out


def p2p_waits(h: WatchHang) -> list[str]:
    """Each rank held in a point-to-point call, with what its other rank is doing: a recv
    waits for one rank's send, not for every rank, so no collective is missing anyone. Two
    ranks that each wait for the other are said once, as the deadlock they are."""
    places = {s["rank"]: s for s in h.ranks}
    out: list[str] = []
    said: set[int] = set()
    for s in h.ranks:
        c = s.get("inside")  # a rank's place has one only while it is inside the call
        peer = c.get("peer", -1) if c is not None and c["op"] in P2P_OPS else -1
        if c is None or peer < 0 or s["rank"] in said:
            continue
        head = f"rank {s['rank']} waits in {call_text(c)}"
        other = places.get(peer)
        back = other.get("inside") if other is not None else None
        if back is not None and back["op"] == c["op"] and back.get("peer") == s["rank"]:
            said |= {s["rank"], peer}
            receive = c["op"] in ("recv", "irecv")
            verb, nor = ("receive from", "sends") if receive else ("send to", "receives")
            out.append(
                f"ranks {s['rank']}, {peer} each wait to {verb} the other ({head}; rank {peer} "
                f"in {call_text(back)}): a point-to-point deadlock, neither {nor}"
            )
        elif other is not None:
            out.append(f"{head}; {stuck_text(other)}")
    return out


def step_words(begun: int, their: bool = False) -> str:
    """Where a rank is in its training, in the page header's terms: steps are numbered from 1,
    and a step is *reported* once its events came, which a rank sends as its next step begins.
    The heartbeat counts steps begun, so a rank in its step 4 has reported 3, and the header
    then reads "step … of 3 reported" (one count of steps, said on both)."""
    if begun < 1:
        return ""
    return f", in or after {'their' if their else 'its'} step {begun} ({begun - 1} reported)"


def stuck_text(s: StuckRank, who: str | None = None, held: str | None = None) -> str:
    """Where one rank is, ``rank N: …``; ``who`` and ``held`` replace its name and how long it
    has been inside its collective (a line for several ranks at once)."""
    who = who if who is not None else f"rank {s['rank']}"
    step = step_words(s.get("step", 0), their=who.startswith("ranks "))
    if s["state"] == "inside":
        since = s["inside"].get("for_s")
        if held is None:
            held = f" for {since:.1f} s" if since is not None else ""
        return f"{who}: inside {call_text(s['inside'])}{held}{step}"
    where = {"gone": "gone (its process vanished)", "ended": "finished its training"}
    if s["state"] in where:
        return f"{who}: {where[s['state']]}{step}"
    last = f"; its last communication: {call_text(s['last'])}" if "last" in s else ""
    frame = running_frame(s)
    at = f"; running {frame}" if frame else ""
    return f"{who}: in no communication{step}{at}{last}"


def running_frame(s: StuckRank) -> str:
    """The line a rank in no collective runs: its innermost frame in the script's own files
    (the stack's outermost file, and where its collectives were issued), with the innermost
    frame of all beside it. A thread's ``wait`` in threading.py names no line of the script."""
    stack = s.get("stack") or []
    if not stack or ".py:" not in stack[-1]:
        return stack[-1] if stack else ""
    calls = [c["site"] for c in (s.get("last"), s.get("inside")) if c is not None]
    mine = {frame_file(frame) for frame in (stack[0], *calls)}
    own = next(f for f in reversed(stack) if frame_file(f) in mine)  # stack[0] is one
    return own if own == stack[-1] else f"{own} (inside {stack[-1]})"


_FRAME = re.compile(r"(.*?):\d+ in ")


def frame_file(frame: str) -> str:
    """The file of a frame written ``train.py:33 in main: code``: all before the colon of its
    line number (a file's name may hold a colon of its own)."""
    m = _FRAME.match(frame)
    return m.group(1) if m else frame


def rank_list(ranks: list[int]) -> str:
    """``rank 3``, ``ranks 0, 2–7``: runs of consecutive ranks as a range."""
    runs: list[list[int]] = []
    for r in sorted(ranks):
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    parts = [f"{g[0]}–{g[-1]}" if len(g) > 2 else ", ".join(map(str, g)) for g in runs]
    return ("ranks " if len(ranks) > 1 else "rank ") + ", ".join(parts)


def _held_range(times: list[float]) -> str:
    if not times:
        return ""
    low, high = f"{min(times):.1f}", f"{max(times):.1f}"
    return f" for {low} s" if low == high else f" for {low}–{high} s"


def place_lines(h: WatchHang) -> list[str]:
    """Each rank's place, ranks in the same place on one line: at 8 ranks, seven inside one
    all-reduce and one asleep read as two lines, and the odd one out is not lost among eight."""
    groups: dict[str, list[StuckRank]] = {}
    for s in h.ranks:
        groups.setdefault(stuck_text(s, who="", held=""), []).append(s)
    out = []
    for group in groups.values():  # one rank: "rank 3", its own time
        times = [s["inside"]["for_s"] for s in group if "for_s" in s.get("inside", {})]
        held = _held_range(times)
        out.append(stuck_text(group[0], who=rank_list([s["rank"] for s in group]), held=held))
    return out


def mismatch(h: WatchHang) -> str:
    """The ranks inside collectives that do not match (op, shapes, dtypes or root), in words; "" if
    none. Point-to-point calls are two ranks' own: see :func:`p2p_waits`."""
    inside = list(filter(_collective, h.ranks))
    if len({_agreed(s["inside"]) for s in inside}) < 2:
        return ""
    parts = [f"rank {s['rank']} {call_text(s['inside'])}" for s in inside]
    return "the ranks' collectives do not match: " + "; ".join(parts)


def missing(h: WatchHang) -> tuple[CommCall | None, list[int]]:
    """The collective most ranks are inside, and the ranks not in it."""
    groups: dict[tuple, list[StuckRank]] = {}
    for s in filter(_collective, h.ranks):
        groups.setdefault((*_key(s["inside"]), s["inside"]["seq"]), []).append(s)
    if not groups:
        return None, []
    best = max(groups.values(), key=lambda g: (len(g), -g[0]["rank"]))
    inside = {s["rank"] for s in best}
    return best[0]["inside"], [s["rank"] for s in h.ranks if s["rank"] not in inside]


def hang_lines(h: WatchHang, stacks: bool = True) -> list[str]:
    """The hang in words: a headline, who is missing, what does not match, each rank's place
    (ranks in the same place on one line), and (``stacks``) each rank's Python stack,
    innermost last."""
    lines = [f"✗ hang: no rank has moved for {h.stalled_s:.1f} s (threshold {h.threshold_s:.1f} s)"]
    # the verdicts before the places: on a short stage they are what must not be cut
    call, absent = missing(h)
    if call is not None and absent:
        who = ", ".join(f"rank {r}" for r in absent)
        lines.append(f"  missing from {call['op']} #{call['seq']}: {who}")
    lines += ["  ✗ " + line for line in p2p_waits(h)]
    lines += ["  " + line for line in group_waits(h)]
    bad = mismatch(h)
    if bad:
        lines.append("  ✗ " + bad)
    lines += ["  " + line for line in place_lines(h)]
    if stacks:
        for s in h.ranks:
            if s.get("stack"):
                lines.append(f"  rank {s['rank']}'s stack (innermost last):")
                lines += [f"    {frame}" for frame in s["stack"]]
    return lines
