"""A recorded run: events folded into steps, and a cursor over the stage's animation phases.
Pure model layer: the window, the CLI table and the exports all read a :class:`RunRecord`,
so every number they show is one the engine sent."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from ddp_viz.model import protocol, registry, step_memo

# re-exported: the views and tests take the cursor from here, beside the record it walks
from ddp_viz.model.cursor import PHASES as PHASES
from ddp_viz.model.cursor import Cursor as Cursor
from ddp_viz.model.cursor import walk as walk
from ddp_viz.model.launchspec import LaunchEnv
from ddp_viz.model.modelspec import ParamInfo
from ddp_viz.model.protocol import Grads

# re-exported: one rank's part of a step, folded here from its events
from ddp_viz.model.rank_step import RankStep as RankStep
from ddp_viz.model.tensors import Tensor, is_summary, tensor_norm, tensor_sample, tensors_close
from ddp_viz.model.tensors import close as close  # re-exported: one closeness rule

PHASE_TITLES = {
    "shards": "1 · shards go to ranks",
    "local": "2 · local forward + backward",
    "allreduce": "3 · all-reduce inside loss.backward()",
    "step": "4 · optimizer.step() on every rank",
}
AGREE_TOL = 1e-6


class RunStatus(StrEnum):
    """Where a recorded run stands (a str, so it compares with the event stream's words)."""

    IDLE = "idle"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


def grads_close(a: Grads | None, b: Grads | None, tol: float = 1e-5) -> bool:
    if a is None or b is None or set(a) != set(b):
        return False
    return all(tensors_close(a[k], b[k], tol) for k in a)


def max_abs_diff(a: Grads, b: Grads) -> float:
    """The largest difference between two sets of named tensors (their first values when
    big: summaries carry no more), over the names both hold."""
    return max(
        (
            abs(x - y)
            for n in a.keys() & b.keys()
            for x, y in zip(tensor_sample(a[n]), tensor_sample(b[n]), strict=False)
        ),
        default=math.nan,
    )


def scalar(g: Grads | None, name: str) -> float:
    """The first value of a named tensor (the only one for one-element tensors)."""
    sample = tensor_sample(g.get(name)) if g else []
    return sample[0] if sample else math.nan


def display_value(values: Tensor | None) -> float:
    """The number a view shows for a tensor: the value itself for one element, else its
    L2 norm (labelled ‖·‖ wherever it is shown)."""
    if not values:
        return math.nan
    if not is_summary(values) and len(values) == 1:
        return values[0]
    return tensor_norm(values)


@dataclass
class StepRecord:
    step: int
    ranks: dict[int, RankStep] = field(default_factory=dict)
    reference: protocol.Reference | None = None
    # what views derived from this step's tensors (model.step_memo)
    memo: dict[str, tuple[list[Any], Any]] = field(default_factory=dict, compare=False, repr=False)

    def rank(self, r: int) -> RankStep:
        return self.ranks.setdefault(r, RankStep())

    def memoized(self, name: str, compute: Callable[[], Any]) -> Any:
        return step_memo.memoized(self.memo, self.ranks, name, compute)

    def complete(self, world_size: int) -> bool:
        return len(self.ranks) == world_size and all(rs.complete for rs in self.ranks.values())

    @property
    def has_values(self) -> bool:
        """Whether the ranks recorded this step's tensor values (every step of a lesson; some
        steps of a long run: model.reference.values_due)."""
        return all(rs.values for rs in self.ranks.values())

    def mean_of_locals(self) -> Grads | None:
        """The plain mean of the ranks' local gradients, for checking DDP's averaged value."""
        locals_ = [rs.local for rs in self.ranks.values() if rs.local is not None]
        if not locals_ or any(is_summary(v) for g in locals_ for v in g.values()):
            return None  # summaries: the ranks compare full tensors themselves
        names = locals_[0].keys()
        return {
            n: [sum(g[n][i] for g in locals_) / len(locals_) for i in range(len(locals_[0][n]))]
            for n in names
        }

    def ranks_agree(self) -> bool | None:
        """Do all ranks hold the same parameters after the step? None until all reported."""
        return self.memoized("ranks_agree", self._ranks_agree)

    def _ranks_agree(self) -> bool | None:
        params = [rs.params for rs in self.ranks.values()]
        if not params or any(p is None for p in params):
            return None
        first = params[0]
        if all(p == first for p in params[1:]):  # at C speed; then one pass, not one a rank
            return grads_close(first, first, AGREE_TOL)  # (a non-finite value agrees with none)
        return all(grads_close(first, p, AGREE_TOL) for p in params[1:])

    def averaged_agree(self) -> bool | None:
        avgs = [rs.averaged for rs in self.ranks.values()]
        if not avgs or any(a is None for a in avgs):
            return None
        return all(grads_close(avgs[0], a, AGREE_TOL) for a in avgs[1:])

    def average_is_full_batch(self) -> bool | None:
        """Does DDP's averaged gradient equal the full-batch gradient (reference)?"""
        avgs = [rs.averaged for rs in self.ranks.values() if rs.averaged is not None]
        if self.reference is None or not avgs:
            return None
        full = self.reference.full_batch_grads
        if any(set(a) != set(full) for a in avgs):
            return False
        reported = next((rs.vs_full_batch for rs in self.ranks.values() if rs.vs_full_batch), {})
        # every rank's average, not the first's: one astray makes the claim false on its own
        for name, value in avgs[0].items():
            if not (is_summary(value) or is_summary(full[name])):
                if not all(tensors_close(a[name], full[name], 1e-5) for a in avgs):
                    return False
                continue
            if not all(tensors_close(a[name], value, 1e-5) for a in avgs[1:]):
                return False  # big tensors: rank 0 compared every value, reported the largest
            diff = reported.get(name)
            scale = max(
                1.0, abs(float(full[name].get("absmax", 1.0))) if is_summary(full[name]) else 1.0
            )
            if diff is None or not diff <= 1e-5 * scale:
                return False
        return True

    def averaged(self) -> Grads | None:
        return next((rs.averaged for rs in self.ranks.values() if rs.averaged), None)

    def params_after(self) -> Grads | None:
        return next((rs.params for rs in self.ranks.values() if rs.params), None)


@dataclass
class RunRecord:
    """Everything one run sent, folded by step. Feed it events with :meth:`apply`."""

    run: int | None = None
    world_size: int = 0
    steps_planned: int = 0
    scenario: dict[str, Any] = field(default_factory=dict)
    shards: list[list[int]] = field(default_factory=list)
    params: list[ParamInfo] = field(default_factory=list)
    initial: dict[int, Grads] = field(default_factory=dict)  # rank -> params after DDP(model)
    pids: dict[int, int] = field(default_factory=dict)
    # rank -> the rows it reported at the start (with a sampler: its first epoch's share)
    rank_rows: dict[int, list[int]] = field(default_factory=dict)
    steps: list[StepRecord] = field(default_factory=list)
    status: RunStatus = RunStatus.IDLE
    reason: str = ""
    # a run opened from a recording: what it says about its version, shown with its status
    # line (first when it matters more, a recording of a newer schema)
    note: str = ""
    note_first: bool = False
    replayed: bool = False  # opened from a file, not run on this machine just now
    failed_rank: int | None = None
    elapsed_s: float | None = None
    bad_lines: int = 0
    events: list[protocol.Event] = field(default_factory=list)
    # what each kind of run folds beside the steps, by kind id (ddp_viz.model.registry)
    parts: dict[str, registry.RecordPart] = field(default_factory=dict)
    # rank -> the variables it read when its launcher started it the way torchrun does
    launch: dict[int, LaunchEnv] = field(default_factory=dict)
    # the most characters a recorded loss, gradient or parameter takes in the stage's four
    # significant digits: the stage sizes its columns for these on every step, so its type
    # does not change from one step to the next
    value_chars: int = 0
    _kinds: list[registry.RunKind] = field(default_factory=list)
    _complete_prefix: int = 0  # steps 0.._complete_prefix-1 have every rank's report
    # every kind of the run puts numbers on the stage (so value_chars is measured): read off
    # the kinds once, when the run starts, not on every event of a long run
    _stage_values: bool = True

    def apply(self, event: protocol.Event) -> bool:
        """Fold one event in; return False if it belongs to another run (ignored)."""
        if isinstance(event, protocol.RunStarted):
            self._reset()
            self.run, self.world_size, self.steps_planned = (
                event.run,
                event.world_size,
                event.steps,
            )
            self.scenario, self.shards = event.scenario, event.shards
            self.status = RunStatus.RUNNING
            self.params = _param_infos(event)
            self._kinds = [k for k in registry.kinds() if k.folds(event.scenario)]
            self.parts = {k.id: k.part() for k in self._kinds if k.part is not None}
            self.parts |= {k.id: k.record_part(self) for k in self._kinds if k.record_part}
            self._stage_values = all(k.stage_values for k in self._kinds)
            self.events.append(event)
            return True
        run = getattr(event, "run", self.run)
        if self.run is None or run != self.run:
            return False
        self.events.append(event)
        match event:
            case protocol.RankStarted(rank=r, pid=pid, rows=rows):
                self.pids[r] = pid
                self.rank_rows[r] = rows
            case protocol.InitialParams(rank=r, params=p):
                self.initial[r] = p
            case protocol.LocalGrad(step=s, rank=r, loss=loss, grads=g, buckets=b):
                rs = self._step(s).rank(r)
                rs.loss, rs.local, rs.buckets = loss, g, b
                rs.rows, rs.epoch, rs.values = event.rows, event.epoch, event.values
                if not event.values:
                    rs.local = None
            case protocol.AveragedGrad(step=s, rank=r, grads=g, vs_full_batch=vs):
                rs = self._step(s).rank(r)
                rs.averaged, rs.vs_full_batch = g, vs
            case protocol.Params(step=s, rank=r, params=p):
                self._step(s).rank(r).params = p
            case protocol.Timing(step=s, rank=r, spans=sp, ready=ready, buckets=b):
                rs = self._step(s).rank(r)
                rs.spans, rs.ready, rs.bucket_spans = sp, ready, b
            case protocol.Reference(step=s):
                self._step(s).reference = event
            case LaunchEnv(rank=r):
                self.launch[r] = event
            case protocol.RunFinished(elapsed_s=t):
                self.status, self.elapsed_s = RunStatus.FINISHED, t
            case protocol.RunFailed(reason=why, rank=r):
                self.status, self.reason, self.failed_rank = RunStatus.FAILED, why, r
            case protocol.RunCancelled():
                self.status, self.reason = RunStatus.CANCELLED, "cancelled by the user"
        if self._stage_values:
            self.value_chars = max(self.value_chars, _value_chars(event))
        for part in self.parts.values():
            part.apply(event)
        return True

    def _reset(self) -> None:
        fresh = RunRecord()
        for f in fields(self):
            setattr(self, f.name, getattr(fresh, f.name))

    def _step(self, s: int) -> StepRecord:
        while len(self.steps) <= s:
            self.steps.append(StepRecord(step=len(self.steps)))
        return self.steps[s]

    def kinds(self) -> list[registry.RunKind]:
        """The kinds of run this record is, by its scenario's tables."""
        return self._kinds

    @property
    def done(self) -> bool:
        return self.status in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED)

    @property
    def foreign_model(self) -> bool:  # a model not of ddp-viz's: a user's own script's
        return any(k.foreign_model for k in self._kinds)

    @property
    def cores(self) -> int:
        """The CPU cores the ranks could run on, as the engine counted them (0: not recorded)."""
        start = self.events[0] if self.events else None
        return start.cores if isinstance(start, protocol.RunStarted) else 0

    def steps_total(self) -> int:
        """The run's length as every view states it ("step 7 of N"): the steps planned (or
        seen, when not known in advance), and for a run that ended early, the steps it made."""
        if self.done and self.status != RunStatus.FINISHED:  # cancelled or failed
            return max(1, self.complete_prefix())
        return max(self.steps_planned, len(self.steps))

    def complete_prefix(self) -> int:
        """How many leading steps are complete (advanced incrementally, O(1) amortised), or
        as a kind of run counts its own steps."""
        for kind in self.kinds():
            if kind.complete_steps is not None:
                return kind.complete_steps(self)
        n = self._complete_prefix
        while n < len(self.steps) and self._step_complete(n):
            n += 1
        self._complete_prefix = n
        return n

    def _step_complete(self, n: int) -> bool:
        """Every rank that trains step ``n`` reported it (a kind of run may say some do not)."""
        st = self.steps[n]
        for kind in self._kinds:
            if kind.step_reported is not None:
                return kind.step_reported(self, st)
        for kind in self._kinds:
            if kind.step_ranks is not None:
                expected = kind.step_ranks(self, n)
                return all(r in st.ranks and st.ranks[r].complete for r in expected)
        return st.complete(self.world_size)

    def complete_steps(self) -> list[StepRecord]:
        return [s for s in self.steps if self._step_complete(s.step)]

    @property
    def param_names(self) -> list[str]:
        return [p.name for p in self.params]

    def initial_params(self) -> Grads:
        """The parameters every rank starts from, as the ranks reported them after
        ``DDP(model)`` (recordings made before that event existed: the linear scenario's)."""
        if self.initial:
            return self.initial[min(self.initial)]
        linear = self.scenario.get("model", {}).get("kind", "linear") == "linear"
        if linear and len(self.params) == 2 and not self.foreign_model:
            first, second = (p.name for p in self.params)  # nn.Linear(1, 1)'s two parameters
            return {
                first: [float(self.scenario.get("init_weight", math.nan))],
                second: [float(self.scenario.get("init_bias", math.nan))],
            }
        return {}

    def initial_agree(self) -> bool | None:
        """Did DDP's broadcast leave every rank with the same starting parameters?"""
        if len(self.initial) < self.world_size or not self.initial:
            return None
        first = self.initial[min(self.initial)]
        return all(grads_close(first, p, AGREE_TOL) for p in self.initial.values())

    def params_before(self, step: int) -> Grads:
        """The parameters going into ``step``: the previous step's, or the initial ones; empty
        when the previous step's values were not recorded (a long run's later steps)."""
        if step <= 0:
            return self.initial_params()
        if step - 1 < len(self.steps) and not self.steps[step - 1].has_values:
            return {}
        prev = self.steps[step - 1].params_after() if step - 1 < len(self.steps) else None
        return prev or self.initial_params()

    def check_summary(self) -> dict[str, bool | None]:
        """Run-wide checks over complete steps (None when nothing to judge yet)."""
        steps = self.complete_steps()
        if not steps:
            return {"ranks_agree": None, "average_is_full_batch": None}
        # the reference runs at some steps only (model.reference): judge those, not the others
        checked = [s.average_is_full_batch() for s in steps if s.reference is not None]
        # a step whose ranks reported their timings alone has no parameters to compare
        agree = [a for a in (s.ranks_agree() for s in steps) if a is not None]
        return {
            "ranks_agree": all(agree) if agree else None,
            "average_is_full_batch": all(checked) if checked else None,
        }


def _param_infos(event: protocol.RunStarted) -> list[ParamInfo]:
    """From ``run_started`` (an older recording's are filled in by its upgrade step,
    :mod:`ddp_viz.model.recordings`)."""
    return [ParamInfo(str(p["name"]), tuple(int(d) for d in p["shape"])) for p in event.params]


def _value_chars(event: protocol.Event) -> int:
    """The characters of the widest number ``event`` brings to the stage (``fmt``'s 4 digits)."""
    values: list[float] = []
    if isinstance(event, protocol.LocalGrad) and event.values:
        values = [event.loss, *(display_value(v) for v in event.grads.values())]
    elif isinstance(event, protocol.AveragedGrad):
        values = [display_value(v) for v in event.grads.values()]
    elif isinstance(event, (protocol.Params, protocol.InitialParams)):
        values = [display_value(v) for v in event.params.values()]
    return max((len(f"{v:.4g}") for v in values if v is not None), default=0)


def record(events: Iterable[protocol.Event]) -> RunRecord:
    rec = RunRecord()
    for e in events:
        rec.apply(e)
    return rec
