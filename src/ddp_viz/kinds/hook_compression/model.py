"""DDP's communication hooks (``[hook_compression]``): the spec, its variants, the byte formulas and
the record of what the ranks reported. Pure model layer.

One run trains the same model on the same rows once per variant, in lockstep: DDP's default
``allreduce_hook``, ``fp16_compress_hook``, and ``powerSGD_hook`` for each matrix
approximation rank in ``ranks`` with error feedback on, off, or both. PowerSGD all-reduces
plainly for its first ``warmup`` steps (``start_powerSGD_iter``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import choice, flag, number, rate, whole, wholes

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario
    from ddp_viz.model.timeline import RunRecord

KIND = "hook_compression"
KEYS = (
    "steps",
    "width",
    "batch",
    "lr",
    "warmup",
    "ranks",
    "error_feedback",
    "fp16",
    "bucket_cap_mb",
    "seed",
    "grads",
)
FEATURES = 16  # inputs of the model: Linear(16, width) → tanh → Linear(width, width) → …
SHOWN_LAYER = "hidden.weight"  # the width × width matrix whose P and Q the stage shows
MIN_COMPRESSION_RATE = 2  # PowerSGDState's default
FEEDBACK = ("both", "on", "off")


@dataclass(frozen=True)
class Variant:
    """One way of averaging: ``hook`` is ``allreduce``, ``fp16`` or ``powersgd``."""

    id: str
    hook: str
    rank_r: int = 0
    feedback: bool = False

    @property
    def label(self) -> str:
        if self.hook == "allreduce":
            return "default all-reduce"
        if self.hook == "fp16":
            return "fp16 compress"
        return f"PowerSGD r={self.rank_r}" + (" + EF" if self.feedback else ", no EF")


@dataclass(frozen=True)
class HooksSpec:
    """``steps`` steps of ``batch`` rows a rank; a ``width``-wide two-hidden-layer MLP; PowerSGD
    at every rank in ``ranks`` after ``warmup`` plain steps; ``grads``: every step's local and
    averaged gradients travel in the events (the tests recompute the errors from them)."""

    steps: int = 300
    width: int = 256
    batch: int = 32
    lr: float = 0.1
    warmup: int = 10
    ranks: tuple[int, ...] = (1, 4)
    error_feedback: str = "both"
    fp16: bool = True
    bucket_cap_mb: float = 0.1
    seed: int = 0
    grads: bool = False

    trains: ClassVar[bool] = False  # not the core's training: the program trains its own

    @classmethod
    def from_mapping(cls, data: Any) -> HooksSpec:
        table = spec_table(data, KIND, KEYS)
        v: dict[str, Any] = wholes(
            table,
            KIND,
            (
                ("steps", 1, 2000),
                ("width", 2, 512),
                ("batch", 1, 512),
                ("warmup", 2, 2000),
                ("seed", 0, 2**31 - 1),
            ),
        )
        if "lr" in table:
            v["lr"] = rate(f"{KIND}.lr", table["lr"], 10)
        if "bucket_cap_mb" in table:
            v["bucket_cap_mb"] = number(f"{KIND}.bucket_cap_mb", table["bucket_cap_mb"])
            if not 0 < v["bucket_cap_mb"] <= 100:
                raise ScenarioError(f"{KIND}.bucket_cap_mb", "must be above 0 and at most 100")
        if "ranks" in table:
            v["ranks"] = _ranks(table["ranks"])
        if "error_feedback" in table:
            v["error_feedback"] = choice(
                f"{KIND}.error_feedback", table["error_feedback"], FEEDBACK
            )
        for key in ("fp16", "grads"):
            if key in table:
                v[key] = flag(f"{KIND}.{key}", table[key])
        return cls(**v)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in KEYS}
        out["ranks"] = list(self.ranks)
        return out

    def fixed_steps(self, world: int) -> int:
        return self.steps

    def check_scenario(self, s: Scenario) -> None:
        if s.world_size < 2:
            raise ScenarioError("world_size", "averaging needs at least 2 ranks")
        if s.steps != self.steps:
            raise ScenarioError("steps", f"[{KIND}] steps sets the run's length; leave steps out")

    def variants(self) -> list[Variant]:
        out = [Variant("allreduce", "allreduce")]
        if self.fp16:
            out.append(Variant("fp16", "fp16"))
        feedback = {"both": (True, False), "on": (True,), "off": (False,)}[self.error_feedback]
        for r in self.ranks:
            for ef in feedback:
                out.append(Variant(f"powersgd-r{r}" + ("" if ef else "-noef"), "powersgd", r, ef))
        return out

    def shapes(self) -> list[tuple[str, tuple[int, ...]]]:
        """The model's parameters in order of definition."""
        w = self.width
        return [
            ("inp.weight", (w, FEATURES)),
            ("inp.bias", (w,)),
            ("hidden.weight", (w, w)),
            ("hidden.bias", (w,)),
            ("out.weight", (1, w)),
            ("out.bias", (1,)),
        ]


def _ranks(raw: Any) -> tuple[int, ...]:
    if not isinstance(raw, list | tuple) or not 0 <= len(raw) <= 4:
        raise ScenarioError(f"{KIND}.ranks", "must be a list of up to 4 ranks, like [1, 4]")
    out = tuple(whole(f"{KIND}.ranks[{i}]", r, 1, 64) for i, r in enumerate(raw))
    if len(set(out)) != len(out):
        raise ScenarioError(f"{KIND}.ranks", "names a rank twice")
    return out


def spec_of(rec: RunRecord) -> HooksSpec:
    return HooksSpec.from_mapping(rec.scenario.get(KIND, {}))


def compressed(shape: tuple[int, ...], rank_r: int) -> tuple[int, int, int] | None:
    """(n, m, r) when PowerSGD compresses a gradient of ``shape``, else None: it views it as
    ``shape[0]`` × the rest and compresses only when ``(n + m) · r · 2 < n · m``."""
    if len(shape) < 2:
        # a 1-D tensor is viewed as n × 1: r = 1 and (n + 1) · 2 < n never holds
        return None
    n = shape[0]
    m = 1
    for d in shape[1:]:
        m *= d
    r = min(n, m, rank_r)
    return (n, m, r) if (n + m) * r * MIN_COMPRESSION_RATE < n * m else None


@dataclass
class HooksRecord:
    """What the ranks reported: ``steps[(variant, step)][rank]`` and the low-rank views."""

    steps: dict[tuple[str, int], dict[int, Any]] = field(default_factory=dict)
    low_rank: dict[tuple[str, int], Any] = field(default_factory=dict)

    def apply(self, event: Any) -> None:
        if event.kind == "hook_step":
            self.steps.setdefault((event.variant, event.step), {})[event.rank] = event
        elif event.kind == "hook_low_rank":
            self.low_rank[(event.variant, event.step)] = event

    def complete(self, variants: list[str], world: int) -> int:
        """Leading steps every rank reported for every variant."""
        n = 0
        while all(len(self.steps.get((v, n), {})) == world for v in variants):
            n += 1
        return n

    def at(self, variant: str, step: int) -> dict[int, Any]:
        return self.steps.get((variant, step), {})

    def loss(self, variant: str, step: int) -> float | None:
        """The mean of the ranks' losses: the loss of the whole step's rows."""
        ranks = self.at(variant, step)
        return sum(e.loss for e in ranks.values()) / len(ranks) if ranks else None

    def sent(self, variant: str, step: int, rank: int = 0) -> int | None:
        e = self.at(variant, step).get(rank)
        return None if e is None else sum(e.sent)


def complete_steps(rec: RunRecord) -> int:
    spec = spec_of(rec)
    return rec.parts[KIND].complete([v.id for v in spec.variants()], rec.world_size)
