"""The engine's side of each kind of run: its folder's ``engine.py`` (torch, no Qt).

A kind's engine module gives one of:
- ``PROGRAM(run, rank, scenario, outbox) -> steps``: the whole run, instead of DDP training
  (the all-reduce by hand); the rank runs it inside the process group the core set up.
- ``HOOKS``: a :class:`TrainingHooks` subclass, made once per run and rank, that the core's
  DDP training loop calls at fixed points (around the run, around the loop, before and after each
  step, after the loop, on an error). The points inside each step are resolved once, before the
  loop (:class:`StepHooks`): a kind that overrides none of them, or says it needs none in this
  run (:meth:`TrainingHooks.skips`), costs the loop nothing per step.
- ``BATCHES(scenario, rank) -> Iterator[(epoch, rows)]``: the rows each step of a rank trains
  on, when the kind deals them (a sampler) instead of the core's contiguous blocks. The ranks
  and rank 0's reference both draw from it, so it must be deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ddp_viz.model import registry

if TYPE_CHECKING:
    from ddp_viz.engine.capture import BucketObserver
    from ddp_viz.engine.outbox import Outbox
    from ddp_viz.engine.trainer import Trainer
    from ddp_viz.model.event_base import Event
    from ddp_viz.model.protocol import Reference
    from ddp_viz.model.scenario import Scenario

Program = Callable[[int, int, "Scenario", "Outbox"], int]
Batches = Callable[["Scenario", int], Iterator[tuple[int, list[int]]]]
Send = Callable[[dict[str, Any]], None]

_PARTS: dict[str, ModuleType] = {}
_RUN_FOLDER: list[Path] = []  # the folder of the run this rank is in (set by the rank)


def set_run_folder(folder: Path) -> None:
    _RUN_FOLDER[:] = [folder]


def run_folder() -> Path:
    """The private folder (mode 0700) of the run the rank is in: the engine removes it when
    the run ends, finished or cancelled, so a program keeps there what must not outlive it."""
    return _RUN_FOLDER[0]


# the points the loop reaches at every step; the others come once a run (or on an error)
PER_STEP = ("before_step", "step_events", "forward_backward", "after_step")


@dataclass
class Pass:
    """One optimizer step's forward and backward as a kind ran them: the step's loss, the
    kind's events for them (sent with the step's) and the spans they took."""

    loss: float
    events: list[Event] = field(default_factory=list)
    spans: dict[str, list[list[float]]] = field(default_factory=dict)


class TrainingHooks:
    """What a kind of run adds to the rank's DDP training loop. Every hook does nothing here;
    a kind overrides the ones it needs."""

    # the process group's timeout for this run (None: the core's)
    timeout: timedelta | None = None
    # send every step's events at once, so a stall never hides the step before it
    flush_every_step: bool = False

    def __init__(self, run: int, rank: int, scenario: Scenario) -> None:
        self.run, self.rank, self.scenario = run, rank, scenario

    def send(self, send: Send) -> Send:
        """``send`` as the run will use it (made thread-safe for a thread that sends too)."""
        return send

    def skips(self) -> frozenset[str]:
        """Per-step points (:data:`PER_STEP`) this kind overrides but needs in no step of this
        run, asked once after :meth:`built`: the loop then leaves them out of every step."""
        return frozenset()

    def each_step(self) -> StepHooks:
        """The per-step points resolved (after :meth:`built`, which may decide them)."""
        return _step_hooks([self])

    def bucket_observer(self) -> BucketObserver | None:
        """Given to the capture hook, which tells it when each bucket's all-reduce is launched
        and when it returns (or None: a kind that asks nothing of the hook)."""
        return None

    def around_run(self, send: Send) -> AbstractContextManager[Any]:
        """Entered before the model is built, left when the run ends (a heartbeat thread)."""
        return nullcontext()

    def on_error(self, exc: RuntimeError, outbox: Outbox) -> bool:
        """An error ended the run: True when it is the lesson's outcome, reported here."""
        return False

    def steps(self, planned: int) -> tuple[int, int]:
        """This rank's steps, and the steps every rank trains (both ``planned`` here)."""
        return planned, planned

    def built(self, trainer: Trainer) -> None:
        """The model, DDP and the capture hook are built; no step has run."""

    def around_loop(self, trainer: Trainer) -> AbstractContextManager[Any]:
        """Entered around the loop over steps (``Join``)."""
        return nullcontext()

    def step_events(self, trainer: Trainer, step: int) -> list[Event]:
        """Events of the kind's own for a step that just ran, sent with the step's."""
        return []

    def before_step(self, trainer: Trainer, step: int, batches: list[list[Any]]) -> None:
        """Step ``step`` is about to run. ``batches``: on rank 0, which computes the reference,
        every rank's micro-batches of the step (``(epoch, rows)``), in rank order; elsewhere
        none."""

    def reference(self, trainer: Trainer, event: Reference) -> Reference:
        """The step's reference event (rank 0, at a step that has one) as the kind completes
        it (the parameters of a single-process run of its own)."""
        return event

    def on_forward_error(self, trainer: Trainer, step: int, exc: RuntimeError) -> bool:
        """DDP's forward raised: True when that ends the loop as the lesson's outcome (the
        kind reported it)."""
        return False

    def forward_backward(self, trainer: Trainer, step: int, micro: list[Any]) -> Pass | None:
        """Run the step's forward and backward over its ``micro`` batches (``(epoch, rows)``)
        the kind's way (micro-batch by micro-batch, ``no_sync`` where it goes); None: the
        core's one forward and backward."""
        return None

    def after_step(self, trainer: Trainer, completed: int) -> None:
        """A step is over and its events are out; ``completed`` steps so far."""

    def loop_ended(self, trainer: Trainer, completed: int) -> None:
        """The loop is over, still inside :meth:`around_loop`."""

    def finish(self, trainer: Trainer, completed: int) -> None:
        """After the loop and the core's own after-loop work, before the run reports done."""


@dataclass(frozen=True)
class StepHooks:
    """The kinds' hooks the loop calls at every step, resolved once before the loop: only
    the methods a kind overrides and does not skip. Empty tuples for a plain DDP run, so each
    point costs an empty loop."""

    before_step: tuple[Callable[[Trainer, int, list[list[Any]]], None], ...] = ()
    step_events: tuple[Callable[[Trainer, int], list[Event]], ...] = ()
    forward_backward: tuple[Callable[[Trainer, int, list[Any]], Pass | None], ...] = ()
    after_step: tuple[Callable[[Trainer, int], None], ...] = ()


def _step_hooks(hooks: list[TrainingHooks]) -> StepHooks:
    """Each point's bound methods, in the kinds' order, of the hooks whose class overrides it
    (a method left as :class:`TrainingHooks` has it does nothing) and that do not skip it."""
    found: dict[str, tuple[Callable[..., Any], ...]] = {}
    for point in PER_STEP:
        base = getattr(TrainingHooks, point)
        found[point] = tuple(
            getattr(h, point)
            for h in hooks
            if getattr(type(h), point) is not base and point not in h.skips()
        )
    return StepHooks(**found)


class _AllHooks(TrainingHooks):
    """The hooks of every kind whose table the scenario holds, called in turn; the per-step
    points through :meth:`each_step` only."""

    def __init__(self, hooks: list[TrainingHooks]) -> None:
        self.hooks = hooks
        timeouts = [h.timeout for h in hooks if h.timeout is not None]
        self.timeout = min(timeouts) if timeouts else None
        self.flush_every_step = any(h.flush_every_step for h in hooks)

    def send(self, send: Send) -> Send:
        for h in self.hooks:
            send = h.send(send)
        return send

    def bucket_observer(self) -> BucketObserver | None:
        return next((w for h in self.hooks if (w := h.bucket_observer()) is not None), None)

    def around_run(self, send: Send) -> AbstractContextManager[Any]:
        stack = ExitStack()
        for h in self.hooks:
            stack.enter_context(h.around_run(send))
        return stack

    def on_error(self, exc: RuntimeError, outbox: Outbox) -> bool:
        return any(h.on_error(exc, outbox) for h in self.hooks)

    def steps(self, planned: int) -> tuple[int, int]:
        mine, together = planned, planned
        for h in self.hooks:
            mine, together = h.steps(planned)
        return mine, together

    def built(self, trainer: Trainer) -> None:
        for h in self.hooks:
            h.built(trainer)

    def each_step(self) -> StepHooks:
        """The per-step points resolved (after :meth:`built`, which may decide them)."""
        return _step_hooks(self.hooks)

    def reference(self, trainer: Trainer, event: Reference) -> Reference:
        for h in self.hooks:
            event = h.reference(trainer, event)
        return event

    def on_forward_error(self, trainer: Trainer, step: int, exc: RuntimeError) -> bool:
        return any(h.on_forward_error(trainer, step, exc) for h in self.hooks)

    def around_loop(self, trainer: Trainer) -> AbstractContextManager[Any]:
        stack = ExitStack()
        for h in self.hooks:
            stack.enter_context(h.around_loop(trainer))
        return stack

    def loop_ended(self, trainer: Trainer, completed: int) -> None:
        for h in self.hooks:
            h.loop_ended(trainer, completed)

    def finish(self, trainer: Trainer, completed: int) -> None:
        for h in self.hooks:
            h.finish(trainer, completed)


def engine_parts() -> dict[str, ModuleType]:
    """Every kind folder's ``engine`` module, by kind folder (imported once)."""
    if not _PARTS:
        _PARTS.update(registry.load_parts("engine"))
    return _PARTS


def _parts_of(scenario: Scenario) -> list[ModuleType]:
    """The engine parts of the kinds a run of ``scenario`` is: those whose table it holds,
    and those that add to every DDP training run."""
    parts, mapping = engine_parts(), scenario.to_dict()
    return [parts[k.id] for k in registry.kinds() if k.id in parts and k.folds(mapping)]


def kind_program(scenario: Scenario) -> Program | None:
    """The program of the kind whose table ``scenario`` holds, if that kind owns the run."""
    return next((p.PROGRAM for p in _parts_of(scenario) if hasattr(p, "PROGRAM")), None)


def kind_batches(scenario: Scenario) -> Batches | None:
    """Where the rows of a run of ``scenario`` come from, if one of its kinds deals them."""
    return next((p.BATCHES for p in _parts_of(scenario) if hasattr(p, "BATCHES")), None)


def kind_hooks(run: int, rank: int, scenario: Scenario) -> TrainingHooks:
    """The training hooks of the kinds whose tables ``scenario`` holds, as one."""
    return _AllHooks(
        [p.HOOKS(run, rank, scenario) for p in _parts_of(scenario) if hasattr(p, "HOOKS")]
    )
