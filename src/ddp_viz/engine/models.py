"""Build the torch module a :class:`ModelSpec` describes, identically in every process."""

from __future__ import annotations

import torch
from torch import nn

from ddp_viz.engine.tensors import encode_all
from ddp_viz.model.modelspec import ModelSpec
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.tensors import Tensor


def torch_dtype(scenario: Scenario) -> torch.dtype:
    return {"float32": torch.float32, "float64": torch.float64}[scenario.model.dtype]


def build_model(scenario: Scenario) -> nn.Module:
    """The scenario's model with its initial parameters (same on every rank and in the
    reference: the seed and the values come from the scenario alone)."""
    spec: ModelSpec = scenario.model
    # listing: model
    if spec.kind == "linear":
        torch.manual_seed(0)
        model: nn.Module = nn.Linear(1, 1)
        with torch.no_grad():
            model.weight.fill_(scenario.init_weight)
            model.bias.fill_(scenario.init_bias)
    else:
        torch.manual_seed(spec.seed)
        act = {"tanh": nn.Tanh, "relu": nn.ReLU}[spec.activation]
        widths = [1, *spec.hidden, 1]
        layers: list[nn.Module] = []
        for i in range(len(widths) - 1):
            if i:
                if spec.norm == "batch":
                    layers.append(nn.BatchNorm1d(widths[i]))
                layers.append(act())
            layers.append(nn.Linear(widths[i], widths[i + 1]))
        model = WithUnusedBranch(*layers) if spec.unused else nn.Sequential(*layers)
    # end listing
    return model.to(torch_dtype(scenario))


class WithUnusedBranch(nn.Sequential):
    """The layers, and ``aux``: a second head the forward leaves out unless ``use_aux`` is set
    (as a script's auxiliary loss head might be, some of the time). Its parameters keep the
    layers' names, then ``aux.weight`` and ``aux.bias``."""

    def __init__(self, *layers: nn.Module) -> None:
        super().__init__(*layers)
        # listing: unused-branch-init
        self.use_aux = False
        self.aux = nn.Linear(1, 1)  # registered after the layers, so named last
        # end listing

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # listing: unused-branch-forward
        out = x
        for name, layer in self.named_children():
            if name != "aux":
                out = layer(out)
        return out + self.aux(x) if self.use_aux else out
        # end listing


def named_buffers(module: nn.Module) -> dict[str, Tensor]:
    """The floating-point buffers (BatchNorm's running statistics) in the events' form."""
    return encode_all({n: b for n, b in module.named_buffers() if b.is_floating_point()})


def named_values(module: nn.Module) -> dict[str, Tensor]:
    """Every parameter in the events' form (a list, or a summary when big), by name."""
    return encode_all(dict(module.named_parameters()))


def named_grad_tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    return {
        n: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p))
        for n, p in module.named_parameters()
    }
