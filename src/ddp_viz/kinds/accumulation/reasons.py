"""Why DDP's average is not one process's gradient on a step's rows, as accumulation makes it
differ (pure): a loss not divided by the micro-batches, or micro-batches of unequal size."""

from __future__ import annotations

from ddp_viz.kinds.accumulation.record import step_micro
from ddp_viz.model.timeline import RunRecord, StepRecord


def differs(record: RunRecord, st: StepRecord) -> list[str]:
    reasons = []
    train = record.scenario.get("train", {})
    k = int(train.get("accumulate", 1))
    if k > 1 and not train.get("scale_loss", True):
        reasons.append(
            f"each rank added up {k} micro-batches' gradients in .grad without dividing the "
            f"loss by {k}, so the step's gradient is {k}× what one process gets from these rows"
        )
    micro = sorted({len(m.rows) for ms in step_micro(record, st).values() for m in ms})
    if len(micro) > 1 and train.get("loss_reduction", "mean") == "mean":
        held = ", ".join(str(n) for n in micro[:-1]) + f" or {micro[-1]}"
        reasons.append(
            f"the micro-batches hold {held} rows (the loader's last batch of an epoch is "
            "short), and each micro-batch's mean counts the same, so a row in a short one "
            "weighs more"
        )
    return reasons
