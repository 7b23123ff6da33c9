"""What the spawn start method costs against the forkserver (``ddp-viz bench --only spawn``).

Windows and macOS start every rank as a fresh interpreter that imports torch itself; Linux
forks ranks from a forkserver that imported it once (ddp_viz/platform.py). Both are measured
here, interleaved so they see the same machine load, with ``DDP_VIZ_START_METHOD`` set for the
engine each one starts: cold (engine start → first averaged gradient, the window's "Starting
ranks" included) and warm (Run on an engine whose ranks are up).
"""

from __future__ import annotations

import contextlib
import os
import statistics
from collections.abc import Callable, Iterator
from typing import Any

from ddp_viz.platform import START_METHOD_VAR, StartMethod

SIZES = (2, 4)


@contextlib.contextmanager
def start_method(method: StartMethod) -> Iterator[None]:
    """Engines started inside this block start their ranks with ``method``."""
    saved = os.environ.get(START_METHOD_VAR)
    os.environ[START_METHOD_VAR] = method.value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(START_METHOD_VAR, None)
        else:
            os.environ[START_METHOD_VAR] = saved


def spawn_cost(
    fig: dict[str, Any],
    row: Callable[..., None],
    reps: int,
    cold_engine: Callable[[int], float],
    warm_runs: Callable[[tuple[int, ...], int], dict[int, list[float]]],
) -> None:
    """Cold and warm figures per world size under each start method, and spawn ÷ forkserver,
    measured with the bench's own ``cold_engine`` and ``warm_runs``."""
    methods = (StartMethod.FORKSERVER, StartMethod.SPAWN)
    cold: dict[tuple[StartMethod, int], list[float]] = {}
    warm: dict[tuple[StartMethod, int], list[float]] = {}
    for _ in range(max(1, reps - 2)):
        for n in SIZES:
            for method in methods:
                with start_method(method):
                    cold.setdefault((method, n), []).append(cold_engine(n))
    for method in methods:
        with start_method(method):
            for n, times in warm_runs(SIZES, max(3, reps * 2)).items():
                warm[(method, n)] = times
    for n in SIZES:
        for what, table in (("cold", cold), ("warm", warm)):
            f, s = (statistics.median(table[(m, n)]) for m in methods)
            fig[f"{what}_forkserver_{n}_s"], fig[f"{what}_spawn_{n}_s"] = f, s
            fig[f"spawn_{what}_ratio_{n}"] = s / f
            shown = (lambda v: f"{v:.2f} s") if what == "cold" else (lambda v: f"{v * 1000:.0f} ms")
            row(
                f"spawn, {what}, {n} ranks",
                shown(s),
                f"forkserver {shown(f)}, spawn ÷ forkserver {s / f:.2f}",
            )
