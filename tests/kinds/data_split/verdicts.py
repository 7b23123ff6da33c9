"""Who splits the data: DDP's average equals one process's gradient on the step's rows (with
drop_last no row repeats, so it does), and the ranks agree after the step."""

from tests.kinds.verdicts_base import Said, Verdict, at, changed, event, nudged

# three ranks, drop_last: every share as long, no row twice
RUN = "who-splits-drop-last.jsonl"

VERDICTS = [
    Verdict(
        "ranks agree",
        RUN,
        changed(event("params", step=1, rank=2), nudged("params", 3e-6)),
        keeps=changed(event("params", step=1, rank=2), nudged("params", 3e-7)),
        scene=Said(r"· ✓ all ranks equal", r"· ✗ ranks differ"),
        report=Said(r"^finished .*✓ ranks agree at every step", r"^finished .*✗ ranks agree"),
        status=Said(r"✓ ranks agree", r"✗ ranks differ"),
        at=at(1, 3),
    ),
    Verdict(
        "average = full batch",
        RUN,
        changed(event("averaged_grad", step=1, rank=2), nudged("grads", 3e-5)),
        keeps=changed(event("averaged_grad", step=1, rank=2), nudged("grads", 3e-6)),
        scene=Said(r"✓ equal", r"✗ different"),
        report=Said(
            r"^finished .*✓ average = full batch at every step", r"^finished .*✗ average ≠ full"
        ),
        status=Said(r"✓ average = full batch", r"✗ average ≠ full batch"),
        at=at(1, 2),
    ),
]
