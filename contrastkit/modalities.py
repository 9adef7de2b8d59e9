"""The composition root: imports the built-in modality packages, which register themselves
(:func:`contrastkit.training.register_modality`) with their datasets, trainers and export
architectures.

The packages are independent of one another and nothing below this module imports one of
them; ``contrastkit/__init__.py`` imports this module, so ``import contrastkit.<anything>``
knows the built-in datasets. A modality outside the package registers the same way
(``docs/guides/adding-a-modality.md``).
"""

from . import graphs, images, tabular, text

BUILT_IN = (images, tabular, text, graphs)

__all__ = ["BUILT_IN"]
