"""contrastkit: contrastive representation learning objectives, exactly as the papers define
them, with the diagnostics that explain why one beats another.

Importing contrastkit registers the built-in modalities (:mod:`contrastkit.modalities`), so
their datasets and trainers are known to every entry point, library or command line.
"""

from . import modalities  # noqa: F401  (registration)
from ._version import __version__

__all__ = ["__version__"]
