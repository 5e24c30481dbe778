"""``python -m dispatch``: the command line (see ``dispatch.cli``)."""

from __future__ import annotations

import sys

from dispatch.cli import main

if __name__ == "__main__":
    sys.exit(main())
