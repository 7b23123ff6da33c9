"""Imported once by the forkserver, before it forks any rank.

Everything a rank needs is imported here, including what the first ``DDP(...)`` construction
imports lazily (``torch._dynamo`` pulls about 800 modules: sympy, mpmath …). Ranks forked
afterwards share these pages and pay none of it. Import only: never start threads here
(no process group, no backward pass), since threads do not survive ``fork``.
"""

import torch
import torch._dynamo
import torch.distributed
import torch.distributed.algorithms.ddp_comm_hooks.default_hooks
import torch.nn.parallel

import ddp_viz.engine.bare
import ddp_viz.engine.kind_parts
import ddp_viz.engine.rank
import ddp_viz.engine.reference

torch.set_num_threads(1)

# every kind's engine part, so a forked rank imports none of it
ddp_viz.engine.kind_parts.engine_parts()
