"""The results branch: saved runs and nightly reports kept on a git branch every runner shares.

A nightly job pulls its machine's history from the branch (``perfsuite results pull``),
runs and judges the benches, and pushes tonight's run and report back (``perfsuite
results push``); ``perfsuite results site`` builds the dashboard of every machine on the
branch. The branch (default ``perfsuite-results``) is laid out as::

    README.md
    runs/<machine key>/<YYYYmmddHHMMSS>_<commit>_<id>.json   one saved run per file
    runs/perfsuite-accepted.json                             accepted steps, per key
    reports/<machine key>/<run file's stem>/summary.md ...   that night's report

``runs/`` is itself a pytest-benchmark file storage whose machine folders are machine
keys (:mod:`perfsuite.results.key`): the hardware and the measured stack, never the
runner's name. A run's file name comes from the run itself
(:func:`perfsuite.results.layout.branch_name`), so two runners never write one path and
the same run is never stored twice. Pushes are commits made without a work tree on top
of the branch's tip (:mod:`perfsuite.results.gitbranch`); one that loses a race is
rebuilt on the new tip and tried again.
"""
