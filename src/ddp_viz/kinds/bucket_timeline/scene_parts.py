"""Small pure helpers of the bucket timeline scene: axis ticks, bucket sizes, which bucket
holds a parameter."""

from __future__ import annotations

from typing import Any

NICE_MS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


def axis_ticks(span_ms: float, max_ticks: int) -> list[tuple[float, str]]:
    """Ticks at a round interval from 0 up to ``span_ms``, at most ``max_ticks`` of them."""
    if span_ms <= 0:
        return [(0.0, "0")]
    step = next((s for s in NICE_MS if span_ms / s <= max(1, max_ticks - 1)), NICE_MS[-1])
    out = []
    k = 0
    while k * step <= span_ms * (1 + 1e-9):
        v = k * step
        out.append((v, "0" if k == 0 else f"{v:g} ms"))
        k += 1
    return out


def bucket_of(buckets: list[dict[str, Any]], name: str) -> int:
    """The index of the bucket that holds parameter ``name`` (0 when none says so)."""
    for b in buckets:
        if name in b.get("params", ()):
            return int(b["index"])
    return 0


def size_label(n: int) -> str:
    """Bytes as DDP counts them (``bucket_cap_mb`` is in MiB)."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.3g} KiB"
    return f"{n / 1024 / 1024:.3g} MiB"
