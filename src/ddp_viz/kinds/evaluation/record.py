"""What an evaluation run folds (pure): every rank's dropout masks, share of held-out rows,
numbers and waits, rank 0's one-process reference, and the four accuracies read from them.

The four ways are the ranks' own numbers (nothing here recomputes them): rank 0's accuracy on
its padded share; the mean of the ranks' accuracies, each on its rows without the padding;
the all-reduced right answers over rows of the padded shares; and the same without the
padding. The reference is rank 0's float64 evaluation of every held-out row in one process.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ddp_viz.kinds.evaluation import events as ev
from ddp_viz.kinds.evaluation.spec import KIND, EvalSpec
from ddp_viz.model.tensors import close

if TYPE_CHECKING:
    from ddp_viz.model.quiz import Quantity
    from ddp_viz.model.timeline import RunRecord

EQUAL = 1e-12  # accuracies are ratios of whole numbers: equal ways divide the same two


@dataclass
class EvalRecord:
    masks: dict[tuple[str, int], ev.DropoutMask] = field(default_factory=dict)
    shares: dict[int, ev.EvalShare] = field(default_factory=dict)
    numbers: dict[int, ev.EvalNumbers] = field(default_factory=dict)
    reference: ev.EvalReference | None = None
    waits: dict[tuple[str, int], ev.EvalWait] = field(default_factory=dict)  # the latest
    outcomes: dict[tuple[str, int], ev.EvalOutcome] = field(default_factory=dict)

    def apply(self, event: Any) -> None:
        match event:
            case ev.DropoutMask(seeding=s, rank=r):
                self.masks[(s, r)] = event
            case ev.EvalShare(rank=r):
                self.shares[r] = event
            case ev.EvalNumbers(rank=r):
                self.numbers[r] = event
            case ev.EvalReference():
                self.reference = event
            case ev.EvalWait(attempt=a, rank=r):
                self.waits[(a, r)] = event
            case ev.EvalOutcome(attempt=a, rank=r):
                self.outcomes[(a, r)] = event

    def evaluated(self, world: int) -> bool:
        """Every rank's share and numbers and the reference have arrived."""
        return (
            len(self.shares) == world and len(self.numbers) == world and self.reference is not None
        )


@dataclass(frozen=True)
class Way:
    """One way of computing the accuracy: its key, its label, the number the ranks made, and
    whether it equals the reference."""

    key: str
    label: str
    value: float
    equal: bool


def part(rec: RunRecord) -> EvalRecord:
    return rec.parts[KIND]


def spec_of(rec: RunRecord) -> EvalSpec:
    return EvalSpec.from_mapping(rec.scenario.get(KIND, {}))


def reference_accuracy(p: EvalRecord) -> float | None:
    ref = p.reference
    return None if ref is None else sum(ref.correct) / ref.rows


def ratio(pair: list[float]) -> float:
    return pair[0] / pair[1] if pair[1] else float("nan")


def ways(p: EvalRecord) -> list[Way]:
    """The four accuracies as rank 0 computed them (the all-reduced ones agree on every rank:
    :func:`ranks_agree`)."""
    mine = p.numbers.get(0)
    ref = reference_accuracy(p)
    if mine is None or ref is None:
        return []
    values = [
        ("rank0", "rank 0 on its share", ratio(mine.own)),
        ("mean", "mean of the ranks' accuracies", mine.mean_of_ranks),
        ("padded", "all-reduced sums, padded shares", ratio(mine.padded_sums)),
        ("kept", "all-reduced sums, padding dropped", ratio(mine.kept_sums)),
    ]
    return [Way(k, label, v, close(v, ref, EQUAL)) for k, label, v in values]


def ranks_agree(p: EvalRecord) -> bool:
    """Every rank got the same all-reduced numbers."""
    got = {(n.mean_of_ranks, *n.padded_sums, *n.kept_sums) for n in p.numbers.values()}
    return len(got) == 1


def repeated(p: EvalRecord) -> dict[int, list[int]]:
    """Rows the ranks' shares hold more than once, with the ranks holding each (from the
    samplers' own indices)."""
    counts = Counter(i for share in p.shares.values() for i in share.indices)
    out: dict[int, list[int]] = {}
    for rank in sorted(p.shares):
        for i in p.shares[rank].indices:
            if counts[i] > 1:
                out.setdefault(i, []).append(rank)
    return dict(sorted(out.items()))


def extra_rows(p: EvalRecord) -> int:
    """How many places of the shares repeat a row: the padding the sampler added."""
    total = sum(len(s.indices) for s in p.shares.values())
    return total - len({i for s in p.shares.values() for i in s.indices})


def kept_sizes(p: EvalRecord) -> list[int]:
    """Each rank's rows without the padding, by rank."""
    return [int(p.numbers[r].own_kept[1]) for r in sorted(p.numbers)]


def mask_agreement(p: EvalRecord, seeding: str) -> dict[int, float]:
    """Per rank, the share of its first-step mask that equals rank 0's, place by place."""
    base = p.masks.get((seeding, 0))
    if base is None:
        return {}
    out = {}
    for (s, r), m in sorted(p.masks.items()):
        if s != seeding:
            continue
        pairs = [
            (a, b)
            for ra, rb in zip(base.mask, m.mask, strict=True)
            for a, b in zip(ra, rb, strict=True)
        ]
        out[r] = sum(a == b for a, b in pairs) / len(pairs) if pairs else 1.0
    return out


def stalled(p: EvalRecord) -> dict[int, ev.EvalOutcome]:
    """The ranks whose part of the rank-0-only evaluation through the wrapper raised."""
    return {r: o for (a, r), o in p.outcomes.items() if a == "wrapper" and o.error}


def module_done(p: EvalRecord, world: int) -> bool:
    """Every rank finished the ``model.module`` attempt without an error."""
    done = [o for (a, _), o in p.outcomes.items() if a == "module" and not o.error]
    return len(done) == world


def complete_steps(rec: RunRecord) -> int:
    return 1 if part(rec).evaluated(rec.world_size) else 0


def extra_rows_quantity(rec: RunRecord, quantity: Quantity) -> float | None:
    """A prediction's number: how many places of the shares repeat a row (None until every
    rank's share has arrived)."""
    p = rec.parts.get(KIND)
    if p is None or len(p.shares) < rec.world_size:
        return None
    return float(extra_rows(p))
