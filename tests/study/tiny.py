"""The smallest digits run the study tests train (two epochs, a 4-channel CNN)."""

TINY = {
    "framework": "simclr",
    "dataset": "digits",
    "epochs": 2,
    "batch_size": 128,
    "width": 4,
    "feature_dim": 8,
    "proj_dim": 8,
    "knn_k": 20,
    "knn_small_k": 5,
}
