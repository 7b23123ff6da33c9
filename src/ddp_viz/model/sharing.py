"""The rows each rank trained on in a step, and why DDP's average is not one process's
gradient on them, from what the ranks reported (pure). A kind of run adds reasons of its own
(``RunKind.differs``)."""

from __future__ import annotations

from ddp_viz.model.timeline import RunRecord, StepRecord


def step_rows(record: RunRecord, st: StepRecord) -> list[tuple[int, int]]:
    """(epoch, row) for every row a rank trained on in this step, in order, repeats kept: as
    the first of the record's kinds that knows them says (``RunKind.rows_of_step``), else as
    each rank reported them."""
    hooks = [k.rows_of_step for k in record.kinds() if k.rows_of_step is not None]
    out = []
    for r, rs in sorted(st.ranks.items()):
        rows = next((found for hook in hooks if (found := hook(record, st, r)) is not None), None)
        out += rows if rows is not None else [(rs.epoch, row) for row in rs.rows]
    return out


def why_average_differs(record: RunRecord, st: StepRecord) -> str:
    """In words, why DDP's average is not the gradient over this step's rows, or ""."""
    reasons = []
    train = record.scenario.get("train", {})
    k = int(train.get("accumulate", 1))
    if train.get("loss_reduction") == "sum":
        scaled = (
            f" (and each micro-batch's loss was ÷ {k})"
            if k > 1 and train.get("scale_loss", True)
            else ""
        )
        reasons.append(
            "the loss is a sum, so each rank's gradient is a sum over its rows; DDP still "
            f"divides by the world size, so the average is the sum's gradient ÷ "
            f"{record.world_size}{scaled}"
        )
    if st.ranks and all(not rs.averaged for rs in st.ranks.values()):
        return (
            "nothing was all-reduced: a parameter got no gradient, so DDP's bucket never "
            "filled and each rank kept its own gradient"
        )
    batch_norm = record.scenario.get("model", {}).get("norm") == "batch"
    if batch_norm and record.world_size > 1:
        reasons.append(
            "BatchNorm normalises each rank's batch with that batch's own mean and variance, "
            "so each rank's gradient is not its share of one process's gradient on every row "
            "(SyncBatchNorm would share the statistics, but it needs a GPU or another "
            "accelerator: on CPU it raises)"
        )
    for kind in record.kinds():  # the reasons a kind of run adds (a sampler's repeated rows)
        if kind.differs is not None:
            reasons += kind.differs(record, st)
    sizes = [len(rs.rows) for _, rs in sorted(st.ranks.items()) if rs.rows]
    if len(set(sizes)) > 1:
        reasons.append(
            f"the ranks' batches hold {sizes} rows and DDP weighs each rank's mean equally"
        )
    return "; ".join(reasons)


def unequal_shards_note(shard_sizes: list[int]) -> str:
    """Why DDP's average differs from the full batch when shards differ in size."""
    if len(set(shard_sizes)) <= 1:
        return ""
    sizes = ", ".join(str(s) for s in shard_sizes)
    return (
        f"shards hold {sizes} rows: DDP averages each rank's mean-loss gradient equally, so a "
        "row on a small shard weighs more than a row on a large one; the result is not the "
        "full-batch gradient"
    )
