"""Take a recorded run away: its events as JSON lines, and a Chrome trace of the phases.

Pure model layer. The trace is the Trace Event Format (``traceEvents``) that Perfetto and
chrome://tracing open: one process for the run, one thread (row) per rank, and per step the
four phases forward, backward, all-reduce (inside backward) and optimizer step, on the machine's
shared monotonic clock.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ddp_viz.model import protocol, registry
from ddp_viz.model.recording_format import header, strict
from ddp_viz.model.timeline import RunRecord

TRACE_PHASES = ("forward", "backward", "allreduce", "step")
TRACE_NAMES = {
    "forward": "forward",
    "backward": "loss.backward()",
    "allreduce": "all-reduce (DDP hook)",
    "step": "optimizer.step()",
}


def events_jsonl(record: RunRecord, lesson: str) -> str:
    """The run's recording: the header (the run belongs to ``lesson``, or ``"watched"``), then
    its events, one JSON object per line, as the engine sent them."""
    return "".join(protocol.encode(e) + "\n" for e in (header(lesson), *record.events))


def traceable(record: RunRecord) -> bool:
    """Whether the run has timings a Chrome trace can show (a comm-hooks run has none): the
    window offers the export only then, instead of refusing it after a file was named."""
    try:
        chrome_trace(record)
    except ValueError:
        return False
    return True


def chrome_trace(record: RunRecord) -> dict[str, Any]:
    """The run as a Chrome trace; each span's ``step`` counts from 1, as the stage does."""
    spans = [
        (r, st.step, phase, start, end)
        for st in record.steps
        for r, rs in st.ranks.items()
        for phase in TRACE_PHASES
        for start, end in rs.spans.get(phase, [])
        if math.isfinite(start) and math.isfinite(end)  # a span still open has no end
    ]
    moves = [m for k in registry.kinds() if k.trace_spans for m in k.trace_spans(record)]
    if not spans and not moves:
        raise ValueError("the run has no timing events to trace")
    t0 = min([s[3] for s in spans] + [m["start"] for m in moves])
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

    def us(t: float) -> float:
        return round((t - t0) * 1e6, 3)

    buckets = {
        (r, st.step, b["launched"]): b
        for st in record.steps
        for r, rs in st.ranks.items()
        for b in rs.bucket_spans
    }
    for r, step, phase, start, end in sorted(spans, key=lambda s: (s[0], s[3], s[2])):
        args: dict[str, Any] = {"step": step + 1, "rank": r}
        name = TRACE_NAMES[phase]
        bucket = buckets.get((r, step, start)) if phase == "allreduce" else None
        if bucket is not None:  # one span per DDP bucket, named by it
            name = f"bucket {bucket['index']} all-reduce"
            args |= {
                "bucket": bucket["index"],
                "bytes": bucket["bytes"],
                "params": bucket["params"],
            }
        events.append(
            {
                "name": name,
                "cat": phase,
                "ph": "X",
                "pid": pid,
                "tid": r,
                "ts": us(start),
                "dur": round(max(0.0, end - start) * 1e6, 3),
                "args": args,
            }
        )
    for m in moves:  # spans a kind of run adds (every send of a hand-made all-reduce)
        events.append(
            {
                "name": m["name"],
                "cat": m["cat"],
                "ph": "X",
                "pid": pid,
                "tid": m["rank"],
                "ts": us(m["start"]),
                "dur": round(max(0.0, m["end"] - m["start"]) * 1e6, 3),
                "args": m["args"],
            }
        )
    for st in record.steps:  # a tick when each parameter's gradient became ready
        for r, rs in st.ranks.items():
            for param, t in rs.ready:
                events.append(
                    {
                        "name": f"{param} grad ready",
                        "cat": "ready",
                        "ph": "i",
                        "s": "t",
                        "pid": pid,
                        "tid": r,
                        "ts": us(float(t)),
                        "args": {"step": st.step + 1, "rank": r, "param": param},
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
    # strict JSON: a non-finite number left anywhere becomes its word, never a bare NaN token
    return json.dumps(strict(chrome_trace(record)), indent=1, allow_nan=False)
