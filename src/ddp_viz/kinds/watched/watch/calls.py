"""Inside a watched script's processes: every collective the rank issues, numbered.

:func:`install` wraps the public functions of ``torch.distributed`` that talk to other ranks
(``all_reduce``, ``barrier``, ``send`` …), so a script that calls ``dist.all_reduce(t)`` is
seen; DDP's own gradient buckets are entered by the comm hook (:mod:`.capture`). Each call
gets the rank's next sequence number, its op, its tensors' shapes and the script's line that
issued it (the first frame outside torch and ddp-viz). What is recorded is only where the rank
is now (:attr:`Calls.inside`) and the last call it issued: no list grows with the run, and a
call costs a few microseconds (a frame walk, a shape read) whatever its tensors' size.

A call with ``async_op=True`` is inside only while it is being issued: its ``wait()`` is the
script's own and is not followed (its stack still says where it waits).
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

import ddp_viz
from ddp_viz.kinds.watched.events import P2P_OPS, CommCall

# every public function of torch.distributed that another rank must match
OPS = (
    "all_reduce", "broadcast", "barrier", "monitored_barrier", "reduce", "all_gather",
    "all_gather_into_tensor", "all_gather_object", "gather", "gather_object", "scatter",
    "scatter_object_list", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "broadcast_object_list", "send", "recv", "isend", "irecv",
    "batch_isend_irecv",
)  # fmt: skip
MAX_SIZES = 4  # shapes kept per call (a list of 64 tensors: its first four, and its length)
# frames of these folders are not the script's: torch's, and ddp-viz's own
_SKIP = (
    os.path.dirname(torch.__file__ or "") + os.sep,
    os.path.dirname(os.path.abspath(ddp_viz.__file__)) + os.sep,
)


def call_site(depth: int = 2) -> str:
    """``file:line in function`` of the first frame outside torch and ddp-viz: the script's
    line that issued the collective (``loss.backward()`` for DDP's buckets)."""
    f = sys._getframe(depth)
    while f is not None and f.f_code.co_filename.startswith(_SKIP):
        f = f.f_back
    if f is None:
        return "?"
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno} in {f.f_code.co_name}"


# the argument naming the one other rank of a call, and its place: a point-to-point call's
# peer, a rooted collective's root (torch.distributed's signatures)
OTHER = {
    "send": ("dst", 1), "isend": ("dst", 1), "recv": ("src", 1), "irecv": ("src", 1),
    "broadcast": ("src", 1), "reduce": ("dst", 1), "gather": ("dst", 2), "scatter": ("src", 2),
    "broadcast_object_list": ("src", 1), "gather_object": ("dst", 2),
    "scatter_object_list": ("src", 2),
}  # fmt: skip


def peer_of(op: str, args: tuple, kwargs: dict[str, Any]) -> int | None:
    """The one other rank a call names: a point-to-point call's (``send(tensor, dst)``; -1 for
    a recv from any rank, or a batch of several) or a rooted collective's root
    (``broadcast(tensor, src)``; -1 if not given); None for any other collective."""
    if op not in OTHER:
        return -1 if op in P2P_OPS else None
    name, at = OTHER[op]
    peer = kwargs.get(name, args[at] if len(args) > at else None)
    if peer is None:  # the rank within the group, in torch's newer spelling
        peer = kwargs.get(f"group_{name}")
    return peer if isinstance(peer, int) else -1


def _tensors(args: tuple) -> list[torch.Tensor]:
    """The tensors of a call's first argument (a tensor, or a list of them: its first few)."""
    first = args[0] if args else None
    many = first[:MAX_SIZES] if isinstance(first, list | tuple) else [first]
    return [t for t in many if isinstance(t, torch.Tensor)]


def dtypes_of(args: tuple) -> list[str]:
    """The dtypes of the tensors :func:`sizes_of` gives the shapes of (``float64``), or none
    when every one is float32 (torch's default, and most calls': a word saved a beat)."""
    names = [str(t.dtype).removeprefix("torch.") for t in _tensors(args)]
    return names if any(n != "float32" for n in names) else []


def sizes_of(args: tuple) -> list[list[int]]:
    """The shapes of a call's tensors: its first argument's (a tensor, or a list of them: its
    first few, then the list's length when it holds more)."""
    shapes = [list(t.shape) for t in _tensors(args)]
    first = args[0] if args else None
    many = isinstance(first, list | tuple) and len(first) > MAX_SIZES
    return shapes + ([[len(first)]] if many else [])  # type: ignore[arg-type]


@dataclass
class Call:
    seq: int
    op: str
    site: str
    sizes: list[list[int]]
    started: float
    bucket: int = -1
    step: int = -1
    peer: int | None = None  # a point-to-point call's other rank, a rooted one's root (-1: any)
    dtypes: list[str] = field(default_factory=list)  # dtypes_of: none if all are float32
    group: tuple[int, ...] = ()  # a subgroup's ranks (global); () for every rank's
    key: int = 0  # its number among the calls this process opened (the open calls' key)

    def word(self, now: float | None = None) -> CommCall:
        out = CommCall(seq=self.seq, op=self.op, site=self.site, sizes=self.sizes)
        if self.bucket >= 0:
            out["bucket"] = self.bucket
        if self.step >= 0:
            out["step"] = self.step
        if self.peer is not None:
            out["peer" if self.op in P2P_OPS else "root"] = self.peer
        if self.dtypes:
            out["dtypes"] = self.dtypes
        if self.group:
            out["group"] = list(self.group)
        if now is not None:
            out["for_s"] = max(0.0, now - self.started)
        return out


@dataclass
class Calls:
    """Where this process's rank is: the calls it is inside, the last it issued, and a
    counter that moves whenever a call starts or ends (the heartbeat's sign of life)."""

    seq: int = 0
    p2p: int = 0  # point-to-point calls, numbered apart: the other ranks make none of them
    # a subgroup's collectives, numbered apart by group: the ranks outside it make none
    grouped: dict[tuple[int, ...], int] = field(default_factory=dict)
    progress: int = 0
    last: Call | None = None
    open: dict[int, Call] = field(default_factory=dict)  # its own number -> a call not over
    opened: int = 0
    step: int = -1  # the step DDP is on (the capture sets it)
    # the heartbeat's wake-up: a script's own collective beats at once (at most every 50 ms),
    # so a rank aborted inside it is known to have been there
    wake: Callable[[], None] | None = None
    # the last call an error came out of, with the error: the failure report's call once the
    # error has left it (gloo's "Connection reset" from a script's all_reduce)
    raised: tuple[Call, BaseException] | None = None

    def enter(
        self,
        op: str,
        sizes: list[list[int]],
        site: str,
        bucket: int = -1,
        peer: int | None = None,
        dtypes: list[str] | None = None,
        group: tuple[int, ...] = (),
    ) -> Call:
        if op in P2P_OPS:
            self.p2p += 1
            seq = self.p2p
        elif group:
            seq = self.grouped[group] = self.grouped.get(group, 0) + 1
        else:
            self.seq += 1
            seq = self.seq
        self.raised = None  # a call after an error: the script handled it (and its frames go)
        call = Call(seq, op, site, sizes, time.monotonic(), bucket, self.step, peer, dtypes or [])
        call.group = () if op in P2P_OPS else group
        self.opened += 1
        call.key = self.opened
        self.open[call.key] = call
        self.last = call
        self.progress += 1
        if bucket < 0 and self.wake is not None:
            self.wake()
        return call

    def leave(self, call: Call) -> None:
        self.open.pop(call.key, None)
        self.progress += 1

    def raised_from(self, exc: BaseException) -> Call | None:
        """The call ``exc`` (or an error it was raised from or during) came out of."""
        if self.raised is None:
            return None
        call, err = self.raised
        seen: set[int] = set()
        e: BaseException | None = exc
        while e is not None and id(e) not in seen:
            if e is err:
                return call
            seen.add(id(e))
            e = e.__cause__ or e.__context__
        return None

    def inside(self) -> Call | None:
        """The oldest call not over: what the rank waits on."""
        try:
            return min(self.open.values(), key=lambda c: c.key, default=None)
        except RuntimeError:  # another thread changed the calls meanwhile: ask next beat
            return None


CALLS = Calls()
_ORIGINAL: dict[str, Any] = {}
_NESTED = threading.local()  # a call made from inside another (DDP's hook, object collectives)


def original(op: str) -> Any:
    """``torch.distributed``'s own function (the comm hook issues its bucket through it)."""
    return _ORIGINAL.get(op) or getattr(dist, op)


def _group_at(fn: Any) -> int:
    """Where ``fn`` takes its ``group`` among its positional arguments (-1: it takes none)."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return -1
    return names.index("group") if "group" in names else -1


_GROUPS: dict[int, tuple[Any, tuple[int, ...]]] = {}  # id -> the group (held), its ranks


def group_ranks(group: Any) -> tuple[int, ...]:
    """A subgroup's ranks (``dist.new_group([0, 1])``: (0, 1)); () for the default group, or
    a group of every rank, whose collectives every rank makes."""
    if group is None:
        return ()
    known = _GROUPS.get(id(group))
    if known is None or known[0] is not group:
        try:
            ranks = tuple(dist.get_process_group_ranks(group))
            ranks = () if len(ranks) == dist.get_world_size() else ranks
        except Exception:  # not a group torch knows: as the default one
            ranks = ()
        known = _GROUPS[id(group)] = (group, ranks)
    return known[1]


def _wrap(op: str, fn: Any) -> Any:
    at = _group_at(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if getattr(_NESTED, "on", False):
            return fn(*args, **kwargs)
        try:
            peer = peer_of(op, args, kwargs)
            group = kwargs.get("group", args[at] if 0 <= at < len(args) else None)
            call = CALLS.enter(
                op,
                sizes_of(args),
                call_site(),
                peer=peer,
                dtypes=dtypes_of(args),
                group=group_ranks(group),
            )
        except Exception:  # never into the script
            return fn(*args, **kwargs)
        _NESTED.on = True
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            CALLS.raised = (call, exc)  # the failure it ends in was inside this call
            raise
        finally:
            _NESTED.on = False
            CALLS.leave(call)

    wrapper._ddp_viz_wrapped = True  # type: ignore[attr-defined]
    return wrapper


class nested:
    """Calls made in this block are part of the one already entered (DDP's hook)."""

    def __enter__(self) -> None:
        self.was = getattr(_NESTED, "on", False)
        _NESTED.on = True

    def __exit__(self, *exc: object) -> None:
        _NESTED.on = self.was


def install() -> None:
    """Wrap ``torch.distributed``'s collectives, once per process."""
    for op in OPS:
        fn = getattr(dist, op, None)
        if fn is None or getattr(fn, "_ddp_viz_wrapped", False):
            continue
        _ORIGINAL[op] = fn
        setattr(dist, op, _wrap(op, fn))
