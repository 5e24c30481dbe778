"""``python -m dispatch``: the command line (see ``dispatch.cli``)."""

from __future__ import annotations

import atexit
import os
import sys

from dispatch.cli import main

# Commands that run dispatch's own code alone and whose time is a figure (a quick calibration's
# bar is the command's): they end once the exit handlers have run and the output is flushed,
# without the interpreter's teardown of torch's and CuPy's modules: a quick calibration's command
# then took 0.45-0.5 s more than its measuring on an H100 machine (0.9 s before), 0.2 s on a 2-core
# one (0.6 s before).
ENDS_AT_ONCE = frozenset({"calibrate"})


def _end(code: int) -> None:
    atexit._run_exitfuncs()  # every handler, as the interpreter would run them (last registered first)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a closed pipe: the interpreter reports it, as it would have
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    code = main()
    if sys.argv[1:2] and sys.argv[1] in ENDS_AT_ONCE:
        _end(code)
    sys.exit(code)
