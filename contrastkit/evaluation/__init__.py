"""Representation quality: weighted kNN, linear probe / linear evaluation, alignment /
uniformity, and the papers' image analyses (:mod:`.analyses`)."""

from .geometry import alignment_uniformity
from .knn import knn_accuracies, knn_accuracy, knn_predict, knn_predict_many
from .linear import linear_probe
from .linear_eval import label_fraction_probe, linear_eval, topk_accuracy

__all__ = [
    "alignment_uniformity",
    "knn_accuracies",
    "knn_accuracy",
    "knn_predict",
    "knn_predict_many",
    "label_fraction_probe",
    "linear_eval",
    "linear_probe",
    "topk_accuracy",
]
