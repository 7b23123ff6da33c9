"""Mixed precision: every rank of the GradScaler's arm skipped the outlier step together (and
stepped together after it), and every rank saw the same dtypes. Three ranks, the odd one last:
only its own gradient overflowed at step 5. Numbers: the wire's bytes, the values sent as 0,
fp16's error and bf16 autocast's loss, each computed here from the raw events."""

from tests.kinds.verdicts_base import Number, Said, Verdict, at, changed, event

RUN = "mixed-precision-3-ranks.jsonl"
SPIKE = 4  # step 5, from 0


def stepped(value: bool):
    return lambda e: {"stepped": value}


VERDICTS = [
    Verdict(
        "every rank skipped the step whose averaged gradient held inf",
        RUN,
        changed(event("precision_step", arm="fp16", step=SPIKE, rank=2), stepped(True)),
        scene=Said(
            r"^✓ every one of the 3 ranks skipped this step$",
            r"^✗ ranks \[0, 1\] skipped, ranks \[2\] stepped$",
            key="check.skip",
        ),
        report=Said(
            r"^✓ step 5 skipped on every one of the 3 ranks together$",
            r"^✗ step 5: ranks \[0, 1\] skipped and ranks \[2\] stepped",
        ),
        status=Said(r"; ✓ step 5 skipped on every one", r"; ✗ step 5: ranks \[0, 1\] skipped"),
        at=at(SPIKE, 2),
    ),
    Verdict(
        "every rank stepped after the skipped step",
        RUN,
        changed(event("precision_step", arm="fp16", step=SPIKE + 1, rank=2), stepped(False)),
        scene=Said(
            r"^✓ every one of the 3 ranks stepped$",
            r"^✗ ranks \[2\] skipped, ranks \[0, 1\] stepped$",
            key="check.skip",
        ),
        report=Said(r"^✓ step 5 skipped on every one", r"^✗ step 6: ranks \[2\] skipped"),
        status=Said(r"; ✓ step 5 skipped", r"; ✗ step 6: ranks \[2\] skipped"),
        at=at(SPIKE + 1, 2),
    ),
    Verdict(
        "every rank saw the same dtypes",
        RUN,
        changed(
            event("precision_step", arm="bf16", step=2, rank=2),
            lambda e: {"dtypes": {**e.dtypes, "activation": "float32"}},
        ),
        scene=Said(
            r"^✓ every one of the 3 ranks saw the same dtypes$",
            r"^✗ the ranks saw different dtypes$",
            key="check.dtypes",
        ),
        at=at(2, 0),
        absent="the report and the status line give rank 0's dtypes of step 1",
    ),
]


def ev(events, arm: str, step: int, rank: int):
    return next(
        e
        for e in events
        if e.kind == "precision_step" and (e.arm, e.step, e.rank) == (arm, step, rank)
    )


def field(arm: str, step: int, name: str):
    return lambda events: float(getattr(ev(events, arm, step, 0), name))


def mean_loss(arm: str, step: int):
    def run(events) -> float:
        losses = [
            e.loss for e in events if e.kind == "precision_step" and (e.arm, e.step) == (arm, step)
        ]
        return sum(losses) / len(losses)

    return run


NUMBERS = [
    Number(
        "bytes rank 0 handed to all-reduce with bf16 on the wire",
        RUN,
        "bytes.wire_bf16",
        field("wire_bf16", 6, "sent"),
        at=at(6, 3),
        perturb=changed(
            event("precision_step", arm="wire_bf16", step=6, rank=0), lambda e: {"sent": e.sent + 4}
        ),
    ),
    Number(
        "values of rank 0's gradient sent as 0 in float16",
        RUN,
        "underflow.wire_fp16",
        field("wire_fp16", 6, "underflow"),
        at=at(6, 3),
        perturb=changed(
            event("precision_step", arm="wire_fp16", step=6, rank=0),
            lambda e: {"underflow": e.underflow + 3},
        ),
    ),
    Number(
        "values of the last rank's gradient sent as 0 in float16 (the by-rank line)",
        RUN,
        "underflow.r2",
        lambda events: float(ev(events, "wire_fp16", 6, 2).underflow),
        at=at(6, 3),
        perturb=changed(
            event("precision_step", arm="wire_fp16", step=6, rank=2),
            lambda e: {"underflow": e.underflow + 1},
        ),
        pattern=r"r2 (\d+)",
    ),
    Number(
        "fp16's relative error against the exact average",
        RUN,
        "error.wire_fp16",
        field("wire_fp16", 6, "error"),
        at=at(6, 3),
        perturb=changed(
            event("precision_step", arm="wire_fp16", step=6, rank=0),
            lambda e: {"error": e.error * 2},
        ),
    ),
    Number(
        "autocast bf16's loss: the mean of the ranks'",
        RUN,
        "loss.bf16",
        mean_loss("bf16", 3),
        at=at(3, 1),
        # the last rank's loss moved: a column showing rank 0's would not follow
        perturb=changed(
            event("precision_step", arm="bf16", step=3, rank=2), lambda e: {"loss": e.loss + 0.5}
        ),
    ),
    Number(
        "bytes rank 0 handed to FSDP2's all-gathers with bf16 parameters",
        RUN,
        "gathered.fsdp_bf16",
        lambda events: float(
            next(
                e.gathered
                for e in events
                if e.kind == "precision_sharded" and (e.arm, e.step, e.rank) == ("fsdp_bf16", 6, 0)
            )
        ),
        at=at(6, 3),
        perturb=changed(
            event("precision_sharded", arm="fsdp_bf16", step=6, rank=0),
            lambda e: {"gathered": e.gathered + 2},
        ),
    ),
]

# what `ddp-viz run --lesson ID` reports when the lesson's run went as it tells it
# (tests/app/test_every_lesson.py looks for each)
REPORT_SAYS = {"mixed-precision": ("✓ step 5 skipped on every one of the 2 ranks together",)}
