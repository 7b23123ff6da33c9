"""``python -m ddp_viz.kinds.resuming.engine.agent ARGS…``: torchrun (``torch.distributed.run
ARGS…``) that ends when the rank that started it ends.

The parent-death signal is asked for here and kept across ``exec``: when the lesson's rank is
stopped (the engine kills a cancelled run's ranks with SIGKILL), torchrun gets SIGTERM, which
it handles by stopping its workers (SIGTERM, then SIGKILL) before it exits.
"""

from __future__ import annotations

import os
import signal
import sys

from ddp_viz.platform import die_with_parent

if __name__ == "__main__":
    parent = int(os.environ.get("DDP_VIZ_AGENT_PARENT", "0"))
    die_with_parent(signal.SIGTERM)
    if parent and os.getppid() != parent:  # the rank was gone before the signal was asked for
        sys.exit(0)
    os.execv(sys.executable, [sys.executable, "-m", "torch.distributed.run", *sys.argv[1:]])
