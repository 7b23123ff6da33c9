"""DDP, DDP + ZeRO-1 and FSDP2 side by side: ZeRO's and FSDP's parameters and gradients equal
DDP's within their tolerances, and the bytes each rank holds match the formulas the stage
spells out. Four ranks; the stage shows rank 1's numbers."""

from tests.kinds.verdicts_base import Said, Verdict, at, changed, event, last_step

RUN = "sharded-4-ranks.jsonl"

# the run's check in the report (every step) and in the status line
REPORT = Said(r"^✓ over 4 steps: full parameters of ZeRO and FSDP", r"^✗ over 4 steps")
STATUS = Said(r"; parameters (equal to|within \de-\d\d of) DDP's\.$", r"; ✗ ZeRO or FSDP past")


def diff(field: str, value: float):
    return lambda e: {field: value}


def plus_four(field: str):
    return lambda e: {field: getattr(e, field) + 4}


VERDICTS = [
    Verdict(
        "ZeRO-1's parameters equal DDP's within 1e-5",
        RUN,
        # the last rank, a middle step: above the tolerance, below a loosened 1e-4
        changed(event("sharded_step", way="zero", step=1, rank=3), diff("param_diff", 2e-5)),
        scene=Said(r"^✓ DDP \+ ZeRO-1", r"^✗ DDP \+ ZeRO-1: params within 2e-05", key="check.zero"),
        report=REPORT,
        status=STATUS,
        at=at(1, 3),
    ),
    Verdict(
        "FSDP2's gradient rows equal DDP's average within 1e-6",
        RUN,
        changed(event("sharded_step", way="fsdp", step=1, rank=3), diff("grad_diff", 2e-6)),
        scene=Said(
            r"^✓ FSDP2: .*grads (exactly equal|within \de-0[7-9])$",
            r"^✗ FSDP2: .*grads within 2e-06",
            key="check.fsdp",
        ),
        report=REPORT,
        status=STATUS,
        at=at(1, 3),
    ),
    Verdict(
        "ZeRO-1's Adam state on the stage's rank matches the formula",
        RUN,
        changed(event("sharded_step", way="zero", step=3, rank=1), plus_four("state")),
        scene=Said(r"^✓ ", r"^✗", key="formula.zero"),
        report=Said(
            r"^DDP \+ ZeRO-1 +1 +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+$", r"^DDP \+ ZeRO-1 +1 .*✗ formula$"
        ),
        at=last_step(0),
        absent="the status line gives rank 0's totals, not the formula",
    ),
    Verdict(
        "FSDP2's parameter bytes on the last rank match the formula",
        RUN,
        changed(event("sharded_step", way="fsdp", step=3, rank=3), plus_four("params")),
        report=Said(r"^FSDP2 +3 +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+$", r"^FSDP2 +3 .*✗ formula$"),
        absent="the stage shows rank 1's bytes, the status line rank 0's totals",
    ),
]
