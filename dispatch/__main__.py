"""``python -m dispatch``: the command line (see ``dispatch.cli``)."""

from __future__ import annotations

import atexit
import os
import sys

from dispatch.cli import main

# Commands that run dispatch's own code alone and whose time is a figure (a quick calibration's
# bar is the command's): they end once the exit handlers have run and the output is flushed,
# without the interpreter's teardown of torch's and CuPy's modules, which takes longer than a
# quick calibration's measuring.
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
