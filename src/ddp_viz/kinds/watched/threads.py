"""Another thread's uncaught error on a rank, read by the doctor (pure).

Python prints it and goes on: the thread ended, not the rank. It matters when the rank then
waits for what the thread would have made (a prefetching producer that died leaves the main
thread in ``queue.get()`` for ever): the hang names the rank, and this names why.
"""

from __future__ import annotations

from ddp_viz.kinds.watched.doctor import missing
from ddp_viz.kinds.watched.events import WatchFailure, WatchHang
from ddp_viz.kinds.watched.failures import first_line


def when(step: int) -> str:
    """Where the rank's loop was when its thread raised."""
    if step < 1:
        return "before the rank's first step"
    return f"while the rank was in its step {step} (loop index {step - 1})"


def thread_text(f: WatchFailure) -> str:
    said = first_line(f.message)
    return (
        f"✗ rank {f.rank}'s thread {f.thread!r} raised {f.type}"
        + (f": {said}" if said else "")
        + f" — at {f.site}, {when(f.step)}; the thread ended, the rank went on without it"
    )


def first_each(threads: list[WatchFailure]) -> list[WatchFailure]:
    """Each rank's first error of each thread, earliest first."""
    seen: set[tuple[int, str]] = set()
    out = []
    for f in sorted(threads, key=lambda f: (f.at, f.rank)):
        if (f.rank, f.thread) not in seen:
            seen.add((f.rank, f.thread))
            out.append(f)
    return out


def hang_note(h: WatchHang, threads: list[WatchFailure]) -> str:
    """The verdict's tail when a rank the hang names had lost a thread to an error."""
    _, absent = missing(h)
    named = set(absent) | {s["rank"] for s in h.ranks if s["state"] == "outside"}
    for f in first_each(threads):
        if f.rank in named:
            return f"; rank {f.rank}'s thread {f.thread!r} had raised {f.type} at {f.site}"
    return ""


def alone_verdict(threads: list[WatchFailure]) -> str:
    """The verdict when a thread's error is all the doctor found."""
    f = first_each(threads)[0]
    return (
        f"ddp-viz verdict: no hang, crash, NaN or desync, but rank {f.rank}'s thread "
        f"{f.thread!r} raised {f.type} at {f.site} (the rank went on without it)"
    )
