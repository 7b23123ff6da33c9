"""A DataLoader worker's error, as the rank's main process re-raised it (pure).

PyTorch's loader catches a worker's exception and raises one of its own in the main process:
"Caught ValueError in DataLoader worker process 0." with the worker's traceback as text
(``torch._utils.ExceptionWrapper.reraise``). The rank's own frame is then the
loader's ``next()``; the line that failed is in that text, and the report names it.
"""

from __future__ import annotations

import re

_WORKER = re.compile(r"^Caught (\w+) in DataLoader worker process (\d+)\.")
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (\S+)$', re.MULTILINE)


def worker_error(message: str) -> tuple[str, str, str] | None:
    """A DataLoader worker's error, as the main process re-raised it ("Caught ValueError in
    DataLoader worker process 0." and the worker's traceback as text): the original error's
    line, its innermost frame outside the installed packages and the standard library, and
    the worker. None for any other message."""
    found = _WORKER.match(message)
    if found is None or "Original Traceback" not in message:
        return None
    frames = _FRAME.findall(message)
    mine = [f for f in frames if "site-packages" not in f[0] and "/lib/python3" not in f[0]]
    path, line, func = (mine or frames or [("?", "0", "?")])[-1]
    last = [ln for ln in message.strip().splitlines() if ln.strip()][-1].strip()
    where = f"{path.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line} in {func}"
    return last, where, found.group(2)
