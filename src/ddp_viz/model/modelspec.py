"""What network the ranks train (``[model]``) and how DDP wraps it (``[ddp]``).

Pure model layer: the engine builds the torch module from a :class:`ModelSpec`; everything
else knows the parameters only by the names and shapes :meth:`ModelSpec.parameters` gives,
which are exactly ``named_parameters()`` of the module the engine builds (a test checks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ddp_viz.model.errors import ScenarioError as SpecError

KINDS = ("linear", "mlp")
ACTIVATIONS = ("tanh", "relu")
DTYPES = ("float32", "float64")
MODEL_KEYS = ("kind", "hidden", "activation", "seed", "dtype")
DDP_KEYS = ("bucket_cap_mb",)
MAX_HIDDEN_LAYERS = 4
MAX_WIDTH = 512
# Tensors above 64 values travel as summaries, so event lines stay small at any size; the cap
# keeps a run of CPU ranks on a laptop quick (the buckets lesson's MLP has about 130 k values).
MAX_PARAMETER_VALUES = 300_000


def spec_table(data: Any, name: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    """A ``[name]`` table with only known keys, or ScenarioError naming the first bad one."""
    if not isinstance(data, Mapping):
        raise SpecError(name, f"must be a table ([{name}])")
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise SpecError(f"{name}.{unknown[0]}", f"unknown key; allowed: {', '.join(keys)}")
    return data


@dataclass(frozen=True)
class ParamInfo:
    name: str
    shape: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class ModelSpec:
    """``linear``: ``nn.Linear(1, 1)`` starting at the scenario's init_weight / init_bias.
    ``mlp``: ``nn.Sequential(Linear(1, h0), act, Linear(h0, h1), act, …, Linear(hk, 1))`` with
    initial weights from ``torch.manual_seed(seed)`` (identical on every rank).
    ``dtype``: what the ranks compute in (float32, PyTorch's default; float64 to compare with
    the float64 reference far below float32's rounding, about 1e-6 here)."""

    kind: str = "linear"
    hidden: tuple[int, ...] = (8,)
    activation: str = "tanh"
    seed: int = 0
    dtype: str = "float32"

    @classmethod
    def from_mapping(cls, data: Any) -> ModelSpec:
        data = spec_table(data, "model", MODEL_KEYS)
        kind = data.get("kind", "linear")
        if kind not in KINDS:
            raise SpecError("model.kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
        dtype = data.get("dtype", "float32")
        if dtype not in DTYPES:
            raise SpecError("model.dtype", f"must be one of {', '.join(DTYPES)}, got {dtype!r}")
        if kind == "linear":
            extra = [k for k in ("hidden", "activation", "seed") if k in data]
            if extra:
                raise SpecError(f"model.{extra[0]}", 'only for kind = "mlp"')
            return cls(kind="linear", dtype=dtype)
        hidden = data.get("hidden", [8])
        if isinstance(hidden, int) and not isinstance(hidden, bool):
            hidden = [hidden]
        if not isinstance(hidden, list | tuple) or not hidden:
            raise SpecError("model.hidden", "must be a list of layer widths, such as [8]")
        if len(hidden) > MAX_HIDDEN_LAYERS:
            raise SpecError("model.hidden", f"at most {MAX_HIDDEN_LAYERS} hidden layers")
        for i, h in enumerate(hidden):
            if isinstance(h, bool) or not isinstance(h, int) or not 1 <= h <= MAX_WIDTH:
                raise SpecError(
                    f"model.hidden[{i}]", f"must be a whole number from 1 to {MAX_WIDTH}, got {h!r}"
                )
        activation = data.get("activation", "tanh")
        if activation not in ACTIVATIONS:
            raise SpecError(
                "model.activation", f"must be one of {', '.join(ACTIVATIONS)}, got {activation!r}"
            )
        seed = data.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise SpecError("model.seed", f"must be a whole number ≥ 0, got {seed!r}")
        spec = cls(kind="mlp", hidden=tuple(hidden), activation=activation, seed=seed, dtype=dtype)
        total = sum(p.numel for p in spec.parameters())
        if total > MAX_PARAMETER_VALUES:
            raise SpecError(
                "model.hidden", f"{total:,} parameters; at most {MAX_PARAMETER_VALUES:,} for now"
            )
        return spec

    def to_dict(self) -> dict[str, Any]:
        extra = {} if self.dtype == "float32" else {"dtype": self.dtype}
        if self.kind == "linear":
            return {"kind": "linear", **extra}
        return {
            "kind": "mlp",
            "hidden": list(self.hidden),
            "activation": self.activation,
            "seed": self.seed,
            **extra,
        }

    def parameters(self) -> list[ParamInfo]:
        """Names and shapes in ``named_parameters()`` order."""
        if self.kind == "linear":
            return [ParamInfo("weight", (1, 1)), ParamInfo("bias", (1,))]
        widths = [1, *self.hidden, 1]
        out = []
        for layer in range(len(widths) - 1):
            index = 2 * layer  # an activation module sits between two Linear layers
            out.append(ParamInfo(f"{index}.weight", (widths[layer + 1], widths[layer])))
            out.append(ParamInfo(f"{index}.bias", (widths[layer + 1],)))
        return out

    def describe(self) -> str:
        dtype = "" if self.dtype == "float32" else f", {self.dtype}"
        if self.kind == "linear":
            return f"nn.Linear(1, 1){dtype}"
        widths = " → ".join(str(w) for w in (1, *self.hidden, 1))
        return f"MLP {widths} ({self.activation}), seed {self.seed}{dtype}"


@dataclass(frozen=True)
class DDPSpec:
    bucket_cap_mb: float = 25.0  # DistributedDataParallel's own default

    @classmethod
    def from_mapping(cls, data: Any) -> DDPSpec:
        data = spec_table(data, "ddp", DDP_KEYS)
        cap = data.get("bucket_cap_mb", 25.0)
        if isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 < cap <= 1024:
            raise SpecError("ddp.bucket_cap_mb", f"must be a number in (0, 1024], got {cap!r}")
        return cls(bucket_cap_mb=float(cap))

    def to_dict(self) -> dict[str, Any]:
        return {"bucket_cap_mb": self.bucket_cap_mb}
