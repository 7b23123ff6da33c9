"""What a run of the restart lesson folds (pure), and the verdicts read from it.

Nothing here recomputes the ranks' numbers: the verdicts compare what the ranks reported
(CRC-32s, differences, rows, Adam's step) with each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ddp_viz.kinds.resuming import events as ev
from ddp_viz.kinds.resuming.spec import KIND, VARIANTS, RestartSpec, steps_lost

if TYPE_CHECKING:
    from ddp_viz.model.quiz import Quantity
    from ddp_viz.model.timeline import RunRecord


@dataclass
class RestartRecord:
    saved: ev.CheckpointSaved | None = None
    loaded: dict[int, ev.CheckpointLoaded] = field(default_factory=dict)
    compared: dict[tuple[str, int], ev.ResumeCompared] = field(default_factory=dict)
    attempts: dict[tuple[int, int], ev.RestartAttempt] = field(default_factory=dict)
    outcome: ev.RestartOutcome | None = None
    reshards: dict[int, ev.ReshardCompared] = field(default_factory=dict)
    zeros: dict[int, ev.ZeroConsolidated] = field(default_factory=dict)

    def apply(self, event: Any) -> None:
        # by its word, not its class: a kind folder loaded again redefines its classes
        match event.kind:
            case "checkpoint_saved":
                self.saved = event
            case "checkpoint_loaded":
                self.loaded[event.rank] = event
            case "resume_compared":
                self.compared[(event.variant, event.rank)] = event
            case "restart_attempt":
                self.attempts[(event.attempt, event.rank)] = event
            case "restart_outcome":
                self.outcome = event
            case "reshard_compared":
                self.reshards[event.rank] = event
            case "zero_consolidated":
                self.zeros[event.rank] = event

    def resumed(self, world: int) -> bool:
        """Part one is in: the save, every rank's load, every way of resuming, every rank's
        part of the sharded checkpoint and of ZeRO's state (which a recording of the kind's
        events version 1 does not hold: it shows without it)."""
        return (
            self.saved is not None
            and len(self.loaded) == world
            and len(self.compared) == world * len(VARIANTS)
            and len(self.reshards) == world
            and len(self.zeros) in (0, world)
        )

    def done(self, world: int) -> bool:
        return self.resumed(world) and self.outcome is not None

    def attempt_numbers(self) -> list[int]:
        return sorted({a for a, _ in self.attempts})

    def ranks_of(self, attempt: int) -> dict[int, ev.RestartAttempt]:
        return {r: e for (a, r), e in self.attempts.items() if a == attempt}


def part(rec: RunRecord) -> RestartRecord:
    return rec.parts.get(KIND) or RestartRecord()


def spec_of(rec: RunRecord) -> RestartSpec:
    return RestartSpec.from_mapping(rec.scenario.get(KIND, {}))


def complete_steps(rec: RunRecord) -> int:
    return 1 if part(rec).done(rec.world_size) else 0


# --- verdicts -----------------------------------------------------------------------------
def loads_agree(p: RestartRecord) -> bool:
    """Every rank loaded the weights rank 0 saved."""
    return p.saved is not None and all(e.weights == p.saved.weights for e in p.loaded.values())


def bit_equal(e: ev.ResumeCompared) -> bool:
    return e.max_diff == 0.0 and e.weights == e.weights_want


def variant_equal(p: RestartRecord, variant: str) -> bool:
    """Every rank's resume of ``variant`` ended bit for bit on the run never stopped's weights."""
    events = [e for (v, _), e in p.compared.items() if v == variant]
    return bool(events) and all(bit_equal(e) for e in events)


def first_step_alike(p: RestartRecord, variant: str) -> bool:
    """On every rank the first resumed step had the rows, the dropout mask and Adam's step
    of the run never stopped."""
    events = [e for (v, _), e in p.compared.items() if v == variant]
    return all(
        e.rows == e.rows_want and not e.mask_diff and e.adam_step == e.adam_step_want
        for e in events
    )


def same_rows(p: RestartRecord, variant: str) -> bool:
    return all(e.rows == e.rows_want for (v, _), e in p.compared.items() if v == variant)


def masks_differing(p: RestartRecord, variant: str) -> int:
    return sum(e.mask_diff for (v, _), e in p.compared.items() if v == variant)


def reshard_equal(p: RestartRecord) -> bool:
    """Every rank that loaded the sharded checkpoint at the other world size holds the saved
    parameters, bit for bit (and some rank loaded it)."""
    loaders = [e for e in p.reshards.values() if e.rank < e.loaded_at]
    return bool(loaders) and all(e.max_diff == 0.0 for e in loaders)


def zero_partition(p: RestartRecord) -> bool:
    """ZeRO kept each parameter's Adam state on exactly one rank: no name held twice, as many
    names as rank 0 gathered, and the ranks' bytes add up to the gathered state's."""
    events = [p.zeros[r] for r in sorted(p.zeros)]
    names = [n for e in events for n in e.owned]
    first = p.zeros.get(0)
    return (
        first is not None
        and len(names) == len(set(names)) == first.full_params
        and sum(e.state_bytes for e in events) == first.full_bytes
    )


def zero_consolidated(p: RestartRecord) -> bool:
    """``consolidate_state_dict(to=0)`` gave rank 0 the state plain Adam holds after the same
    step, bit for bit, every rank's weights are plain Adam's, and every other rank's
    ``state_dict()`` refused."""
    first = p.zeros.get(0)
    return (
        first is not None
        and first.state_diff == 0.0
        and not first.refused
        and all(e.weights_diff == 0.0 for e in p.zeros.values())
        and all(e.refused for r, e in p.zeros.items() if r != 0)
    )


def restart_equal(o: ev.RestartOutcome) -> bool:
    return o.max_diff == 0.0 and o.weights == o.weights_want


def lost(o: ev.RestartOutcome) -> int:
    """Steps the death cost: those done after the checkpoint the restart resumed from."""
    return o.killed_after - o.resumed_from if o.killed_after >= 0 <= o.resumed_from else -1


def predicted_lost(spec: RestartSpec) -> int:
    return steps_lost(spec.kill_after, spec.interval)


def steps_lost_quantity(rec: RunRecord, quantity: Quantity) -> float | None:
    """A prediction's number: the steps the death cost, as the run measured them."""
    o = part(rec).outcome
    return None if o is None or lost(o) < 0 else float(lost(o))


def restarts_quantity(rec: RunRecord, quantity: Quantity) -> float | None:
    """How many times torchrun restarted the ranks, once the run is over."""
    o = part(rec).outcome
    return None if o is None else float(o.restarts)
