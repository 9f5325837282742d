"""Regression verdicts: statistics on raw samples, exact counters, the gate, offline compare."""
