"""Take a recorded run away: its events as JSON lines, and a Chrome trace of the phases.

Pure model layer. The trace is the Trace Event Format (``traceEvents``) that Perfetto and
chrome://tracing open: one process for the run, one thread (row) per rank, and per step the
four phases forward, backward, all-reduce (inside backward) and optimizer step, on the machine's
shared monotonic clock.
"""

from __future__ import annotations

import json
from typing import Any

from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord

TRACE_PHASES = ("forward", "backward", "allreduce", "step")
TRACE_NAMES = {
    "forward": "forward",
    "backward": "loss.backward()",
    "allreduce": "all-reduce (DDP hook)",
    "step": "optimizer.step()",
}


def events_jsonl(record: RunRecord) -> str:
    """The run's events, one JSON object per line, exactly as the engine sent them."""
    return "".join(protocol.encode(e) + "\n" for e in record.events)


def chrome_trace(record: RunRecord) -> dict[str, Any]:
    spans = [
        (r, st.step, phase, start, end)
        for st in record.steps
        for r, rs in st.ranks.items()
        for phase in TRACE_PHASES
        for start, end in rs.spans.get(phase, [])
    ]
    if not spans:
        raise ValueError("the run has no timing events to trace")
    t0 = min(s[3] for s in spans)
    pid = record.run or 0
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"DDP run {pid}"}}
    ]
    for r in range(record.world_size):
        os_pid = record.pids.get(r)
        label = f"rank {r}" + (f" (pid {os_pid})" if os_pid else "")
        events.append(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": r, "args": {"name": label}}
        )
        events.append(
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": pid,
                "tid": r,
                "args": {"sort_index": r},
            }
        )
    for r, step, phase, start, end in sorted(spans, key=lambda s: (s[0], s[3], s[2])):
        events.append(
            {
                "name": TRACE_NAMES[phase],
                "cat": phase,
                "ph": "X",
                "pid": pid,
                "tid": r,
                "ts": round((start - t0) * 1e6, 3),
                "dur": round(max(0.0, end - start) * 1e6, 3),
                "args": {"step": step, "rank": r},
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "source": "ddp-viz",
            "world_size": record.world_size,
            "scenario": record.scenario,
            "status": record.status,
        },
    }


def chrome_trace_json(record: RunRecord) -> str:
    return json.dumps(chrome_trace(record), indent=1)
