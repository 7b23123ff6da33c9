"""DDP training's verdicts (the default scene): the ranks hold the same parameters after the
step, and DDP's average equals the full batch's gradient."""

from ddp_viz.model.protocol import RunFailed
from tests.kinds.verdicts_base import Number, Said, Verdict, at, changed, event, nudged

# four ranks, three steps: the change is made to the last rank in the middle step, so a check
# of the first ranks only or of the last step only keeps its ✓
RUN = "four-ranks-3-steps.jsonl"

RANKS_AGREE = Said(r"✓ ranks agree", r"✗ ranks (differ|agree)")

VERDICTS = [
    Verdict(
        "ranks agree",
        RUN,
        # above the 1e-6 the check allows, below a loosened 1e-5
        changed(event("params", step=1, rank=3), nudged("params", 3e-6)),
        keeps=changed(event("params", step=1, rank=3), nudged("params", 3e-7)),
        scene=Said(r"✓ all ranks equal", r"✗ ranks differ"),
        report=Said(r"^finished .*✓ ranks agree at every step", r"^finished .*✗ ranks agree"),
        status=RANKS_AGREE,
        at=at(1, 3),
    ),
    Verdict(
        "average = full batch",
        RUN,
        # above the 1e-5 the check allows, below a loosened 1e-4
        changed(event("reference", step=1), nudged("full_batch_grads", 3e-5)),
        keeps=changed(event("reference", step=1), nudged("full_batch_grads", 3e-6)),
        scene=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        report=Said(
            r"^finished .*✓ average = full batch at every step", r"^finished .*✗ average ≠ full"
        ),
        status=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        at=at(1, 2),
    ),
]
VERDICTS.append(
    Verdict(
        "average = full batch, on every rank",
        RUN,
        # the last rank's average astray (its parameters follow a phase later): the claim at
        # the all-reduce is about every rank's average, not the first's
        changed(event("averaged_grad", step=1, rank=3), nudged("grads", 3e-5)),
        scene=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        report=Said(
            r"^finished .*✓ average = full batch at every step", r"^finished .*✗ average ≠ full"
        ),
        status=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        at=at(1, 2),
    )
)


def failed_at_last_step(events):
    """Rank 3 died in step 3 before its parameters: no params or timing of it, and the run's
    end a failure naming it."""
    out = []
    for e in events:
        if e.kind in ("params", "timing") and (e.step, e.rank) == (2, 3):
            continue
        if e.kind == "run_finished":
            e = RunFailed(run=e.run, reason="rank 3 exited with code 1 in step 3", rank=3)
        out.append(e)
    return out


VERDICTS.append(
    Verdict(
        "the run finished",
        RUN,
        failed_at_last_step,
        scene=Said(r"✓ all ranks equal", r"✗ run failed after 2 complete step\(s\) .*rank 3"),
        report=Said(r"^finished 3 step\(s\)", r"^run failed: rank 3 exited with code 1"),
        status=Said(r"^Run 1 finished: 3 step\(s\)", r"^Run 1 failed: rank 3 exited with code 1"),
    )
)


# --- numbers: each rank's row of the table, at the middle step -----------------------------------
def first_value(kind: str, field: str, step: int, rank: int, name: str):
    def run(events) -> float:
        e = next(e for e in events if e.kind == kind and (e.step, e.rank) == (step, rank))
        return float(getattr(e, field)[name][0])

    return run


def mean_of_locals(step: int, name: str):
    """What DDP's all-reduce averages: the ranks' local gradients, summed and ÷ N."""

    def run(events) -> float:
        local = [e.grads[name][0] for e in events if e.kind == "local_grad" and e.step == step]
        return sum(local) / len(local)

    return run


def loss_of(step: int, rank: int):
    return lambda events: next(
        e.loss for e in events if e.kind == "local_grad" and (e.step, e.rank) == (step, rank)
    )


NUMBERS = [
    Number(
        "the last rank's local gradient",
        RUN,
        "rank3.local.weight",
        first_value("local_grad", "grads", 1, 3, "weight"),
        at=at(1, 1),
        perturb=changed(event("local_grad", step=1, rank=3), nudged("grads", 1e-3, "weight")),
    ),
    Number(
        "the last rank's loss",
        RUN,
        "rank3.loss",
        loss_of(1, 3),
        at=at(1, 1),
        perturb=changed(event("local_grad", step=1, rank=3), lambda e: {"loss": e.loss + 1}),
    ),
    Number(
        "the last rank's average: the mean of the four ranks' local gradients",
        RUN,
        "rank3.averaged.bias",
        mean_of_locals(1, "bias"),
        at=at(1, 2),
        rel=1e-6,  # float32 all-reduce against a float64 mean
    ),
    Number(
        "the last rank's parameter after the step",
        RUN,
        "rank3.params.weight",
        first_value("params", "params", 1, 3, "weight"),
        at=at(1, 3),
        perturb=changed(event("params", step=1, rank=3), nudged("params", 1e-3, "weight")),
    ),
]


VERDICTS.append(
    Verdict(
        "average = full batch, every tensor on every rank",
        RUN,
        # the last rank's average without its bias (a parameter that got no gradient there)
        changed(
            event("averaged_grad", step=1, rank=3),
            lambda e: {"grads": {k: v for k, v in e.grads.items() if k != "bias"}},
        ),
        scene=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        report=Said(
            r"^finished .*✓ average = full batch at every step", r"^finished .*✗ average ≠ full"
        ),
        status=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        at=at(1, 2),
    )
)
