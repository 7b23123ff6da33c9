"""The watched run's benchmarks: its overhead on a torchrun step (``--only watch``:
``overhead``, with the script ``watched_train``), and its page's frames beside 8 ranks of a
198-tensor transformer (``--only watch-page``: ``page``, with the script ``real_models``).

``ddp-viz bench`` finds them here (``NAMES``, ``TARGETS``, :func:`run`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NAMES = ("watch", "watch-page")
# what --smoke does for them (the bench's help says it)
SMOKE_HELP = (
    "watch: one round of plain, watched and profiler on a tiny step; watch-page: 2 ranks, "
    "3 steps (checks they run)"
)
TARGETS = {
    "watch_ratio_mlp": ("watched ÷ plain torchrun step, buckets MLP", "≤ 1.05"),
    "watch_ratio_10m": ("watched ÷ plain torchrun step, 10 M parameters", "≤ 1.05"),
    "watch_gone_ratio_10m": ("listener gone ÷ plain step, 10 M parameters", "≤ 1.05"),
    "watch_over_profiler_10m": ("watched ÷ torch.profiler step, 10 M parameters", "< 1"),
    "watch_page_p99_ratio": ("watched page frame p99 ÷ a bare Qt timer's, 8 ranks", "≤ 2"),
}


def run(name: str, fig: dict[str, Any], row: Callable[..., None], reps: int, smoke: bool) -> None:
    """The watched torchrun step against the plain one (``name``: ``watch``); ``row`` prints a
    line of the table. Noisy: more rounds than ``reps``, the core's parts' count."""
    if name == "watch-page":
        _page(fig, row, smoke)
        return
    from ddp_viz.kinds.watched.bench.overhead import CASES, SMOKE, watch_overhead

    fig.update(watch_overhead(reps + 2, smoke))
    for key, what, _, _ in SMOKE if smoke else CASES:
        also = {
            "gone": "listener gone",
            "hook": "PyTorch's Python allreduce_hook in the script",
            "profiler": "torch.profiler",
        }
        prefix = {"gone": "watch_gone", "hook": "watch_hook", "profiler": "watch_profiler"}
        notes = [
            f"{said} {fig[f'{prefix[arm]}_ratio_{key}']:.3f}"
            for arm, said in also.items()
            if f"{prefix[arm]}_ratio_{key}" in fig
        ]
        row(
            f"torchrun step watched, {what}, {fig[f'watch_rounds_{key}']} rounds",
            f"{fig[f'watch_{key}_ms']:.2f} ms",
            f"plain {fig[f'watch_plain_{key}_ms']:.2f} ms, ratio "
            f"{fig[f'watch_ratio_{key}']:.3f}; " + "; ".join(notes),
        )
    if fig["watch_retries"]:
        row("torchrun runs ending in torch's teardown abort", str(fig["watch_retries"]))


def _page(fig: dict[str, Any], row: Callable[..., None], smoke: bool) -> None:
    """The watched page while 8 ranks of a 198-tensor transformer train 20 steps, against a
    bare Qt window's timer over the same seconds (one invocation: about 40 s)."""
    from pathlib import Path

    from ddp_viz.kinds.watched.bench.overhead import BIN
    from ddp_viz.kinds.watched.bench.page import measure

    ranks, steps = (2, 3) if smoke else (8, 20)
    script = str(Path(__file__).with_name("real_models.py"))
    torchrun = [str(BIN / "torchrun"), "--standalone", f"--nproc-per-node={ranks}"]
    got = measure([*torchrun, script, "transformer", "--steps", str(steps)])
    fig["watch_page_p99_ms"] = got["frame_p99_ms"]
    fig["watch_page_bare_p99_ms"] = got["bare_timer_p99_ms"]
    ratio = got["p99_ratio"]  # None if the bare timer had no interval in the run's span
    if not smoke and ratio is not None:  # the target is 8 ranks'
        fig["watch_page_p99_ratio"] = ratio
    row(
        f"watched page frame p99, {ranks} ranks, {got['tensors']} tensors",
        f"{got['frame_p99_ms']:.1f} ms",
        f"bare Qt timer {got['bare_timer_p99_ms']:.1f} ms, ratio "
        + ("—" if ratio is None else f"{ratio:.2f}"),
    )
