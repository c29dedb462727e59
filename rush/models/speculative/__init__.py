"""Speculative reservation sequences: runtime laws and the strategies chosen from a job's history."""
