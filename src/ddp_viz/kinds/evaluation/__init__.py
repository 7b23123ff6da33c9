"""Evaluating and logging under DDP (``[evaluation]``): rows ``DistributedSampler`` counts
twice, accuracies that disagree with a one-process evaluation, rank 0 evaluating alone through
the DDP wrapper (a real hang) and through ``model.module``, and dropout masks per seeding."""

from __future__ import annotations

from ddp_viz.kinds.evaluation import events as _events  # noqa: F401  (defines, so registers)
from ddp_viz.kinds.evaluation.record import EvalRecord, complete_steps, extra_rows_quantity
from ddp_viz.kinds.evaluation.report import evaluation_report, status_line
from ddp_viz.kinds.evaluation.scene import build
from ddp_viz.kinds.evaluation.spec import KIND, EvalSpec
from ddp_viz.model.registry import QuantitySource, RunKind, register

register(
    RunKind(
        id=KIND,
        table=KIND,
        spec=EvalSpec,
        part=EvalRecord,
        complete_steps=complete_steps,
        scenes={"evaluation": build},
        phase_words={"evaluation": ("shares", "accuracy", "rank 0 only", "seeds")},
        report=evaluation_report,
        status=status_line,
        quantities={
            "extra_rows": QuantitySource(
                extra_rows_quantity, phase="shards", unit="a number of rows"
            )
        },
        field_names={
            "evaluation.eval_rows": "Held-out rows",
            "evaluation.shuffle": "Sampler",
            "evaluation.hang": "Rank 0 only",
            "evaluation.timeout_s": "Timeout",
        },
        trains=False,
        plots=False,
    )
)
