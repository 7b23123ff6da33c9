"""``python -m ddp_viz.engine``: the engine process (commands on stdin, events on stdout)."""

import os
import signal
import sys
from typing import Any

from ddp_viz.engine.pool import set_parent_death_signal
from ddp_viz.engine.server import Engine


def main(argv: list[str] | None = None) -> int:
    # Set before the forkserver starts: every rank inherits them.
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    set_parent_death_signal(signal.SIGTERM)
    engine = Engine(sys.stdout)

    def _on_signal(signum: int, _frame: Any) -> None:
        engine.running = False
        engine.pool.shutdown()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    return engine.serve(sys.stdin)


sys.exit(main())
