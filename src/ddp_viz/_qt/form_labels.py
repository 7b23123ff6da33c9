"""What the scenario form calls each field in its messages, and reading a typed number."""

from __future__ import annotations

NAMES = {
    "world_size": "World size",
    "steps": "Steps",
    "lr": "Learning rate",
    "init_weight": "Initial weight",
    "init_bias": "Initial bias",
    "ddp.bucket_cap_mb": "Bucket cap (MiB)",
    "train.accumulate": "Micro-batches",
    "collective.length": "Values per rank",
    "x": "x (data)",
    "y": "y (data)",
}


def label(key: str) -> str:
    if "[" in key:
        col, idx = key.split("[")
        return f"{col} in row {int(idx.rstrip(']')) + 1}"
    return NAMES.get(key, key)


def float_or_text(text: str) -> float | str:
    """A number as typed when it is one, else the text (reported as bad)."""
    try:
        return float(text.strip().replace("−", "-"))
    except ValueError:
        return text
