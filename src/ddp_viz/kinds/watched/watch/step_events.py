"""Inside a watched rank: one step's copies of its tensors, turned into event lines on the
sender's thread (off the training's)."""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from ddp_viz.engine.tensors import encode_all
from ddp_viz.kinds.watched.watch import checks
from ddp_viz.model import protocol

RUN = 1


class Step:
    """One step's copies, and the event lines they make."""

    def __init__(self, step: int, rank: int, local: dict, averaged: dict, params: dict, buckets):  # type: ignore[no-untyped-def]
        self.step, self.rank = step, rank
        self.local, self.averaged, self.params, self.buckets = local, averaged, params, buckets
        self.forward: list[list[float]] = []
        self.account: Any = None
        self.snapshot: dict[str, torch.Tensor] = {}

    def lines(self) -> list[str]:
        """The step's events as lines (its timings alone when it was not captured in full);
        the CPU time this takes counts against the capture's budget."""
        t0 = time.thread_time()
        try:
            return [protocol.encode(e) for e in self.events()]
        except Exception:  # never into the script, nor into the sender
            return []
        finally:
            if self.account is not None and self.params:
                self.account(time.thread_time() - t0)

    def events(self) -> list[protocol.Event]:
        run, step, rank = RUN, self.step, self.rank
        buckets = [self.buckets[i] for i in sorted(self.buckets)]
        allreduce = [[b["launched"], b["finished"]] for b in buckets if b["finished"]]
        spans = {"forward": self.forward, "allreduce": allreduce}
        timing = protocol.Timing(run, step, rank, spans, buckets=buckets)
        if not self.params:
            return [timing]
        order = list(self.params)
        local = encode_all({n: self.local[n] for n in order if n in self.local}, False)
        averaged = encode_all({n: self.averaged[n] for n in order if n in self.averaged})
        params = encode_all(self.params)
        digests = [checks.digests_event(step, rank, self.snapshot)] if self.snapshot else []
        return [
            protocol.LocalGrad(run, step, rank, math.nan, local, [b["params"] for b in buckets]),
            protocol.AveragedGrad(run, step, rank, averaged),
            protocol.Params(run, step, rank, params),
            *digests,
            timing,
        ]
