"""``perfsuite bisect``: the commit that made the benches slower, named by A/B
(:mod:`perfsuite.bisect.search` the procedure, :mod:`perfsuite.bisect.command` its
command line and steps)."""
