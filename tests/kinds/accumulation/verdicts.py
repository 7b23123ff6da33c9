"""Gradient accumulation's verdicts: DDP's .grad at optimizer.step() equals one process's on
the step's rows, the ranks agree after the step, and the parameters equal one process's that
took one batch a step."""

from tests.kinds.verdicts_base import Said, Verdict, at, changed, event, nudged

# two ranks, three micro-batches a step, three steps: average = full batch holds here (on four
# ranks the shares are uneven and it does not)
RUN = "accumulate-3-micro.jsonl"

VERDICTS = [
    Verdict(
        "ranks agree",
        "accumulate-4-ranks.jsonl",
        changed(event("params", step=1, rank=3), nudged("params", 3e-6)),
        scene=Said(r"✓ all ranks equal", r"✗ ranks differ", key="agree"),
        report=Said(r"^finished .*✓ ranks agree at every step", r"^finished .*✗ ranks agree"),
        status=Said(r"✓ ranks agree", r"✗ ranks differ"),
        at=at(1, 3),
    ),
    Verdict(
        "average = full batch",
        RUN,
        changed(event("reference", step=1), nudged("full_batch_grads", 3e-5)),
        scene=Said(r"^✓ equal$", r"^✗ different", key="full_batch"),
        report=Said(
            r"^finished .*✓ average = full batch at every step", r"^finished .*✗ average ≠ full"
        ),
        status=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        at=at(1, 2),
    ),
    Verdict(
        "the same as one process, one batch a step",
        RUN,
        changed(event("reference", step=1), nudged("one_process_params", 3e-5)),
        scene=Said(r"· ✓ the( same)?$", r"· ✗ not", key="one_process"),
        at=at(1, 3),
        absent="the report prints one process's parameters under the ranks' without a mark",
    ),
]
