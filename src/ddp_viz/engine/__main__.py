"""``python -m ddp_viz.engine``: the engine process (commands on stdin, events on stdout)."""

import os
import signal
import sys
from typing import Any

from ddp_viz import platform
from ddp_viz.engine.server import Engine


def main(argv: list[str] | None = None) -> int:
    # Set before the forkserver starts (or any rank is spawned): every rank inherits them.
    platform.rank_env_defaults(os.environ)
    platform.die_with_parent(signal.SIGTERM)
    engine = Engine(sys.stdout)

    def _on_signal(signum: int, _frame: Any) -> None:
        engine.running = False
        engine.pool.shutdown()
        os._exit(128 + signum)

    for sig in platform.STOP_SIGNALS:
        signal.signal(sig, _on_signal)
    return engine.serve(sys.stdin)


if __name__ == "__main__":  # a spawned rank imports this module as __mp_main__: no engine there
    sys.exit(main())
