"""``perfsuite ab``: a same-session, interleaved A/B of two git revisions."""
