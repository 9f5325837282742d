"""The nightly verdict: screen tonight's run against the history, confirm suspects by A/B."""
