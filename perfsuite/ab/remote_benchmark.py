"""Runs inside a side's pytest process: pytest-benchmark's own ``benchmark`` fixture, in lockstep.

A bench written with pytest-benchmark alone, ``benchmark(fn, *args, **kwargs)`` or
``benchmark.pedantic(...)``, gets its timed rounds from the controller, as
``perf.measure`` does. :func:`route` points the fixture instance's ``_raw`` and
``_raw_pedantic`` (where its ``__call__`` and ``pedantic`` go once their use-once
guard has passed, so using the fixture twice still raises pytest-benchmark's
``FixtureAlreadyUsed``) at :meth:`perfsuite.ab.remote.LockstepSide.measure`. Only
instances made in a side are touched: in an ordinary pytest run the fixture is
pytest-benchmark's, unchanged.

* ``benchmark(fn, *args, **kwargs)``: a round is ``n`` calls of ``fn``, with ``n``
  chosen by :func:`calibrate` in the side's warm-up turn so a round lasts at least
  ``--benchmark-min-time`` and at least :data:`MIN_ROUND_S`. Warm-up rounds: the
  ``perf`` marker's ``warmup_rounds``, else the scale's default, and at least
  :data:`CALIBRATED_WARMUP_ROUNDS`.
* ``benchmark.pedantic(target, args, kwargs, setup, teardown, rounds, warmup_rounds,
  iterations)``: a round is ``iterations`` calls on the arguments of one ``setup``
  call (or ``args``/``kwargs``), and ``teardown`` gets them after the round, untimed.
  Warm-up rounds: at least ``warmup_rounds`` and at least the side's default.
  Without ``setup`` the controller chooses how many rounds are timed. With one, its
  supply may be finite (fresh objects made up front, one a round), so ``setup`` runs
  at most ``warmup_rounds + rounds`` times, as in pytest-benchmark: warm-up rounds
  beyond ``warmup_rounds`` come out of ``rounds`` (one timed round is always left),
  and the rest is the most the controller may time.

Either way the rounds are timed, drained and recorded as ``LockstepSide.measure``
says, and the bench's minimum effect is the ``perf`` marker's ``threshold``, else
``--perf-threshold``. The side times with ``time.perf_counter`` and the controller's
budget sets the rounds, so ``--benchmark-timer``, ``--benchmark-max-time``,
``--benchmark-min-rounds``, ``--benchmark-disable-gc`` and ``--benchmark-cprofile`` do
not apply there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from perfsuite.config import BenchSettings, perf_config

if TYPE_CHECKING:
    from perfsuite.ab.remote import LockstepSide

#: the name pytest-benchmark gives its fixture
FIXTURE_NAME = "benchmark"
#: the shortest round ``benchmark(fn)`` is calibrated to: long beside a preemption's
#: time slice (several ms), the timer's resolution and a round's own overhead
MIN_ROUND_S = 0.01
#: the fewest warm-up rounds of ``benchmark(fn)``: their median is the yardstick of
#: each block's drain (:func:`perfsuite.ab.remote.drain`), which one slow round alone
#: would inflate
CALIBRATED_WARMUP_ROUNDS = 10
#: the most calls one round of ``benchmark(fn)`` makes
MAX_CALLS = 10**9
#: near the target, a round's calls are set to what the rate predicts, this much over
MARGIN = 1.1

Arguments = tuple[tuple[Any, ...], dict[str, Any]]


def calibrate(run: Callable[[int], float], least_s: float) -> int:
    """The calls a round of ``benchmark(fn)`` makes: the fewest whose round lasts
    ``least_s`` or more.

    ``run(n)`` runs one round of ``n`` calls and returns its seconds. From one call,
    a round that falls short is followed by one of ten times the calls, or, once the
    round is within a factor of ten, of the calls its rate predicts (10% over). A
    round long enough counts only if the next round of as many calls is too: a cold
    first call (imports, caches, a first compilation) or a preempted round does not
    end the calibration early."""
    calls = 1
    while calls < MAX_CALLS:
        seconds = run(calls)
        if seconds >= least_s:
            seconds = min(seconds, run(calls))
            if seconds >= least_s:
                break
        predicted = math.ceil(MARGIN * least_s * calls / seconds) if seconds > 0 else 10 * calls
        calls = min(MAX_CALLS, max(calls + 1, min(predicted, 10 * calls)))
    return calls


def _settings(item: pytest.Item) -> BenchSettings:
    """The bench's ``perf`` marker over the session's settings; a bad marker fails it."""
    try:
        return BenchSettings.for_item(perf_config(item.config), item)
    except pytest.UsageError as exc:
        pytest.fail(str(exc), pytrace=False)


def pedantic_warmup(given: int, default: int, rounds: int, pool: bool) -> tuple[int, int | None]:
    """(warm-up rounds, most timed rounds) of ``benchmark.pedantic``: see the module doc.

    >>> pedantic_warmup(0, 2, 10, pool=False)
    (2, None)
    >>> pedantic_warmup(0, 2, 10, pool=True)
    (2, 8)
    >>> pedantic_warmup(0, 2, 1, pool=True)
    (0, 1)
    """
    if not pool:
        return max(given, default), None
    extra = min(max(default - given, 0), rounds - 1)
    return given + extra, rounds - extra


def route(side: LockstepSide, fixture: object, item: pytest.Item) -> None:
    """Have ``fixture`` (pytest-benchmark's, made for ``item``) measure through ``side``;
    anything else named ``benchmark`` is left alone."""
    if not isinstance(fixture, BenchmarkFixture):
        return
    bench: Any = fixture
    measure = functools.partial(side.measure, bench, item.nodeid, fixture=FIXTURE_NAME)

    def raw(function_to_benchmark: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        settings = _settings(item)
        least = max(float(getattr(bench, "_min_time", 0.0)), MIN_ROUND_S)
        return measure(
            function_to_benchmark,
            setup=lambda: (args, kwargs),
            warmup_rounds=max(settings.warmup_rounds, CALIBRATED_WARMUP_ROUNDS),
            max_rounds=None,
            threshold=settings.threshold,
            iterations=lambda run: calibrate(run, least),
            memory_threshold=settings.memory_threshold,
        )

    def raw_pedantic(
        target: Callable[..., Any],
        args: Any = (),
        kwargs: Any = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: Any = 1,
        warmup_rounds: Any = 0,
        iterations: Any = 1,
    ) -> Any:
        # pytest-benchmark's own checks, with its messages
        if not isinstance(iterations, int) or iterations < 1:
            raise ValueError("Must have positive int for `iterations`.")
        if not isinstance(rounds, int) or rounds < 1:
            raise ValueError("Must have positive int for `rounds`.")
        if not isinstance(warmup_rounds, int) or warmup_rounds < 0:
            raise ValueError("Must have positive int for `warmup_rounds`.")
        if iterations > 1 and setup:
            raise ValueError("Can't use more than 1 `iterations` with a `setup` function.")
        given: Arguments = (tuple(args), {} if kwargs is None else dict(kwargs))
        has_args = bool(args or kwargs)

        def arguments() -> Arguments:
            made = setup() if setup is not None else None
            if not made:
                return given
            if has_args:
                raise TypeError("Can't use `args` or `kwargs` if `setup` returns the arguments.")
            made_args, made_kwargs = made
            return tuple(made_args), dict(made_kwargs)

        settings = _settings(item)
        warmup, most = pedantic_warmup(
            warmup_rounds, settings.warmup_rounds, rounds, pool=setup is not None
        )
        return measure(
            target,
            setup=arguments,
            warmup_rounds=warmup,
            max_rounds=most,
            threshold=settings.threshold,
            teardown=teardown,
            iterations=iterations,
            memory_threshold=settings.memory_threshold,
        )

    bench._raw = raw
    bench._raw_pedantic = raw_pedantic
