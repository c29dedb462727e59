"""The runtime classifier's decision thresholds: predict small when P(small) >= threshold.

Plain floats in a module without heavy imports, so that command-line defaults can name them
(``rush --help`` must not load scikit-learn). Chosen on development traces (Sandia-Ross,
SDSC-DS, LANL-CM5), never on the five evaluation traces, by the rule written in
``sim/runtime_classes/select_threshold.py`` (results in
``sim/runtime_classes/results/threshold_selection.*``):

* ``SMALL_THRESHOLD``: for jobs rush may not kill (a false small puts a large job in the
  small queue until it ends);
* ``IDEMPOTENT_THRESHOLD``: for jobs rush may kill at the divider and requeue as large (a
  false small costs them that kill only).
"""

# Chosen 2026-11-23 (threshold_selection.json): the smallest development-trace share of the
# class-clairvoyant gain was 0.236 at 0.5 for plain classification (lower thresholds only
# lost: Sandia-Ross fell to 0.04 at 1/3), and 0.870 at 0.1 for idempotent jobs (0.430 at 1/3).
SMALL_THRESHOLD = 0.5
IDEMPOTENT_THRESHOLD = 0.1
