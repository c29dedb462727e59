"""The contention simulator: shared-resource contention, synthetic counters, a shell around the core.

* :mod:`rush.contention.model`: the machine (512 nodes, 16 fat-tree pods, tapered uplinks, a
  shared parallel file system), the seven applications and the slowdown law, with every
  parameter fixed from a stated physical assumption;
* :mod:`rush.contention.noise`: the noise job (all-to-all on 1/16 of the nodes, on/off);
* :mod:`rush.contention.state`: one machine state -> per-job slowdowns and per-node counter rates;
* :mod:`rush.contention.counters`: those rates as noisy interval-mean Samples for a FeatureStore;
* :mod:`rush.contention.shell`: the event loop that plays the RJMS around ``rush.core.schedule``;
* :mod:`rush.contention.campaign`: a longitudinal campaign -> records.jsonl + FeatureStore;
* :mod:`rush.contention.experiment` and :mod:`rush.studies.contention`: the published scenarios
  (ADAA, ADPA, PDPA, WS, SS), paired FCFS+EASY / RUSH trials, tables and plots.
"""
