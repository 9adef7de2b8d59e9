"""Sub-commands of the ``contrastkit`` CLI (see :mod:`contrastkit.cli`)."""
