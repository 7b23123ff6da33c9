"""Gradient accumulation's verdicts: DDP's .grad at optimizer.step() equals one process's on
the step's rows, the ranks agree after the step, and the parameters equal one process's that
took one batch a step."""

from tests.kinds.verdicts_base import Number, Said, Verdict, at, changed, event, every, nudged

# two ranks, three micro-batches a step, three steps: average = full batch holds here (on four
# ranks the shares are uneven and it does not)
RUN = "accumulate-3-micro.jsonl"

VERDICTS = [
    Verdict(
        "ranks agree",
        "accumulate-4-ranks.jsonl",
        changed(event("params", step=1, rank=3), nudged("params", 3e-6)),
        keeps=changed(event("params", step=1, rank=3), nudged("params", 3e-7)),
        scene=Said(r"✓ all ranks equal", r"✗ ranks differ", key="agree"),
        report=Said(r"^finished .*✓ ranks agree at every step", r"^finished .*✗ ranks agree"),
        status=Said(r"✓ ranks agree", r"✗ ranks differ"),
        at=at(1, 3),
    ),
    Verdict(
        "average = full batch",
        RUN,
        changed(event("reference", step=1), nudged("full_batch_grads", 3e-5)),
        keeps=changed(event("reference", step=1), nudged("full_batch_grads", 3e-6)),
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
        keeps=changed(event("reference", step=1), nudged("one_process_params", 3e-6)),
        scene=Said(r"· ✓ the( same)?$", r"· ✗ not", key="one_process"),
        at=at(1, 3),
        absent="the report prints one process's parameters under the ranks' without a mark",
    ),
]


def last_micro(step: int, rank: int, k: int = 3):
    """The ``rank``'s last micro-batch of ``step`` (the one that all-reduces)."""
    return event("micro_step", step=step, rank=rank, micro=k - 1)


VERDICTS.append(
    Verdict(
        "the last backward all-reduced on every rank",
        "accumulate-4-ranks.jsonl",
        # the last rank's last backward sent nothing: the line must break the count down
        changed(last_micro(1, 3), lambda e: {"allreduced": []}),
        scene=Said(
            r"^1 of 3 backward passes all-reduced on every rank",
            r"rank 0: 1 · rank 1: 1 · rank 2: 1 · rank 3: 0",
            key="allreduces",
        ),
        at=at(1, 2),
        absent="the report says of each rank's micro-batches whether it all-reduced, unmarked",
    )
)


def hook_calls(step: int, rank: int):
    """DDP's comm hook calls in a step: every bucket of every backward that synced."""

    def run(events) -> float:
        micro = [e for e in events if e.kind == "micro_step" and (e.step, e.rank) == (step, rank)]
        return float(sum(len(m.allreduced) for m in micro))

    return run


NUMBERS = [
    Number(
        "the comm hook's calls in a step, two buckets a synced backward",
        "accumulate-mlp-buckets.jsonl",
        "allreduces",
        hook_calls(1, 0),
        at=at(1, 2),
        perturb=every(
            lambda e: e.kind == "micro_step" and e.step == 1 and e.allreduced,
            lambda e: {"allreduced": [*e.allreduced, 2]},
        ),
    )
]
