"""What every event of the stream is, and how tensors travel in them (pure).

Defining an event class registers it: :data:`EVENT_TYPES` maps each ``kind`` word to its class,
so a kind of run adds events by defining them in its own folder and the decoder finds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, TypedDict


class _SummaryKeys(TypedDict):
    shape: list[int]
    norm: float


# total=False rather than NotRequired: postponed annotations hide NotRequired from Python 3.11
class TensorSummary(_SummaryKeys, total=False):
    """A tensor above 64 values, summarised (see :mod:`ddp_viz.model.tensors`): its shape and
    L2 norm, always; its largest absolute value, mean, first 8 values and, for averaged
    gradients and parameters, a CRC-32 of its bytes (8 hex digits)."""

    absmax: float
    mean: float
    sample: list[float]
    digest: str


# one tensor: a list of floats, or a summary above 64 values
Values = list[float] | TensorSummary
# named tensors
Grads = dict[str, Values]

# every event class by the word that names it in the stream, filled as classes are defined
EVENT_TYPES: dict[str, type[Event]] = {}


class DuplicateEventKind(TypeError):
    """Two event classes claimed the same ``kind`` word: the stream could not tell them apart."""


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = ""
    # True: an event every step of a run sends (its tensors, its timings), which a reader that
    # only passes lines on may leave undecoded (``ddp-viz run --json``)
    per_step: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("kind", "")
        if not name:  # an abstract base, or a subclass that keeps its parent's word
            return
        known = EVENT_TYPES.get(name)
        # the same class defined again (a module reloaded) replaces itself; another one is a clash
        if known is not None and (known.__module__, known.__qualname__) != (
            cls.__module__,
            cls.__qualname__,
        ):
            raise DuplicateEventKind(
                f"event kind {name!r} is already {known.__module__}.{known.__qualname__}"
            )
        EVENT_TYPES[name] = cls
