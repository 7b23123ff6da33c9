"""Two real model shapes for torchrun (CPU, gloo), for watching models with many tensors: a
ResNet-18 (its 62 parameter tensors and 8 basic blocks, at a quarter of its width so that eight
ranks fit two cores) on 32×32 images, and a small transformer encoder (198 parameter tensors:
16 layers of 12) on token sequences. It knows nothing of ddp-viz.

    torchrun --standalone --nproc-per-node 8 real_models.py resnet|transformer [--steps N]
        [--batch B] [--hang-at S]

``--hang-at S``: rank 1 stops at step S in a long sleep (a hang for the page to name).
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    """ResNet's basic block: two 3×3 convolutions, each with BatchNorm, and the shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


def resnet18(width: int = 16, classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = [
        nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()
    ]  # fmt: skip
    cin = width
    for i, cout in enumerate((width, 2 * width, 4 * width, 8 * width)):
        stride = 1 if i == 0 else 2
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


class Encoder(nn.Module):
    def __init__(self, vocab: int = 64, dim: int = 32, layers: int = 16, seq: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq, dim))
        layer = nn.TransformerEncoderLayer(dim, 4, 2 * dim, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.body(self.embed(tokens) + self.pos)))


def batch(kind: str, size: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    if kind == "resnet":
        return torch.randn(size, 3, 32, 32, generator=gen), torch.randint(
            10, (size,), generator=gen
        )
    tokens = torch.randint(64, (size, 16), generator=gen)
    return tokens, tokens.roll(-1, dims=1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["resnet", "transformer"])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--hang-at", type=int, default=-1)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    torch.manual_seed(0)
    model = DDP(resnet18() if args.kind == "resnet" else Encoder())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        if step == args.hang_at and rank == 1:
            time.sleep(600)
        x, y = batch(args.kind, args.batch, gen)
        optimizer.zero_grad()
        out = model(x)
        F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1)).backward()
        optimizer.step()
    del model  # DDP first: a reducer freed after the group destroys it holding the GIL (a hang)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
