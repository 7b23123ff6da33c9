"""The engine's public event stream: one JSON object per line, typed and validated.

Pure model layer (no Qt, no torch). The engine builds these events, the window and the CLI
decode them; :func:`decode` rejects malformed lines and unknown events with a clear error.
Tensors travel as flat lists of floats; non-finite values use JSON's common extension tokens
``NaN``, ``Infinity`` and ``-Infinity`` (as Python's ``json`` reads and writes them).
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, ClassVar

MAX_LINE_BYTES = 1 << 20  # a line longer than this is rejected, never parsed

Grads = dict[str, list[float]]


class ProtocolError(ValueError):
    """A line that is not a valid event (or command)."""


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = ""


# --- engine lifecycle -----------------------------------------------------------------------
@dataclass(frozen=True)
class EngineReady(Event):
    """The engine process is up and reading commands."""

    kind: ClassVar[str] = "engine_ready"
    pid: int
    version: str


@dataclass(frozen=True)
class WorkerState(Event):
    """A pooled rank process changed state (starting, ready, busy, exited)."""

    kind: ClassVar[str] = "worker_state"
    slot: int
    pid: int | None
    state: str
    detail: str = ""


# --- one run --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunStarted(Event):
    kind: ClassVar[str] = "run_started"
    run: int
    world_size: int
    steps: int
    scenario: dict[str, Any]
    shards: list[list[int]] = field(default_factory=list)


@dataclass(frozen=True)
class RankStarted(Event):
    kind: ClassVar[str] = "rank_started"
    run: int
    rank: int
    pid: int
    rows: list[int]


@dataclass(frozen=True)
class LocalGrad(Event):
    """A rank's own gradient, copied from DDP's bucket before the all-reduce."""

    kind: ClassVar[str] = "local_grad"
    run: int
    step: int
    rank: int
    loss: float
    grads: Grads
    buckets: list[list[str]] = field(default_factory=list)


@dataclass(frozen=True)
class AveragedGrad(Event):
    """The same bucket after DDP's all-reduce (sum ÷ world size), read inside backward."""

    kind: ClassVar[str] = "averaged_grad"
    run: int
    step: int
    rank: int
    grads: Grads


@dataclass(frozen=True)
class Params(Event):
    """A rank's parameters right after its ``optimizer.step()``."""

    kind: ClassVar[str] = "params"
    run: int
    step: int
    rank: int
    params: Grads


@dataclass(frozen=True)
class Timing(Event):
    """Phase spans of one rank's step as [start, end] seconds on the machine's monotonic clock.

    ``allreduce`` holds one span per bucket; the others one span each.
    """

    kind: ClassVar[str] = "timing"
    run: int
    step: int
    rank: int
    spans: dict[str, list[list[float]]]


@dataclass(frozen=True)
class Reference(Event):
    """Single-process reference at the parameters the ranks held going into ``step``.

    ``full_batch_grads`` is the gradient of the mean loss over all rows; ``manual_average``
    averages per-shard gradients by hand (what a lesson without DDP can only simulate).
    """

    kind: ClassVar[str] = "reference"
    run: int
    step: int
    full_batch_grads: Grads
    manual_average: Grads
    full_batch_loss: float = float("nan")
    shard_sizes: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class RunFinished(Event):
    kind: ClassVar[str] = "run_finished"
    run: int
    steps_completed: int
    elapsed_s: float


@dataclass(frozen=True)
class RunFailed(Event):
    kind: ClassVar[str] = "run_failed"
    run: int | None
    reason: str
    rank: int | None = None


@dataclass(frozen=True)
class RunCancelled(Event):
    kind: ClassVar[str] = "run_cancelled"
    run: int


@dataclass(frozen=True)
class CommandError(Event):
    """The engine could not accept a command (bad JSON, invalid scenario, busy …)."""

    kind: ClassVar[str] = "command_error"
    message: str
    field: str = ""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        EngineReady,
        WorkerState,
        RunStarted,
        RankStarted,
        LocalGrad,
        AveragedGrad,
        Params,
        Timing,
        Reference,
        RunFinished,
        RunFailed,
        RunCancelled,
        CommandError,
    )
}


# --- encoding -------------------------------------------------------------------------------
def to_dict(event: Event) -> dict[str, Any]:
    return {"event": event.kind, **asdict(event)}


def encode(event: Event) -> str:
    """One line of JSON (no trailing newline)."""
    return json.dumps(to_dict(event), separators=(",", ":"))


def decode(line: str | bytes) -> Event:
    """Parse and validate one line; raise :class:`ProtocolError` saying what is wrong."""
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"line of {len(line)} bytes exceeds the {MAX_LINE_BYTES} limit")
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"not UTF-8: {exc}") from None
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    return from_dict(data)


def from_dict(data: Any) -> Event:
    if not isinstance(data, dict):
        raise ProtocolError("an event must be a JSON object")
    name = data.get("event")
    if not isinstance(name, str):
        raise ProtocolError('missing "event" field')
    cls = EVENT_TYPES.get(name)
    if cls is None:
        raise ProtocolError(f"unknown event {name!r}")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:  # required
                raise ProtocolError(f"{name}: missing field {f.name!r}")
            continue
        value = data[f.name]
        if not _matches(value, hints[f.name]):
            raise ProtocolError(f"{name}: field {f.name!r} has the wrong type ({value!r:.80})")
        kwargs[f.name] = _normalise(value, hints[f.name])
    return cls(**kwargs)


# --- commands (front end -> engine) ------------------------------------------------------
COMMANDS = ("run", "cancel", "warm", "shutdown")


def command(cmd: str, **args: Any) -> str:
    if cmd not in COMMANDS:
        raise ValueError(f"unknown command {cmd!r}")
    return json.dumps({"cmd": cmd, **args}, separators=(",", ":"))


def decode_command(line: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"command is not JSON: {exc.msg}") from None
    if not isinstance(data, dict) or data.get("cmd") not in COMMANDS:
        raise ProtocolError(f"unknown command; expected one of {', '.join(COMMANDS)}")
    return data


# --- tiny structural type checker for the annotations used above ----------------------------
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _matches(value: Any, tp: Any) -> bool:
    if tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        (item,) = typing.get_args(tp)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin is dict:
        key, item = typing.get_args(tp)
        return isinstance(value, dict) and all(
            _matches(k, key) and _matches(v, item) for k, v in value.items()
        )
    return isinstance(value, tp)


def _normalise(value: Any, tp: Any) -> Any:
    """Ints where floats are declared become floats, so equality and formatting behave."""
    if tp is float:
        return float(value)
    origin = typing.get_origin(tp)
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_normalise(v, item) for v in value]
    if origin is dict:
        _, item = typing.get_args(tp)
        return {k: _normalise(v, item) for k, v in value.items()}
    return value
