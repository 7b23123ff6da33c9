"""Inside a watched rank: its last word when it fails, and nothing lost when it exits.

- **An uncaught exception** (``sys.excepthook``, ``threading.excepthook``) is sent before the
  process exits as a :class:`~ddp_viz.kinds.watched.events.WatchFailure`: its type and message,
  the innermost frame in the user's code (not torch's, not ddp-viz's), the step, the collective
  the rank was inside, the parameters that got no gradient in the step before, and the time
  (the listener takes the earliest as the cause). A rank whose DDP failed to build (a model that
  differs between ranks) has no watch yet: it connects just to say so.
- **ddp-viz's own frames** (the comm hook's wrapper, the ``backward`` wrapper) are taken out of
  the traceback Python prints, so it ends in the user's code and torch's, as unwatched.
- **``os._exit``** skips ``atexit``: it is wrapped to send what the rank has not sent (its last
  step, its last word) first, within ``sender.CLOSE_S``; so is ``destroy_process_group`` for the
  last step's tensors (it is flushed before the process group goes).

Nothing here raises into the script.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import traceback
import types
from typing import Any

import ddp_viz
from ddp_viz.kinds.watched import wire
from ddp_viz.kinds.watched.events import WatchFailure
from ddp_viz.kinds.watched.watch.calls import _SKIP, CALLS
from ddp_viz.model import protocol

RUN = 1
OURS = os.path.dirname(os.path.abspath(ddp_viz.__file__)) + os.sep
MAX_MESSAGE = 4000
STACK_FRAMES = 12
OURS_LINE = (
    "ddp-viz watch: the ddp_viz frames named in the message above are the watch passing "
    "DDP's gradient all-reduce through its comm hook; the error is DDP's, as unwatched"
)
# what a rank holds for its failure report: its watch (once DDP was built), the model's
# parameters while DDP is being built, the clock the watch stamps times with
# (a process forked from the rank, a DataLoader's worker, inherits the hooks: ``pid`` tells
# it is not the rank, and it says nothing)
STATE: dict[str, Any] = {"watch": None, "params": [], "now": None, "sent": False, "pid": 0}


def _frames(tb: types.TracebackType | None) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(tb)) if tb is not None else []


def user_frames(tb: types.TracebackType | None) -> list[traceback.FrameSummary]:
    """The traceback's frames in the user's code: neither torch's nor ddp-viz's."""
    return [fs for fs in _frames(tb) if not fs.filename.startswith(_SKIP)]


def where(fs: traceback.FrameSummary) -> str:
    return f"{os.path.basename(fs.filename)}:{fs.lineno} in {fs.name}"


def without_ours(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The same traceback without ddp-viz's frames (rebuilt: a traceback's links are fixed)."""
    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(OURS):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _strip_chain(exc: BaseException | None, seen: set[int] | None = None) -> None:
    seen = seen if seen is not None else set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = without_ours(exc.__traceback__)
        _strip_chain(exc.__cause__, seen)
        exc = exc.__context__


def failure_event(
    exc: BaseException, tb: types.TracebackType | None, now: float, thread: str = ""
) -> WatchFailure:
    watch = STATE["watch"]
    frames = user_frames(tb)
    stack = [f"{where(fs)}: {fs.line.strip()}" if fs.line else where(fs) for fs in frames]
    # the collective the main thread is in, or the one the error came out of
    inside = None if thread else CALLS.inside() or CALLS.raised_from(exc)
    rank = watch.rank if watch is not None else int(os.environ.get("RANK", "0") or 0)
    return WatchFailure(
        RUN,
        rank,
        watch.heart.begun if watch is not None else 0,
        now,
        type(exc).__name__,
        str(exc)[:MAX_MESSAGE],
        where(frames[-1]) if frames else "?",
        stack[-STACK_FRAMES:],
        inside.word() if inside is not None else None,
        list(watch.no_grad_last) if watch is not None else [],
        list(STATE["params"]),
        thread,
    )


def report(exc: BaseException, tb: types.TracebackType | None, now: float) -> None:
    """Send the failure (once per process) and close the watch: its last step, its last word."""
    if STATE["sent"] or os.getpid() != STATE["pid"]:
        return
    STATE["sent"] = True
    line = protocol.encode(failure_event(exc, tb, now))
    watch = STATE["watch"]
    if watch is not None and watch.sender.alive:
        watch.sender.send(line)
        watch.close()
    elif watch is None and os.environ.get(wire.ADDR_ENV):
        _send_alone(line)


def report_thread(
    exc: BaseException, tb: types.TracebackType | None, now: float, name: str
) -> None:
    """Send another thread's uncaught error; the rank goes on, and so does its watch (a rank
    whose DDP is not built yet has none: its thread's error is Python's to print alone)."""
    watch = STATE["watch"]
    if os.getpid() != STATE["pid"] or watch is None or not watch.sender.alive:
        return
    watch.sender.send(protocol.encode(failure_event(exc, tb, now, name)))


def _send_alone(line: str) -> None:
    """No watch in this process (its DDP never got built): connect just to say it."""
    from ddp_viz.kinds.watched.watch.sender import Sender

    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    rank = int(os.environ.get("RANK", "0") or 0)

    def hello() -> wire.Hello:
        clock = STATE["now"]() if STATE["now"] is not None else 0.0
        host = os.environ.get("DDP_VIZ_HOST") or socket.gethostname()
        local = int(os.environ.get("LOCAL_RANK", rank))
        return wire.Hello(host, os.getpid(), rank, local, world, clock, [])

    sender = Sender(os.environ[wire.ADDR_ENV], os.environ.get(wire.TOKEN_ENV, ""), hello)
    sender.send(line)
    sender.close()


def _now() -> float:
    clock = STATE["now"]
    return clock() if clock is not None else 0.0


def install(now: Any) -> None:
    """The process's hooks, once (``now``: the watch's clock)."""
    if STATE["now"] is not None:
        return
    STATE["now"], STATE["pid"] = now, os.getpid()
    before = sys.excepthook

    def excepthook(kind: type, exc: BaseException, tb: types.TracebackType | None) -> None:
        at = _now()
        try:
            _strip_chain(exc)
            tb = exc.__traceback__
        except Exception:
            pass
        before(kind, exc, tb)  # the traceback first, as unwatched, then the report
        if OURS in str(exc):  # torch wrote our frames into its message: say what they are
            print(OURS_LINE, file=sys.stderr, flush=True)
        # a KeyboardInterrupt too (the doctor leaves out those of a run the user stopped);
        # never an error of ours into the script's own exit
        with contextlib.suppress(Exception):
            report(exc, tb, at)

    sys.excepthook = excepthook
    threads_before = threading.excepthook

    def thread_hook(args: Any) -> None:
        at = _now()
        threads_before(args)
        try:
            if args.exc_value is None or isinstance(args.exc_value, SystemExit):
                return
            if args.thread is threading.main_thread():
                report(args.exc_value, args.exc_traceback, at)
            else:
                name = args.thread.name if args.thread is not None else "?"
                report_thread(args.exc_value, args.exc_traceback, at, name)
        except Exception:
            pass

    threading.excepthook = thread_hook
    _wrap_exit()


def _wrap_exit() -> None:
    exit_now = os._exit
    if getattr(exit_now, "_ddp_viz_wrapped", False):
        return

    def _exit(status: int) -> None:
        watch = STATE["watch"]
        try:
            if watch is not None and os.getpid() == STATE["pid"]:
                watch.close()  # within the sender's CLOSE_S
        except Exception:
            pass
        exit_now(status)

    _exit._ddp_viz_wrapped = True  # type: ignore[attr-defined]
    os._exit = _exit


def wrap_destroy(dist: Any) -> None:
    """``destroy_process_group`` sends the last step first (its copies need no process group,
    but a script that ends with ``os._exit`` right after must not lose it)."""
    destroy = getattr(dist, "destroy_process_group", None)
    if destroy is None or getattr(destroy, "_ddp_viz_wrapped", False):
        return

    def destroy_process_group(*args: Any, **kwargs: Any) -> Any:
        watch = STATE["watch"]
        try:
            if watch is not None:
                watch.flush()
        except Exception:
            pass
        return destroy(*args, **kwargs)

    destroy_process_group._ddp_viz_wrapped = True  # type: ignore[attr-defined]
    dist.destroy_process_group = destroy_process_group
