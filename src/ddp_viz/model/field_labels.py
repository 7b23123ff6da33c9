"""What the scenario form calls each field and each choice, for every text that asks the
learner to set one or names what is wrong with one (the quiz's prompts, the form's messages):
the words on screen, not the scenario file's keys.

The core's fields are named here; a kind names its own (``RunKind.field_names``).
"""

from __future__ import annotations

from typing import Any

from ddp_viz.model import registry
from ddp_viz.model.dataspec import PLACEMENT_LABELS

NAMES = {
    "world_size": "World size",
    "steps": "Steps",
    "lr": "Learning rate",
    "init_weight": "Initial weight",
    "init_bias": "Initial bias",
    "ddp.bucket_cap_mb": "Bucket (MiB)",
    "x": "x (data)",
    "y": "y (data)",
}

# the form's words for a field whose value is one of a few choices
CHOICES: dict[str, dict[str, str]] = {"train.no_sync": PLACEMENT_LABELS}


def field_label(key: str, unnamed: str | None = None) -> str:
    """The form's label of the field at dotted ``key``; ``unnamed`` (the key itself if not
    given) for a field the form does not show."""
    kinds = {k: v for kind in registry.kinds() for k, v in kind.field_names.items()}
    return NAMES.get(key) or kinds.get(key) or (key if unnamed is None else unnamed)


def choice_label(key: str, value: Any) -> str | None:
    """The form's word for ``value`` of the choice field at ``key``, or None if it has none."""
    return CHOICES.get(key, {}).get(value) if isinstance(value, str) else None
