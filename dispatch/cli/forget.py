"""Delete what scripts' earlier runs learned and kept (``dispatch.routing.learned``): every
script's, or only SCRIPT's. The next run of a script starts as its first did. The calibration
is kept (``dispatch calibrate`` measures it again)."""

from __future__ import annotations

import argparse

from dispatch.routing import learned

HELP = "delete what scripts' earlier runs learned (all, or one script's)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("script", metavar="SCRIPT", nargs="?", help="forget this script only")


def run(args: argparse.Namespace) -> int:
    removed = learned.forget(args.script)
    which = args.script if args.script is not None else "every script"
    print(f"dispatch forget: {removed} file(s) deleted ({which}) from {learned.folder()}")
    if not removed and args.script is not None:  # a name mistyped reads otherwise as forgotten
        print(f"  nothing was kept for {args.script}: no run of it under dispatch kept a file (or it was forgotten)")
    return 0
