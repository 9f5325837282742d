"""perfsuite's pytest plugin: wiring only. Each concern lives in its own module."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from perfsuite import hookspecs
from perfsuite.ab.protocol import COLLECT_OUT_ENV as AB_LISTING_ENV
from perfsuite.ab.protocol import SIDE_PLUGIN as AB_SIDE_PLUGIN
from perfsuite.ab.protocol import SOCKET_ENV as AB_SOCKET_ENV
from perfsuite.bench.frameworks import MARKER_MODULES, install_hint, is_installed
from perfsuite.bench.gpu import GPU, GPUInfo, detect_gpu
from perfsuite.bench.measure import Perf, SessionResults
from perfsuite.bench.summary import summary_lines
from perfsuite.bench.traces import TraceCounter
from perfsuite.config import CONFIG_KEY, BenchSettings, PerfConfig, check_marker, perf_config
from perfsuite.data.datasets import ImageDataset, describe_folder, materialize
from perfsuite.data.recipes import Recipe, load_recipe
from perfsuite.errors import PerfsuiteError
from perfsuite.options import OPTIONS, Device, add_options
from perfsuite.outputs import check_outputs

RESULTS_KEY = pytest.StashKey[SessionResults]()
GPU_KEY = pytest.StashKey[GPUInfo]()
USER_DATASET_KEY = pytest.StashKey[ImageDataset]()

DEFAULT_RECIPE = "imagenet-like"
#: pytest-benchmark's plugin name (its pytest11 entry point), blocked by ``-p no:benchmark``
BENCHMARK_PLUGIN = "benchmark"
NO_BENCHMARK = (
    "perfsuite: pytest-benchmark is not loaded (-p no:benchmark?); perfsuite's benches need it"
)

MARKERS = {
    "perf(group=None, variant=None, baseline=None, roofline=None, threshold=None, rounds=None, "
    "default_rounds=None, warmup_rounds=None, counters=None, memory_threshold=None)": "per-bench "
    "settings: the group, the variant (default: the variant parameter), the group's baseline "
    "and roofline variants, minimum effect for a verdict (fraction), measured rounds (one, or "
    "one per scale), the bench's own default rounds (--perf-rounds wins over them), warm-up "
    "rounds, the extra_info names of exact counters, the peak-memory rise that is a regression",
    "gpu": "needs a GPU: skipped where none is found or with --perf-device cpu",
    "tf": f"needs TensorFlow: skipped where it is missing ({install_hint('tensorflow')})",
    "torch": f"needs PyTorch: skipped where it is missing ({install_hint('torch')})",
    "dali": f"needs NVIDIA DALI: skipped where it is missing ({install_hint('nvidia.dali')})",
}


def session_results(config: pytest.Config) -> SessionResults:
    """Every bench measured so far in this session."""
    return config.stash[RESULTS_KEY]


def session_gpu(config: pytest.Config) -> GPUInfo:
    """The session's GPU, detected once on first use."""
    if GPU_KEY not in config.stash:
        config.stash[GPU_KEY] = detect_gpu()
    return config.stash[GPU_KEY]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def has_benchmark(config: pytest.Config) -> bool:
    """Whether pytest-benchmark is loaded in this session."""
    return config.pluginmanager.hasplugin(BENCHMARK_PLUGIN)


def pytest_configure(config: pytest.Config) -> None:
    for marker, doc in MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: {doc}")
    cfg = PerfConfig.from_pytest_config(config)
    if os.environ.get(AB_SOCKET_ENV):  # a side of perfsuite ab measures; its controller judges
        cfg = dataclasses.replace(cfg, gate=False, report=None)
    config.stash[CONFIG_KEY] = cfg
    config.stash[RESULTS_KEY] = SessionResults()
    if not has_benchmark(config):
        for flag, given in (("--perf-gate", cfg.gate), ("--perf-report", cfg.report)):
            if given:
                raise pytest.UsageError(f"{NO_BENCHMARK}, and so does {flag}")
        return  # nothing to judge or save: each bench errors at setup, in one line
    check_outputs(config, cfg)
    from perfsuite.gate import PLUGIN_NAME, VerdictPlugin

    config.pluginmanager.register(VerdictPlugin(config, cfg), PLUGIN_NAME)
    if not os.environ.get(AB_SOCKET_ENV):  # an A/B's side sends each round's cost itself
        from perfsuite.bench.costplugin import PLUGIN_NAME as COST_PLUGIN
        from perfsuite.bench.costplugin import CostPlugin

        config.pluginmanager.register(CostPlugin(config, cfg), COST_PLUGIN)
    if os.environ.get(AB_SOCKET_ENV):  # started by `perfsuite ab` as one side of a lockstep A/B
        from perfsuite.ab.remote import register as register_ab_side

        register_ab_side(config)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Validate a user's image folder before anything is collected or timed."""
    cfg = perf_config(session.config)
    if cfg.images is not None:
        try:
            session.config.stash[USER_DATASET_KEY] = describe_folder(cfg.images, cfg.data_dir)
        except PerfsuiteError as exc:
            raise pytest.UsageError(str(exc)) from None


def perfsuite_in_use(config: pytest.Config) -> bool:
    """Whether this session asked for perfsuite: one of its ``--perf-*`` options (from
    the command line or ``addopts``), a ``perf_*`` ini key, or a side of ``perfsuite ab``
    (measuring, or listing the bench files it would collect)."""
    if (
        os.environ.get(AB_SOCKET_ENV)
        or os.environ.get(AB_LISTING_ENV)
        or any(config.getoption(spec.dest, None) is not None for spec in OPTIONS)
    ):
        return True
    return any(config.getini(s.ini) != (False if s.is_flag else s.default) for s in OPTIONS)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect ``bench_*.py`` files even where ``python_files`` does not name them, in a
    session that asked for perfsuite (:func:`perfsuite_in_use`). In any other run
    pytest's own rules stand, whatever the folder: a ``bench_*.py`` script in a
    project is imported only where its ``python_files`` names it."""
    if file_path.suffix != ".py" or not fnmatch.fnmatch(file_path.name, "bench_*.py"):
        return None
    if not perfsuite_in_use(parent.config):
        return None
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest collects it already
    patterns = parent.config.getini("python_files")
    if any(fnmatch.fnmatch(file_path.name, pat) for pat in patterns):
        return None  # pytest's python plugin collects it already
    module: pytest.Module = pytest.Module.from_parent(parent, path=file_path)
    return module


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A bench (it takes ``perf``) errors without pytest-benchmark, as a ``benchmark``
    test does, and a test whose ``perf`` marker holds a wrong keyword errors, each with
    one line saying why; skip tests whose framework is missing, or that need a GPU the
    session lacks."""
    if "perf" in getattr(item, "fixturenames", ()) and not has_benchmark(item.config):
        pytest.fail(NO_BENCHMARK, pytrace=False)
    if item.get_closest_marker("perf") is not None:
        try:  # a wrong keyword errors this bench alone, before it runs
            check_marker(perf_config(item.config), item)
        except pytest.UsageError as exc:
            pytest.fail(str(exc), pytrace=False)
    for marker, module in MARKER_MODULES.items():
        if item.get_closest_marker(marker) and not is_installed(module):
            pytest.skip(f"{module} is not installed: {install_hint(module)}")
    if item.get_closest_marker("gpu"):
        _gpu_or_skip(item.config)


def _gpu_or_skip(config: pytest.Config) -> GPUInfo:
    cfg = perf_config(config)
    if cfg.device is Device.CPU:
        pytest.skip("GPU bench skipped: --perf-device cpu")
    info = session_gpu(config)
    if info.count == 0:
        if cfg.device is Device.GPU:
            pytest.fail(
                f"--perf-device gpu was given but no GPU was found: {info.reason}", pytrace=False
            )
        pytest.skip(f"no GPU: {info.reason}")
    return info


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, Any, Any]:
    """A side of ``perfsuite ab`` runs its benches in its own process, whatever the
    user's addopts say of pytest-xdist (:func:`perfsuite.ab.remote.one_process`)."""
    if os.environ.get(AB_SOCKET_ENV):
        from perfsuite.ab.remote import one_process

        one_process(config)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Bad input found inside a bench (a recipe, a pipeline name) fails it in one line."""
    try:
        return (yield)
    except PerfsuiteError as exc:
        raise pytest.fail.Exception(str(exc), pytrace=False) from None


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    # Before pytest-benchmark saves: fill in speedup and efficiency for every bench.
    if RESULTS_KEY in session.config.stash:
        session_results(session.config).finalize()
    yield


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if RESULTS_KEY not in config.stash:
        return
    if not has_benchmark(config) and perfsuite_in_use(config):
        terminalreporter.write_line(NO_BENCHMARK, yellow=True)
    lines = summary_lines(session_results(config).records)
    if lines:
        terminalreporter.section("perfsuite summary")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(
    config: pytest.Config, machine_info: dict[str, Any]
) -> None:
    from perfsuite.bench.machine import machine_facts

    facts = machine_facts(session_gpu(config))
    config.hook.pytest_perfsuite_update_machine_facts(config=config, facts=facts)
    machine_info["perfsuite"] = facts


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(
    config: pytest.Config, benchmarks: list[Any], output_json: dict[str, Any]
) -> None:
    """Saved runs keep perfsuite benches' raw per-round timings, so verdicts compare
    distributions; under ``--perf-gate`` every bench's (a ``benchmark``-fixture bench's
    too), so the run can be the next one's baseline; other runs save other benches as
    ``--benchmark-save-data`` says."""
    ours = {record.nodeid for record in session_results(config).records}
    every = perf_config(config).gate
    data = {
        bench.fullname: list(bench.stats.data)
        for bench in benchmarks
        if (every or getattr(bench, "fullname", None) in ours) and getattr(bench, "stats", None)
    }
    for entry in output_json.get("benchmarks", []):
        stats = entry.get("stats")
        if entry.get("fullname") in data and isinstance(stats, dict) and "data" not in stats:
            stats["data"] = data[entry["fullname"]]
        if isinstance(stats, dict) and "data" not in stats:
            _drop_round_costs(entry)


def _drop_round_costs(entry: dict[str, Any]) -> None:
    """A run saved without its rounds' timings keeps no rounds' CPU times either."""
    result = (entry.get("extra_info") or {}).get("perfsuite")
    spent = result.get("cost") if isinstance(result, dict) else None
    if isinstance(spent, dict):
        spent["rounds_cpu_s"] = []


@pytest.hookimpl(optionalhook=True, wrapper=True)
def pytest_benchmark_compare_machine_info(
    config: pytest.Config, benchmarksession: Any, machine_info: Any, compared_benchmark: Any
) -> Generator[None, Any, Any]:
    """Keep pytest-benchmark's machine warning where its storage is outside the working folder.

    Its warning names the storage relative to the working folder, which raises
    ``ValueError: ... is not in the subpath of ...`` for a storage elsewhere; the same
    warning is given with the storage's absolute path instead.
    """
    try:
        return (yield)
    except ValueError as exc:
        if "subpath" not in str(exc) and "relative" not in str(exc):
            raise
        from pytest_benchmark.utils import consistent_dumps

        current = consistent_dumps(machine_info)  # type: ignore[no-untyped-call]
        saved = consistent_dumps(compared_benchmark["machine_info"])  # type: ignore[no-untyped-call]
        if current != saved:
            benchmarksession.logger.warning(
                f"Benchmark machine_info is different. Current: {current} VS saved: {saved} "
                f"(location: {benchmarksession.storage})."
            )
        return []


def _fail(exc: PerfsuiteError) -> BaseException:
    return pytest.fail.Exception(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def perf_settings(pytestconfig: pytest.Config) -> PerfConfig:
    """The session's perfsuite settings: scale, data dir, device, threshold, ..."""
    return perf_config(pytestconfig)


@pytest.fixture(scope="session")
def dataset_recipe(pytestconfig: pytest.Config) -> Callable[..., Recipe]:
    """Load a recipe for this session's scale: ``dataset_recipe("variable-shapes").shapes()``."""
    cfg = perf_config(pytestconfig)

    def load(name: str, **overrides: Any) -> Recipe:
        try:
            return load_recipe(name, cfg.scale.value, cfg.recipes).with_overrides(**overrides)
        except PerfsuiteError as exc:
            raise _fail(exc) from None

    return load


@pytest.fixture(scope="session")
def make_image_dataset(
    pytestconfig: pytest.Config, dataset_recipe: Callable[..., Recipe]
) -> Callable[..., ImageDataset]:
    """Build (or reuse from the cache) the JPEG dataset of a recipe at this session's scale.

    >>> def test_x(make_image_dataset):
    ...     ds = make_image_dataset("imagenet-like", count=64, quality=75)
    """
    cfg = perf_config(pytestconfig)
    built: dict[str, ImageDataset] = {}

    def make(recipe: str | Recipe, **overrides: Any) -> ImageDataset:
        resolved = (
            dataset_recipe(recipe, **overrides)
            if isinstance(recipe, str)
            else recipe.with_overrides(**overrides)
        )
        if resolved.hash not in built:
            try:
                built[resolved.hash] = materialize(resolved, cfg.data_dir)
            except PerfsuiteError as exc:
                raise _fail(exc) from None
        return built[resolved.hash]

    return make


@pytest.fixture(scope="session")
def image_dataset(
    pytestconfig: pytest.Config, make_image_dataset: Callable[..., ImageDataset]
) -> ImageDataset:
    """The session's photo dataset: the ``imagenet-like`` recipe, or ``--perf-images``."""
    user = pytestconfig.stash.get(USER_DATASET_KEY, None)
    return user if user is not None else make_image_dataset(DEFAULT_RECIPE)


@pytest.fixture(scope="session")
def gpu(pytestconfig: pytest.Config) -> GPU:
    """The session's GPU, warmed once; skips the test where there is none.

    >>> def test_on_gpu(gpu, perf):
    ...     perf.measure(step, items=64, device="gpu", sync=gpu.sync)
    """
    device = GPU(_gpu_or_skip(pytestconfig))
    device.warm_up()
    return device


@pytest.fixture
def perf(request: pytest.FixtureRequest, benchmark: Any) -> Iterator[Perf]:
    """The measuring fixture every bench uses (see :class:`perfsuite.bench.measure.Perf`)."""
    item = request.node
    cfg = perf_config(request.config)
    try:
        settings = BenchSettings.for_item(cfg, item)
    except pytest.UsageError as exc:
        pytest.fail(str(exc), pytrace=False)
    side = request.config.pluginmanager.get_plugin(AB_SIDE_PLUGIN)  # perfsuite ab's, or None
    handle = Perf(
        benchmark,
        item.nodeid,
        cfg,
        settings,
        session_results(request.config),
        gpu=lambda: request.getfixturevalue("gpu"),  # asked for by GPU benches only
        lockstep=side.measure if side is not None else None,
    )
    yield handle
    if handle.record is not None:
        request.config.hook.pytest_perfsuite_update_extra_info(
            item=item, extra_info=handle.extra_info
        )


@pytest.fixture
def trace_counter(request: pytest.FixtureRequest) -> TraceCounter:
    """Exact tf.function trace (and torch.compile graph) counts, saved in ``extra_info``."""
    extra_info = None
    if "benchmark" in request.fixturenames:
        extra_info = request.getfixturevalue("benchmark").extra_info
    return TraceCounter(extra_info)
