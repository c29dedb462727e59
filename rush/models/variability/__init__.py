"""Performance variability: the dataset builder, training and feature window of the learned predictor.

``features`` (the one window function used for training and live prediction), ``dataset``
(campaign records joined with the feature store, labels per application), ``train`` (model
selection under leave-one-application-out cross-validation, feature elimination, the
exported 3-class model and its card). The live predictor is ``learned`` in
:mod:`rush.planner.variation`.
"""
