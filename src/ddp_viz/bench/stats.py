"""Small statistics the benchmarks share: steady per-step time, frame-interval percentiles."""

from __future__ import annotations

import itertools
import json
import subprocess
from typing import Any

STEADY_FROM = 10


def rotated(names: list[str], round_: int) -> list[str]:
    """The arms in the order round ``round_`` runs them: each round starts with the next arm,
    so a drift within rounds (the first run of a round came out slower in some invocations)
    favours none."""
    k = round_ % len(names)
    return names[k:] + names[:k]


def steady_per_step(starts: list[float]) -> float:
    """Seconds per step from ``STEADY_FROM`` to the last step's start."""
    n = len(starts) - 1 - STEADY_FROM
    if n < 1:
        raise ValueError(f"need more than {STEADY_FROM + 1} steps, got {len(starts)}")
    return (starts[-1] - starts[STEADY_FROM]) / n


def percentiles(intervals: list[float]) -> dict[str, float | None]:
    import numpy as np

    iv = np.array(intervals) * 1000
    return {
        "frame_p50_ms": float(np.percentile(iv, 50)) if len(iv) else None,
        "frame_p99_ms": float(np.percentile(iv, 99)) if len(iv) else None,
        "frames": len(iv),
    }


def p99_between(ticks: list[float], start: float, end: float) -> float | None:
    """The 99th percentile interval, in ms, of the ticks between ``start`` and ``end``."""
    inside = [t for t in ticks if start <= t <= end]
    intervals = [b - a for a, b in itertools.pairwise(inside)]
    return percentiles(intervals)["frame_p99_ms"]


def probe_figures(
    floor: subprocess.Popen, probe: subprocess.CompletedProcess, what: str
) -> dict[str, Any]:
    """A window probe's JSON figures, with the p99 of the bare Qt timer that ran beside it
    (``floor``, terminated by the caller) over the same span."""
    ticks = json.loads(floor.communicate(timeout=60)[0].strip().splitlines()[-1])["ticks"]
    line = next((ln for ln in probe.stdout.splitlines() if ln.startswith("{")), None)
    if line is None:
        raise RuntimeError(f"{what} probe failed: {probe.stderr[-800:]}")
    data = json.loads(line)
    data["bare_timer_p99_ms"] = p99_between(ticks, data["t_start"], data["t_end"])
    return data
