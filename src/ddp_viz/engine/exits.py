"""How a rank process ended, in words for the log and the run's failure reason."""

from __future__ import annotations

import signal


def describe_exit(code: int | None) -> str:
    if code is None:
        return "exited"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"
