"""Collectors (sysfs IB/OPA, Lustre, RAPL, LDMS, Sonar, Prometheus) and the feature store."""

from rush.collect.base import Collector, Sample, collector_names, get_collector, register_collector

__all__ = ["Collector", "Sample", "collector_names", "get_collector", "register_collector"]
