"""``python3 -m chord``: the command line of :mod:`chord.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
