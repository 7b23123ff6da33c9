"""A watched script: every step captured in full had identical averaged gradients on every
rank, bit for bit (the page, and the summary ``ddp-viz watch`` prints when the command ends);
the ranks' parameters agree (the report and the status line)."""

from ddp_viz.kinds.watched.history import HISTORY, History
from ddp_viz.kinds.watched.watch.command import agreement_lines
from ddp_viz.model.timeline import RunRecord
from tests.kinds.verdicts_base import Said, Verdict, at, changed, event, nudged

RUN = "watched-2-ranks.jsonl"


def watch_summary(rec: RunRecord) -> str:
    """What ``ddp-viz watch`` prints about the averages when the command ends."""
    full = [st for st in rec.steps if st.complete(rec.world_size)]
    part = rec.parts.get(HISTORY)
    return "\n".join(agreement_lines(rec, full, part if isinstance(part, History) else None))


VERDICTS = [
    Verdict(
        "averages identical on every rank, bit for bit",
        RUN,
        # a middle step, the last rank; a summary of 96 values: its digest, norm and sample
        changed(event("averaged_grad", step=1, rank=1), nudged("grads", 1e-7)),
        scene=Said(
            r"^✓ averages identical on every rank, bit for bit$",
            r"^✗ the averaged gradients differ between ranks$",
            key="averages.identical",
        ),
        report=Said(
            r"✓ averaged gradients identical on every rank", r"✗ averaged gradients differ"
        ),
        report_of=watch_summary,
        at=at(1, 0),
        absent="the status line's ✓ ranks agree is the parameters' check",
    ),
    Verdict(
        "ranks agree",
        RUN,
        changed(event("params", step=1, rank=1), nudged("params", 1e-3)),
        report=Said(r"^finished .*✓ ranks agree at every step", r"^finished .*✗ ranks agree"),
        status=Said(r"\. ✓ ranks agree\.$", r"\. ✗ ranks differ"),
        absent="the page shows the averages' check, not the parameters'",
    ),
]
