"""How many event lines the engine wrote for each run, for a reader to check it lost none.

With ``DDP_VIZ_SENT_LOG`` set to a file, the engine appends ``{"run": n, "sent": k}`` to it for
each run it ends: the event lines written for the run, its start and its end included. A
reader compares its own count with it (``ddp-viz bench --only stream`` reports the gap as
dropped). Unset, the engine writes nothing.
"""

from __future__ import annotations

import os

from ddp_viz.model import json_text, protocol

SENT_LOG_ENV = "DDP_VIZ_SENT_LOG"


def log_sent(run: int, sent: int) -> None:
    if path := os.environ.get(SENT_LOG_ENV):
        with open(path, "a", encoding="utf-8") as f:
            f.write(protocol.dumps({"run": run, "sent": sent}) + "\n")


def read_sent(path: str, run: int) -> int | None:
    """The engine's count for ``run`` in the file at ``path`` (None: the run has none)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [json_text.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return None
    return next((int(x["sent"]) for x in lines if x.get("run") == run), None)
