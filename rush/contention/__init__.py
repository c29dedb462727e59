"""The contention simulator: shared-resource contention, synthetic counters and probes, a shell around the core.

* :mod:`rush.contention.machine`: the machine (the paper's: one pod of 512 nodes in 16 leaf
  switches with 2:1 tapered uplinks; a multi-pod variant) and :mod:`rush.contention.apps`: the
  paper's seven applications (time shares, traffic pattern, per-node demands);
* :mod:`rush.contention.model`: the slowdown laws, every parameter fixed from a stated assumption;
* :mod:`rush.contention.noise`: the noise job (all-to-all on 1/16 of the nodes, always on at a
  varying intensity; an on/off variant);
* :mod:`rush.contention.state`: one machine state -> per-job slowdowns, link utilisations and
  per-node counter rates; :mod:`rush.contention.probe`: the MPI probe simulated from that state;
* :mod:`rush.contention.counters`: those rates as noisy interval-mean Samples for a FeatureStore;
* :mod:`rush.contention.shell`: the event loop that plays the RJMS around ``rush.core.schedule``;
* :mod:`rush.contention.oracles`: RUSH's learned predictor and the diagnostic oracles;
* :mod:`rush.contention.campaign`: a longitudinal campaign -> records.jsonl + FeatureStore;
* :mod:`rush.contention.experiment` (with :mod:`rush.contention.experiment_workload`) and
  :mod:`rush.studies.contention`: the paper's scenarios (ADAA, ADPA, PDPA, WS, SS), paired
  trials, tables and plots; :mod:`rush.contention.spec`: the study file and its checks.
"""
