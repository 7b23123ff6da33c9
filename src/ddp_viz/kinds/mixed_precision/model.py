"""Mixed precision under DDP (``[mixed_precision]``): the spec, its arms and the record of what
the ranks reported. Pure model layer.

One run trains the same small MLP on the same rows several ways, in lockstep: in float32; under
``autocast("cpu", torch.bfloat16)``; under float16 autocast with a ``GradScaler``; and in float32
with the all-reduce compressed to float16 (``fp16_compress_hook``) and to bfloat16
(``bf16_compress_hook``, registered under another name). At ``spike_step`` the last rank's rows
of the scaler's arm get targets ``spike`` off: an outlier batch whose scaled gradients overflow
float16 on that rank alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import flag, number, rate, wholes

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario
    from ddp_viz.model.timeline import RunRecord

KIND = "mixed_precision"
KEYS = (
    "steps",
    "width",
    "batch",
    "lr",
    "seed",
    "init_scale",
    "growth_interval",
    "spike_step",
    "spike",
    "tiny",
    "fsdp",
    "grads",
)
FEATURES = 8  # inputs: Linear(8, width) → tanh → Linear(width, width) → tanh → Linear(width, 1)
TINY_FEATURES = 4  # the last inputs are multiplied by ``tiny``: their weights' gradients are small


@dataclass(frozen=True)
class Arm:
    """One way of training: ``autocast`` is the autocast dtype ("" for none), ``scaler`` whether
    a GradScaler scales the loss, ``wire`` the dtype the comm hook all-reduces in."""

    id: str
    label: str
    autocast: str = ""
    scaler: bool = False
    wire: str = "float32"


ARMS = (
    Arm("fp32", "float32"),
    Arm("bf16", "autocast bf16", autocast="bfloat16"),
    Arm("fp16", "autocast fp16 + scaler", autocast="float16", scaler=True),
    Arm("wire_fp16", "fp16 on the wire", wire="float16"),
    Arm("wire_bf16", "bf16 on the wire", wire="bfloat16"),
)
# FSDP2's fully_shard with MixedPrecisionPolicy(): its defaults (nothing cast), and
# param_dtype=bfloat16 with reduce_dtype=float32
SHARDED_ARMS = (
    Arm("fsdp_fp32", "FSDP2, no policy"),
    Arm("fsdp_bf16", "FSDP2 bf16 params", autocast="bfloat16"),
)
AUTOCAST_ARMS = ("fp32", "bf16", "fp16")
WIRE_ARMS = ("fp32", "wire_fp16", "wire_bf16")
SCALER_ARM = "fp16"
BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def arm(arm_id: str) -> Arm:
    return next(a for a in ARMS + SHARDED_ARMS if a.id == arm_id)


@dataclass(frozen=True)
class PrecisionSpec:
    """``steps`` steps of ``batch`` rows a rank on a ``width``-wide MLP; the scaler starts at
    ``init_scale`` and doubles after ``growth_interval`` steps without inf; ``spike_step``
    (from 1, 0: none) is the step whose last rank's rows overflow float16; ``tiny`` scales
    the last inputs; ``fsdp``: also FSDP2 with and without bf16 parameters; ``grads``: every
    step's local and averaged gradients in the events."""

    steps: int = 8
    width: int = 16
    batch: int = 16
    lr: float = 0.05
    seed: int = 0
    init_scale: float = 1024.0
    growth_interval: int = 2
    spike_step: int = 5
    spike: float = 1000.0
    tiny: float = 1e-6
    fsdp: bool = True
    grads: bool = False

    trains: ClassVar[bool] = False  # not the core's training: the program trains its own

    @classmethod
    def from_mapping(cls, data: Any) -> PrecisionSpec:
        table = spec_table(data, KIND, KEYS)
        v: dict[str, Any] = wholes(
            table,
            KIND,
            (
                ("steps", 1, 200),
                ("width", 2, 256),
                ("batch", 1, 256),
                ("seed", 0, 2**31 - 1),
                ("growth_interval", 1, 1000),
                ("spike_step", 0, 200),
            ),
        )
        if "lr" in table:
            v["lr"] = rate(f"{KIND}.lr", table["lr"], 10)
        for key, low, high in (("init_scale", 1.0, 2.0**24), ("spike", 0.0, 1e6)):
            if key in table:
                v[key] = number(f"{KIND}.{key}", table[key])
                if not low <= v[key] <= high:
                    raise ScenarioError(f"{KIND}.{key}", f"must be from {low:g} to {high:g}")
        if "tiny" in table:
            v["tiny"] = number(f"{KIND}.tiny", table["tiny"])
            if not 0 < v["tiny"] <= 1:
                raise ScenarioError(f"{KIND}.tiny", "must be above 0 and at most 1")
        for key in ("fsdp", "grads"):
            if key in table:
                v[key] = flag(f"{KIND}.{key}", table[key])
        spec = cls(**v)
        if spec.spike_step > spec.steps:
            raise ScenarioError(f"{KIND}.spike_step", "must be at most steps (0: no spike)")
        return spec

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in KEYS}

    def fixed_steps(self, world: int) -> int:
        return self.steps

    def check_scenario(self, s: Scenario) -> None:
        if s.world_size < 2:
            raise ScenarioError("world_size", "averaging needs at least 2 ranks")
        if s.steps != self.steps:
            raise ScenarioError("steps", f"[{KIND}] steps sets the run's length; leave steps out")

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

    def values(self) -> int:
        """How many gradient values one all-reduce of the whole model carries."""
        total = 0
        for _, shape in self.shapes():
            n = 1
            for d in shape:
                n *= d
            total += n
        return total


def spec_of(rec: RunRecord) -> PrecisionSpec:
    return PrecisionSpec.from_mapping(rec.scenario.get(KIND, {}))


@dataclass
class PrecisionRecord:
    """What the ranks reported: ``steps[(arm, step)][rank]``."""

    steps: dict[tuple[str, int], dict[int, Any]] = field(default_factory=dict)
    refused: Any = None  # rank 0's precision_refused event
    sharded: dict[tuple[str, int], dict[int, Any]] = field(default_factory=dict)

    def apply(self, event: Any) -> None:
        if event.kind == "precision_step":
            self.steps.setdefault((event.arm, event.step), {})[event.rank] = event
        elif event.kind == "precision_refused":
            self.refused = event
        elif event.kind == "precision_sharded":
            self.sharded.setdefault((event.arm, event.step), {})[event.rank] = event

    def complete(self, world: int, fsdp: bool = False) -> int:
        """Leading steps every rank reported for every arm (and FSDP2's, with ``fsdp``)."""
        n = 0
        while all(len(self.steps.get((a.id, n), {})) == world for a in ARMS) and (
            not fsdp or all(len(self.sharded.get((a.id, n), {})) == world for a in SHARDED_ARMS)
        ):
            n += 1
        return n

    def fsdp_at(self, arm_id: str, step: int) -> dict[int, Any]:
        return self.sharded.get((arm_id, step), {})

    def at(self, arm_id: str, step: int) -> dict[int, Any]:
        return self.steps.get((arm_id, step), {})

    def loss(self, arm_id: str, step: int) -> float | None:
        """The mean of the ranks' losses: the loss of the whole step's rows."""
        ranks = self.at(arm_id, step)
        return sum(e.loss for e in ranks.values()) / len(ranks) if ranks else None

    def skipped(self, step: int, world: int) -> SkipVerdict:
        """How the ranks of the scaler's arm stood at ``step``: all stepped, all skipped, or
        split (some stepped, some not: their replicas now differ)."""
        ranks = self.at(SCALER_ARM, step)
        stepped = [r for r in range(world) if r in ranks and ranks[r].stepped]
        skipped = [r for r in range(world) if r in ranks and not ranks[r].stepped]
        return SkipVerdict(stepped, skipped, len(ranks) == world)

    def first_skip(self, steps: int, world: int) -> int | None:
        """The first step (from 0) some rank of the scaler's arm skipped."""
        return next((s for s in range(steps) if self.skipped(s, world).skipped), None)


@dataclass(frozen=True)
class SkipVerdict:
    stepped: list[int]
    skipped: list[int]
    whole: bool

    @property
    def together(self) -> bool:
        """Every rank did the same: all stepped or all skipped."""
        return self.whole and not (self.stepped and self.skipped)


def complete_steps(rec: RunRecord) -> int:
    return rec.parts[KIND].complete(rec.world_size, spec_of(rec).fsdp)
