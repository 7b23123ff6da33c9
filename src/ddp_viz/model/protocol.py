"""The engine's public event stream: one JSON object per line, typed and validated.

Pure model layer (no Qt, no torch). The engine builds these events, the window and the CLI
decode them; :func:`decode` rejects malformed lines and unknown events with a clear error.
Tensors travel as flat lists of floats; non-finite values are written as the strings
``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (strict JSON, see
:mod:`ddp_viz.model.recording_format`); older files' bare ``NaN`` tokens still decode.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar

from ddp_viz.model import json_text, launchspec, recording_format, registry  # noqa: F401
from ddp_viz.model.event_base import EVENT_TYPES, Event, Grads
from ddp_viz.model.fieldcheck import ProtocolError, checked_fields

MAX_LINE_BYTES = 1 << 20  # a line longer than this is rejected, never parsed


# --- engine lifecycle -----------------------------------------------------------------------
@dataclass(frozen=True)
class EngineReady(Event):
    """The engine process is up and reading commands."""

    kind: ClassVar[str] = "engine_ready"
    pid: int
    version: str


class WorkerStatus(StrEnum):
    """Where a pooled rank process stands (a str: the stream carries the word)."""

    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    EXITED = "exited"


@dataclass(frozen=True)
class WorkerState(Event):
    """A pooled rank process changed state (see :class:`WorkerStatus`)."""

    kind: ClassVar[str] = "worker_state"
    slot: int
    pid: int | None
    state: str  # a WorkerStatus value; unknown words from newer engines are kept as text
    detail: str = ""


# --- one run --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunStarted(Event):
    """A run began. ``scenario`` holds every key, ``[model]`` and ``[ddp]`` included;
    ``params`` names each parameter of the model with its shape, in ``named_parameters()``
    order: ``[{"name": "weight", "shape": [1, 1]}, …]``; ``cores``: the CPU cores the ranks may
    run on (0: not known). Steps are numbered from 0 in the stream; views show them from 1."""

    kind: ClassVar[str] = "run_started"
    run: int
    world_size: int
    steps: int
    scenario: dict[str, Any]
    shards: list[list[int]] = field(default_factory=list)
    params: list[dict[str, Any]] = field(default_factory=list)
    cores: int = 0


@dataclass(frozen=True)
class InitialParams(Event):
    """A rank's parameters right after ``DDP(model)``, which broadcast rank 0's to all."""

    kind: ClassVar[str] = "initial_params"
    run: int
    rank: int
    params: Grads


@dataclass(frozen=True)
class RankStarted(Event):
    """A rank's process took its part in the run: its pid and the 0-based data rows it trains
    on (empty with a distributed sampler: see ``local_grad.rows``)."""

    kind: ClassVar[str] = "rank_started"
    run: int
    rank: int
    pid: int
    rows: list[int]


@dataclass(frozen=True)
class LocalGrad(Event):
    """A rank's own gradient, copied from DDP's bucket before the all-reduce."""

    kind: ClassVar[str] = "local_grad"
    per_step: ClassVar[bool] = True
    run: int
    step: int
    rank: int
    loss: float
    grads: Grads
    buckets: list[list[str]] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)  # 0-based data rows this rank trained on
    epoch: int = 0  # with a sampler: the epoch this step's batch came from (0-based)
    # False: a step whose tensor values were not recorded (model.reference.values_due); no
    # averaged_grad or params event follows, and ``grads`` is empty
    values: bool = True


@dataclass(frozen=True)
class AveragedGrad(Event):
    """The same bucket after DDP's all-reduce (sum ÷ world size), read inside backward."""

    kind: ClassVar[str] = "averaged_grad"
    per_step: ClassVar[bool] = True
    run: int
    step: int
    rank: int
    grads: Grads
    # rank 0: per parameter, the largest |DDP's average - full-batch reference| over every value
    vs_full_batch: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Params(Event):
    """A rank's parameters right after its ``optimizer.step()``."""

    kind: ClassVar[str] = "params"
    per_step: ClassVar[bool] = True
    run: int
    step: int
    rank: int
    params: Grads


@dataclass(frozen=True)
class Timing(Event):
    """Phase spans of one rank's step as [start, end] seconds on the machine's monotonic clock.

    ``allreduce`` holds one span per bucket; the others one span each. ``ready`` lists
    ``[name, time]`` when each parameter's gradient was accumulated, in the order it happened;
    ``buckets`` one object per DDP bucket: ``index``, ``params`` (names), ``bytes``,
    ``launched`` (the comm hook was entered) and ``finished`` (its all-reduce came back).
    """

    kind: ClassVar[str] = "timing"
    per_step: ClassVar[bool] = True
    run: int
    step: int
    rank: int
    spans: dict[str, list[list[float]]]
    ready: list[list[Any]] = field(default_factory=list)
    buckets: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Reference(Event):
    """Single-process reference at the parameters the ranks held going into ``step``.

    ``full_batch_grads`` is the gradient of the loss over all the step's rows, each once;
    ``manual_average`` averages per-shard gradients by hand (what a lesson without DDP can only
    simulate); with gradient accumulation each shard's gradient is its micro-batches' scaled
    gradients added up, as ``.grad`` adds them.
    """

    kind: ClassVar[str] = "reference"
    per_step: ClassVar[bool] = True
    run: int
    step: int
    full_batch_grads: Grads
    manual_average: Grads
    full_batch_loss: float = float("nan")
    shard_sizes: list[int] = field(default_factory=list)
    # the parameters, after this step, of a separate single-process SGD run that takes each
    # step's rows as one batch (never copying DDP's parameters), when a kind runs one beside
    # the ranks (TrainingHooks.reference: gradient accumulation's); empty otherwise
    one_process_params: Grads = field(default_factory=dict)


@dataclass(frozen=True)
class RunFinished(Event):
    """The run ended normally after ``steps_completed`` steps."""

    kind: ClassVar[str] = "run_finished"
    run: int
    steps_completed: int
    elapsed_s: float


@dataclass(frozen=True)
class RunFailed(Event):
    """The run ended early: ``reason`` for people (steps counted from 1), the rank at fault if
    one was."""

    kind: ClassVar[str] = "run_failed"
    run: int | None
    reason: str
    rank: int | None = None


@dataclass(frozen=True)
class RunCancelled(Event):
    """The run was cancelled (Cancel, Escape, or a cancel command)."""

    kind: ClassVar[str] = "run_cancelled"
    run: int


@dataclass(frozen=True)
class CommandError(Event):
    """The engine could not accept a command (bad JSON, invalid scenario, busy …)."""

    kind: ClassVar[str] = "command_error"
    message: str
    field: str = ""


# --- encoding -------------------------------------------------------------------------------
def to_dict(event: Event) -> dict[str, Any]:
    """Shallow: events hold only JSON values (no nested dataclasses), so there is nothing to
    convert deeply, and ``dataclasses.asdict``'s deep copy cost a rank 0.2 ms per event."""
    return {"event": event.kind, **{n: getattr(event, n) for n in field_names(type(event))}}


def field_names(cls: type[Event]) -> tuple[str, ...]:
    """An event class's fields in order: the order its constructor takes them in."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


# one encoder: json.dumps builds one per call. allow_nan=False: a non-finite float raises, and
# only then is the event copied with its words (strict JSON at no cost to the finite case)
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode(event: Event) -> str:
    """One line of strict JSON (no trailing newline)."""
    return dumps(to_dict(event))


def dumps(obj: Any) -> str:
    """Any JSON value as one line of strict JSON: non-finite floats become their words."""
    try:
        return _ENCODER.encode(obj)
    except ValueError:
        return _ENCODER.encode(recording_format.strict(obj))


KIND_PREFIX = b'{"event":"'  # how every line encode writes begins: to_dict puts the kind first


def line_kind(raw: bytes) -> str | None:
    """The event kind at the start of a line as :func:`encode` writes it, or None; read
    without parsing the line."""
    if not raw.startswith(KIND_PREFIX):
        return None
    end = raw.find(b'"', len(KIND_PREFIX))
    return raw[len(KIND_PREFIX) : end].decode("ascii", "replace") if end > 0 else None


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
        data = json_text.loads(line)
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
    if cls is None:  # a kind of run defines its events in its own folder, found on first use
        registry.load()
        cls = EVENT_TYPES.get(name)
    if cls is None:
        raise ProtocolError(f"unknown event {name!r}")
    return cls(**checked_fields(cls, data, name))


# --- commands (front end -> engine), typed like events ----------------------------------------
@dataclass(frozen=True)
class Command:
    kind: ClassVar[str] = ""


@dataclass(frozen=True)
class RunCommand(Command):
    """Start ``scenario`` (a scenario mapping) as run ``run``; ``fault`` is for tests."""

    kind: ClassVar[str] = "run"
    run: int
    scenario: dict[str, Any]
    fault: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CancelCommand(Command):
    kind: ClassVar[str] = "cancel"
    run: int | None = None


@dataclass(frozen=True)
class WarmCommand(Command):
    """Keep ``world_size`` ranks forked and ready."""

    kind: ClassVar[str] = "warm"
    world_size: int


@dataclass(frozen=True)
class ShutdownCommand(Command):
    kind: ClassVar[str] = "shutdown"


COMMAND_TYPES: dict[str, type[Command]] = {
    cls.kind: cls for cls in (RunCommand, CancelCommand, WarmCommand, ShutdownCommand)
}
COMMANDS = tuple(COMMAND_TYPES)


def encode_command(cmd: Command) -> str:
    return dumps({"cmd": cmd.kind, **asdict(cmd)})


def decode_command(line: str | bytes) -> Command:
    """Parse one command line; :class:`ProtocolError` says what is wrong."""
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"command of {len(line)} bytes exceeds the {MAX_LINE_BYTES} limit")
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"command is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("cmd") not in COMMAND_TYPES:
        raise ProtocolError(f"unknown command; expected one of {', '.join(COMMANDS)}")
    cls = COMMAND_TYPES[data["cmd"]]
    return cls(**checked_fields(cls, data, data["cmd"]))
