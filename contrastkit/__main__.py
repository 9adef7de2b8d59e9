"""``python -m contrastkit ...``: the same command line as the ``contrastkit`` script."""

import sys

from .cli import main

sys.exit(main())
