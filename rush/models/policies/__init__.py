"""Learned priority policies: regression-learned heuristics and mixed (weighted-feature) policies."""
