"""Representation quality: weighted kNN, linear probe, alignment / uniformity."""

from .geometry import alignment_uniformity
from .knn import knn_accuracy, knn_predict
from .linear import linear_probe

__all__ = ["alignment_uniformity", "knn_accuracy", "knn_predict", "linear_probe"]
