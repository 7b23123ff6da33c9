"""Which rank trained on which row, epoch by epoch, from the rows the ranks reported (pure).

DistributedSampler gives every rank the same number of rows: it repeats rows to pad the dataset
up to a multiple of the world size, or drops the tail with ``drop_last``. Both show in what the
ranks report, so the scene and the reasons find them here instead of re-running a sampler.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ddp_viz.model.sharing import step_rows
from ddp_viz.model.timeline import RunRecord, StepRecord


@dataclass
class EpochShare:
    """One epoch: for every dataset row, the (rank, step) pairs that trained on it."""

    epoch: int
    takers: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)

    def repeated(self) -> list[int]:
        return sorted(r for r, who in self.takers.items() if len(who) > 1)

    def missing(self, rows: int) -> list[int]:
        return [r for r in range(rows) if r not in self.takers]


def epochs(record: RunRecord, upto: int | None = None) -> list[EpochShare]:
    """Every epoch's share up to step ``upto`` (inclusive), in order."""
    out: dict[int, EpochShare] = {}
    for st in record.steps[: None if upto is None else upto + 1]:
        for r, rs in sorted(st.ranks.items()):
            if not rs.rows and rs.loss is None:
                continue
            share = out.setdefault(rs.epoch, EpochShare(rs.epoch))
            if st.step not in share.steps:
                share.steps.append(st.step)
            for row in rs.rows:
                share.takers.setdefault(row, []).append((r, st.step))
    return [out[e] for e in sorted(out)]


def step_repeats(record: RunRecord, st: StepRecord) -> list[int]:
    """Rows that more than one rank (or one rank twice) trained on in one epoch of this step."""
    counts = Counter(step_rows(record, st))
    return sorted({row for (_, row), n in counts.items() if n > 1})


def repeats_reason(record: RunRecord, st: StepRecord) -> list[str]:
    """The sampler's padding, as a reason DDP's average is not one process's on the step's
    rows: a repeated row counts once per rank that got it."""
    repeats = step_repeats(record, st)
    if not repeats:
        return []
    names = [str(r + 1) for r in repeats]
    rows = f"row {names[0]}" if len(names) == 1 else f"rows {', '.join(names[:-1])} and {names[-1]}"
    them = "it" if len(names) == 1 else "them"
    return [
        f"{rows} went to two ranks (the sampler repeats rows so every rank gets as many), "
        f"so DDP counts {them} twice"
    ]
