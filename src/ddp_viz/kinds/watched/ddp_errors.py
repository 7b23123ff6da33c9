"""DDP's own errors in words that name the parameter (pure): the reducer's messages, as
torch 2.13 writes them (``strings`` of libtorch_cpu.so; torch/csrc/distributed/c10d/
reducer.cpp), and the rank whose model differs when DDP is built.

torch names no parameter in "Expected to have finished reduction" without
``TORCH_DISTRIBUTED_DEBUG``; the watch saw which parameters got no gradient in the step before
(``WatchFailure.no_grad``), and the shapes of the model each rank built (``params``).
"""

from __future__ import annotations

import re

from ddp_viz.kinds.watched.events import WatchFailure

_UNUSED = "Expected to have finished reduction in the prior iteration"
_STATIC = "not compatible with static_graph set to True"
_TWICE = "Expected to mark a variable ready only once"
_SIZES = re.compile(r"params\[(\d+)\] in this process with sizes \[([^\]]*)\] appears not to match")
_COUNT = re.compile(r"Rank (\d+) has (\d+) params, while rank (\d+) has inconsistent (\d+) params")
MAX_PARAMS = 6


def _names(names: list[str]) -> str:
    more = len(names) - MAX_PARAMS
    return ", ".join(names[:MAX_PARAMS]) + (f" and {more} more" if more > 0 else "")


def ddp_error(f: WatchFailure, peers: list[WatchFailure] | None = None) -> list[str]:
    """DDP's reducer errors in words that name the parameters (torch's own need
    ``TORCH_DISTRIBUTED_DEBUG`` for names); [] for any other error."""
    msg = f.message
    if _UNUSED in msg and _STATIC in msg:
        who = f" ({_names(f.no_grad)} got none in the step before)" if f.no_grad else ""
        return [
            f"DDP: the set of parameters that get a gradient changed between steps{who}, "
            "which static_graph=True forbids",
            "fix: DDP(..., find_unused_parameters=True) instead of static_graph, or use the "
            "same parameters every step",
        ]
    if _UNUSED in msg:
        if f.no_grad:
            who = f"{_names(f.no_grad)} got no gradient in step {max(f.step - 1, 1)}"
        else:
            who = "some parameters got no gradient in the step before"
        return [
            f"DDP: {who}: not used in producing the loss, so their bucket's all-reduce never "
            "ran and DDP refuses to start the next step",
            "fix: use them in the loss every step, or DDP(..., find_unused_parameters=True); "
            "static_graph=True if the same ones are unused every step",
        ]
    if _TWICE in msg:
        return [
            "DDP: a parameter got its gradient twice in one backward (a module used twice "
            "under reentrant checkpointing, or a parameter used outside forward)",
            "fix: torch.utils.checkpoint(..., use_reentrant=False), or DDP(..., "
            "static_graph=True) if the graph is the same every step",
        ]
    return _model_differs(f, peers or [])


def _model_differs(f: WatchFailure, peers: list[WatchFailure]) -> list[str]:
    sizes, count = _SIZES.search(f.message), _COUNT.search(f.message)
    if sizes is not None:
        i = int(sizes.group(1))
        name = f.params[i]["name"] if i < len(f.params) else f"parameter #{i}"
        shape = "×".join(s.strip() for s in sizes.group(2).split(",") if s.strip())
        mine = f.params[i]["shape"] if i < len(f.params) else []
        theirs = [
            f"rank {p.rank}'s [{'×'.join(map(str, q['shape']))}]"
            for p in sorted(peers, key=lambda p: p.rank)
            for q in p.params
            if p.rank != f.rank and q["name"] == name and q["shape"] != mine
        ]
        other = ", ".join(theirs) if theirs else "rank 0's another"
        return [
            f"DDP: the model differs between ranks: rank {f.rank}'s {name} has shape [{shape}], "
            f"{other}",
            "fix: build the same model on every rank (no rank-dependent sizes)",
        ]
    if count is not None:
        a, na, b, nb = count.groups()
        return [
            f"DDP: the model differs between ranks: rank {a} has {na} parameters, rank {b} "
            f"has {nb}",
            "fix: build the same model on every rank (no rank-dependent layers)",
        ]
    return []


def model_culprit(failures: list[WatchFailure], world: int) -> int | None:
    """The rank whose model differs, by the ranks' own words when DDP was built: each rank
    that sees another count of parameters names the other as "inconsistent" (the odd one is
    named most); each rank whose sizes differ from process 0's says so (when every rank but 0
    says it, at 3 ranks or more, rank 0 is the odd one). None: no such error, or a tie."""
    votes: dict[int, int] = {}
    sizes = sorted({f.rank for f in failures if _SIZES.search(f.message)})
    for f in failures:
        count = _COUNT.search(f.message)
        if count is not None:
            votes[int(count.group(3))] = votes.get(int(count.group(3)), 0) + 1
    if not votes and sizes:
        if world >= 3 and sizes == list(range(1, world)):
            return 0
        return sizes[0]
    best = sorted(votes.items(), key=lambda kv: -kv[1])
    if not best or (len(best) > 1 and best[0][1] == best[1][1]):
        return None
    return best[0][0]
