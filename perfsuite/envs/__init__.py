"""Environments built from a revision's own pins, for ``perfsuite ab`` across upgrades."""
