"""Start-up of the window (placeholder until the window lands: runs the headless demo)."""

from __future__ import annotations

import argparse


def main(args: argparse.Namespace) -> int:
    from ddp_viz.cli import cmd_run

    args.json = False
    return cmd_run(args)
