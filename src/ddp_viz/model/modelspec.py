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
from ddp_viz.model.values import choice, flag

KINDS = ("linear", "mlp")
ACTIVATIONS = ("tanh", "relu")
DTYPES = ("float32", "float64")
NORMS = ("none", "batch")
MODEL_KEYS = ("kind", "hidden", "activation", "seed", "dtype", "norm", "unused")
DDP_KEYS = ("bucket_cap_mb", "forward_sync_buffers", "find_unused_parameters")
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
    the float64 reference far below float32's rounding, about 1e-6 here).
    ``norm = "batch"``: a ``BatchNorm1d`` after each hidden ``Linear`` (before the activation),
    whose running statistics are buffers, not parameters.
    ``unused``: the model also holds ``aux``, a ``Linear(1, 1)`` its forward never calls, so
    DDP's reducer waits for gradients that never come."""

    kind: str = "linear"
    hidden: tuple[int, ...] = (8,)
    activation: str = "tanh"
    seed: int = 0
    dtype: str = "float32"
    norm: str = "none"
    unused: bool = False

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
            extra = [k for k in ("hidden", "activation", "seed", "norm", "unused") if k in data]
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
        spec = cls(
            kind="mlp",
            hidden=tuple(hidden),
            activation=activation,
            seed=seed,
            dtype=dtype,
            norm=choice("model.norm", data.get("norm", "none"), NORMS),
            unused=flag("model.unused", data.get("unused", False)),
        )
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
            "norm": self.norm,
            "unused": self.unused,
            **extra,
        }

    @property
    def per_layer(self) -> int:
        """Modules per hidden layer in the ``nn.Sequential``: Linear, (BatchNorm1d,) activation."""
        return 3 if self.norm == "batch" else 2

    def parameters(self) -> list[ParamInfo]:
        """Names and shapes in ``named_parameters()`` order."""
        if self.kind == "linear":
            return [ParamInfo("weight", (1, 1)), ParamInfo("bias", (1,))]
        widths = [1, *self.hidden, 1]
        out = []
        for layer in range(len(widths) - 1):
            # an activation (and a BatchNorm1d) sit between two Linear layers
            index = self.per_layer * layer
            out.append(ParamInfo(f"{index}.weight", (widths[layer + 1], widths[layer])))
            out.append(ParamInfo(f"{index}.bias", (widths[layer + 1],)))
            if self.norm == "batch" and layer < len(self.hidden):
                out.append(ParamInfo(f"{index + 1}.weight", (widths[layer + 1],)))
                out.append(ParamInfo(f"{index + 1}.bias", (widths[layer + 1],)))
        if self.unused:
            out += [ParamInfo("aux.weight", (1, 1)), ParamInfo("aux.bias", (1,))]
        return out

    def buffers(self) -> list[ParamInfo]:
        """The floating-point buffers, in ``named_buffers()`` order: each BatchNorm1d's running
        mean and variance (its integer ``num_batches_tracked`` is left out)."""
        if self.kind != "mlp" or self.norm != "batch":
            return []
        out = []
        for layer, width in enumerate(self.hidden):
            index = self.per_layer * layer + 1
            out.append(ParamInfo(f"{index}.running_mean", (width,)))
            out.append(ParamInfo(f"{index}.running_var", (width,)))
        return out

    def describe(self) -> str:
        dtype = "" if self.dtype == "float32" else f", {self.dtype}"
        if self.kind == "linear":
            return f"nn.Linear(1, 1){dtype}"
        widths = " → ".join(str(w) for w in (1, *self.hidden, 1))
        norm = ", BatchNorm1d" if self.norm == "batch" else ""
        unused = ", unused aux" if self.unused else ""
        return f"MLP {widths} ({self.activation}{norm}{unused}), seed {self.seed}{dtype}"


DEFAULT_BUCKET_CAP_MB = 25.0  # DistributedDataParallel's own default


@dataclass(frozen=True)
class DDPSpec:
    """Arguments of ``DistributedDataParallel(model, …)``, with DDP's own defaults.

    ``forward_sync_buffers``: at the start of every forward, broadcast rank 0's buffers
    (BatchNorm's running statistics) to every rank; torch 2.13's name for the deprecated
    ``broadcast_buffers``. ``find_unused_parameters``: after each forward, walk the autograd
    graph and mark parameters it does not reach as ready, so their buckets still all-reduce."""

    bucket_cap_mb: float = DEFAULT_BUCKET_CAP_MB
    forward_sync_buffers: bool = True
    find_unused_parameters: bool = False

    @classmethod
    def from_mapping(cls, data: Any) -> DDPSpec:
        data = spec_table(data, "ddp", DDP_KEYS)
        cap = data.get("bucket_cap_mb", DEFAULT_BUCKET_CAP_MB)
        if isinstance(cap, bool) or not isinstance(cap, int | float) or not 0 < cap <= 1024:
            raise SpecError("ddp.bucket_cap_mb", f"must be a number in (0, 1024], got {cap!r}")
        return cls(
            bucket_cap_mb=float(cap),
            forward_sync_buffers=flag(
                "ddp.forward_sync_buffers", data.get("forward_sync_buffers", True)
            ),
            find_unused_parameters=flag(
                "ddp.find_unused_parameters", data.get("find_unused_parameters", False)
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "bucket_cap_mb": self.bucket_cap_mb,
            "forward_sync_buffers": self.forward_sync_buffers,
            "find_unused_parameters": self.find_unused_parameters,
        }
