"""What DDP does not average: the buffers as the forward begins (rank 0's, broadcast), the
averaged gradients and the parameters after the step on every rank, and a checkpoint every
rank loads. The recordings have two ranks: the change is made to rank 1, the last."""

from tests.kinds.verdicts_base import Number, Said, Verdict, at, changed, event, nudged

RUN = "not-averaged.jsonl"

VERDICTS = [
    Verdict(
        "buffers identical as the forward begins, bit for bit",
        RUN,
        # far below any tolerance: DDP broadcast rank 0's bytes, so they are equal or wrong
        changed(event("buffers", step=1, rank=1), nudged("before", 1e-9)),
        scene=Said(
            r"^✓ identical on every rank \(rank 0's",
            r"^✗ 1\.running_mean differ between ranks by up to",
            key="buffers.before",
        ),
        report=Said(
            r"^step 2, as the forward began: ✓ buffers identical on every rank$",
            r"^step 2, as the forward began: ✗ 1\.running_mean differ between ranks",
        ),
        at=at(1, 0),
        absent="the status line says how the run ended, not the buffers",
    ),
    Verdict(
        "every rank holds the same average",
        RUN,
        changed(event("averaged_grad", step=1, rank=1), nudged("grads", 3e-6)),
        # one rank whose bucket never filled is not "the comm hook never ran": every rank's is
        keeps=changed(event("local_grad", step=1, rank=1), lambda e: {"buckets": []}),
        scene=Said(r"✓ every rank holds the same average$", r"✗ the averages differ$"),
        at=at(1, 2),
        absent="the report prints each rank's averaged gradient in its step table, unmarked",
    ),
    Verdict(
        "parameters identical on every rank after the step",
        RUN,
        changed(event("params", step=1, rank=1), nudged("params", 3e-6)),
        scene=Said(
            r"✓ parameters identical on every rank$",
            r"✗ the ranks' parameters now differ$",
            key="params.agree",
        ),
        report=Said(r"^finished .*✓ ranks agree at every step", r"^finished .*✗ ranks agree"),
        status=Said(r"✓ ranks agree", r"✗ ranks differ"),
        at=at(1, 3),
    ),
    Verdict(
        "rank 1 loaded the file rank 0 saved",
        RUN,
        changed(event("checkpoint", rank=1, action="loaded"), lambda e: {"sha256": "0" * 64}),
        scene=Said(
            r"^rank 1 loaded it .*: ✓ the same file",
            r"^rank 1 .*✗ a different file",
            key="checkpoint.2",
        ),
        report=Said(r"^rank 1 loaded it .*: ✓ the same file", r"^rank 1 .*: ✗ a different file"),
        absent="the status line says how the run ended, not the checkpoint",
    ),
    Verdict(
        "rank 0's loaded parameters equal its own",
        RUN,
        changed(event("checkpoint", rank=0, action="loaded"), lambda e: {"same_params": False}),
        scene=Said(
            r"^rank 0 loaded it .*parameters equal its own",
            r"^rank 0 .*✗ parameters differ",
            key="checkpoint.1",
        ),
        report=Said(
            r"^rank 0 loaded it .*parameters equal its own", r"^rank 0 .*✗ parameters differ"
        ),
        absent="the status line says how the run ended, not the checkpoint",
    ),
]


def largest_after(step: int):
    """The largest difference between the two ranks' buffers after the forward, any value."""

    def run(events) -> float:
        by_rank = {e.rank: e.after for e in events if e.kind == "buffers" and e.step == step}
        return max(
            abs(a - b)
            for name in by_rank[0]
            for a, b in zip(by_rank[0][name], by_rank[1][name], strict=True)
        )

    return run


def var_moved(e):
    """Rank 1's last running_var value 1.0 larger: the largest difference moves there."""
    after = dict(e.after)
    after["1.running_var"] = [*after["1.running_var"][:-1], after["1.running_var"][-1] + 1.0]
    return {"after": after}


NUMBERS = [
    Number(
        "how far the ranks' buffers differ after the forward",
        RUN,
        "buffers.after",
        largest_after(1),
        at=at(1, 1),
        perturb=changed(event("buffers", step=1, rank=1), var_moved),
        rel=5e-4,  # shown to four significant digits
        pattern=r"by up to ([\d.]+)",
    )
]
