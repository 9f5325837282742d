"""Shared workloads the benches measure (imported lazily: each module imports its framework)."""
