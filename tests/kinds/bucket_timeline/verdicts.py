"""The buckets lesson: its stage shows when each bucket's all-reduce ran, and no verdict of its
own; the run's report and status line say whether the ranks agree and the average is the full
batch's (tensors of 256 values: summaries, compared by digest or norm)."""

from tests.kinds.verdicts_base import Said, Verdict, changed, event, nudged

RUN = "buckets-lesson-4-ranks.jsonl"
NO_SCENE = "the stage draws the buckets' timeline, not the checks (the report says them)"

VERDICTS = [
    Verdict(
        "ranks agree",
        RUN,
        changed(event("params", step=1, rank=3), nudged("params", 1e-3)),
        report=Said(r"^finished .*✓ ranks agree at every step", r"^finished .*✗ ranks agree"),
        status=Said(r"✓ ranks agree", r"✗ ranks differ"),
        absent=NO_SCENE,
    ),
    Verdict(
        "average = full batch, on every rank",
        RUN,
        # a tensor of 256 values, sent as a summary: compared by its digest against rank 0's
        changed(event("averaged_grad", step=1, rank=3), nudged("grads", 1e-3, name="0.weight")),
        report=Said(
            r"^finished .*✓ average = full batch at every step", r"^finished .*✗ average ≠ full"
        ),
        status=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        absent=NO_SCENE,
    ),
]
