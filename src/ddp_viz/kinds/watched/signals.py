"""What the signal that ended a rank means, in words (pure).

torchrun sends SIGTERM to the other ranks once one failed, so a SIGTERM is usually a
consequence. One that torchrun saw before it had stopped any rank (the launcher's bookkeeping:
``WatchExit.first``) came from outside: a job scheduler's preemption or time limit, a
``kill``. That rank is then the cause, named with where its SIGTERM came from.
"""

from __future__ import annotations

_SIGNALS = {
    "SIGKILL": "SIGKILL: killed outright (the kernel's OOM killer sends it when memory runs out)",
    "SIGTERM": "SIGTERM: asked to stop (torchrun sends it to the other ranks once one failed)",
    "SIGSEGV": "SIGSEGV: a crash in native code",
    "SIGABRT": "SIGABRT: aborted by native code (gloo aborts a rank that receives more bytes "
    "than its own tensor holds: a collective whose tensors differ in shape or dtype between "
    "ranks, this one's or a peer's; see its \"Received data size doesn't match\" line)",
    "SIGBUS": "SIGBUS: a bad memory access (often shared memory too small)",
    "SIGINT": "SIGINT: interrupted (Ctrl-C to it alone, or a KeyboardInterrupt it raised)",
}
OUTSIDE = "not torchrun's, which had stopped no rank yet: a job scheduler's or a kill"


def signal_words(signal: str, first: bool) -> str:
    """``signal`` and what it means; ``first``: torchrun saw this rank end before it stopped
    any (a SIGTERM then is not its own)."""
    if signal == "SIGTERM" and first:
        return f"SIGTERM: asked to stop, {OUTSIDE}"
    return _SIGNALS.get(signal, signal)
