"""The dashboard: the storage's history and A/B reports as a static HTML site."""
