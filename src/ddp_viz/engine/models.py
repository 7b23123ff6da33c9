"""Build the torch module a :class:`ModelSpec` describes, identically in every process."""

from __future__ import annotations

import torch
from torch import nn

from ddp_viz.engine.tensors import encode
from ddp_viz.model.modelspec import ModelSpec
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.tensors import Tensor


def torch_dtype(scenario: Scenario) -> torch.dtype:
    return {"float32": torch.float32, "float64": torch.float64}[scenario.model.dtype]


def build_model(scenario: Scenario) -> nn.Module:
    """The scenario's model with its initial parameters (same on every rank and in the
    reference: the seed and the values come from the scenario alone)."""
    spec: ModelSpec = scenario.model
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
                layers.append(act())
            layers.append(nn.Linear(widths[i], widths[i + 1]))
        model = nn.Sequential(*layers)
    return model.to(torch_dtype(scenario))


def named_values(module: nn.Module) -> dict[str, Tensor]:
    """Every parameter in the events' form (a list, or a summary when big), by name."""
    return {n: encode(p) for n, p in module.named_parameters()}


def named_grad_tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    return {
        n: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p))
        for n, p in module.named_parameters()
    }


def named_grads(module: nn.Module) -> dict[str, Tensor]:
    return {n: encode(g) for n, g in named_grad_tensors(module).items()}
