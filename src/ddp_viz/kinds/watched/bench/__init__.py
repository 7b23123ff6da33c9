"""The watched run's benchmarks (``ddp-viz bench --only watch``): its overhead on a torchrun
step (``overhead``, with the script ``watched_train``), and its page's frames (``page``).

``ddp-viz bench`` finds them here (``NAMES``, ``TARGETS``, :func:`run`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NAMES = ("watch",)
# what --smoke does for them (the bench's help says it)
SMOKE_HELP = "watch: one round of plain, watched and profiler on a tiny step (checks it runs)"
TARGETS = {
    "watch_ratio_mlp": ("watched ÷ plain torchrun step, buckets MLP", "≤ 1.05"),
    "watch_ratio_10m": ("watched ÷ plain torchrun step, 10 M parameters", "≤ 1.05"),
    "watch_gone_ratio_10m": ("listener gone ÷ plain step, 10 M parameters", "≤ 1.05"),
    "watch_over_profiler_10m": ("watched ÷ torch.profiler step, 10 M parameters", "< 1"),
}


def run(name: str, fig: dict[str, Any], row: Callable[..., None], reps: int, smoke: bool) -> None:
    """The watched torchrun step against the plain one (``name``: ``watch``); ``row`` prints a
    line of the table. Noisy: more rounds than ``reps``, the core's parts' count."""
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
