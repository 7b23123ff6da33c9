# ddp-viz watch puts this folder first on PYTHONPATH for the command it runs: every Python
# process of that command loads this file at start-up. Outside a watch it does nothing.
import os
import sys

if os.environ.get("DDP_VIZ_ADDR"):
    home = os.environ.get("DDP_VIZ_HOME")
    if home and home not in sys.path:
        sys.path.append(home)  # last: the script's own packages come first
    try:
        from ddp_viz.kinds.watched.watch.bootstrap import install

        install()
    except Exception as exc:  # never stop the user's program
        print(f"ddp-viz watch: not watching this process: {exc}", file=sys.stderr)

# the environment's own sitecustomize, if any, which this file shadows: run it as well
_here = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    _file = os.path.join(_entry or ".", "sitecustomize.py")
    if os.path.abspath(_entry or ".") != _here and os.path.isfile(_file):
        with open(_file, encoding="utf-8") as _f:
            exec(
                compile(_f.read(), _file, "exec"), {"__name__": "sitecustomize", "__file__": _file}
            )
        break
