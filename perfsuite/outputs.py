"""Every place this session will write to, checked before anything is collected or timed.

pytest-benchmark writes its runs at the very end of a session: a storage that is a
regular file, or a ``--benchmark-json`` path under one, would cost the whole run's
results. :func:`check_outputs` finds such paths at startup and raises a usage error
naming the path and the option that chose it:

* ``--benchmark-storage`` (file storages only) and its machine folder, when
  ``--benchmark-save``/``--benchmark-autosave`` will write into it;
* ``--benchmark-json``: its folder must exist and take a new file (where it is a path,
  as pytest-benchmark 5.3 gives it; 5.1 and 5.2 open the file while parsing the command
  line, so an unwritable place is already their usage error);
* ``--perf-report``: a folder holding nothing but an earlier report (it is replaced as
  a unit), or a place where one can be created;
* ``--perf-data-dir`` (or the ``perf_data_dir`` ini key), where it is given: a folder,
  or a place where one can be created. An existing read-only cache is accepted (a
  whole cached dataset is read, not written); building into it says so when it happens.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from perfsuite.config import PerfConfig


@dataclass(frozen=True)
class Output:
    """A folder (or file) the session will write to, and the option that named it."""

    option: str
    path: Path
    is_file: bool = False
    #: an existing folder may be read-only (a cache that is only read)
    existing_may_be_read_only: bool = False


class OutputError(Exception):
    """Why an :class:`Output` cannot be written."""


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if os.path.lexists(candidate):
            return candidate
    return Path(path.anchor or ".")


def _probe_folder(folder: Path) -> None:
    """Create and remove a temporary folder in ``folder``: the one sure test, root included."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".perfsuite-probe-", dir=folder))
    except OSError as exc:
        raise OutputError(f"cannot write in {folder} ({exc.strerror or exc})") from None


def check_output(output: Output) -> None:
    """Raise :class:`OutputError` if ``output`` cannot be written (a folder is not created)."""
    path = output.path
    if output.is_file:
        if path.is_dir():
            raise OutputError("is a folder; pass a file path")
        if not path.parent.is_dir():
            found = _nearest_existing(path.parent)
            if found.exists() and not found.is_dir():
                raise OutputError(f"{found} is not a folder; pass a file in an existing folder")
            raise OutputError(f"{path.parent} does not exist; pass a file in an existing folder")
        if path.exists() and not os.access(path, os.W_OK):
            raise OutputError("is read-only")
        _probe_folder(path.parent)
        return
    if path.is_dir():
        if not output.existing_may_be_read_only:
            _probe_folder(path)
        return
    found = _nearest_existing(path)
    if not found.is_dir():
        where = "is a file" if found == path else f"is under {found}, which is a file"
        raise OutputError(f"{where}, not a folder; pass a folder")
    _probe_folder(found)


def _storage_folder(option: str) -> Path | None:
    """The folder of a pytest-benchmark file storage (None for Elasticsearch)."""
    if "://" in option and not option.startswith("file://"):
        return None
    return Path(option.removeprefix("file://")).expanduser()


def _json_path(value: object) -> Path | None:
    """The path ``--benchmark-json`` will write, or ``None`` when there is nothing to check.

    pytest-benchmark 5.3 hands over a path. 5.1 and 5.2 open the file while parsing
    (``argparse.FileType('wb')``) and hand over the open file, which proves the place
    writable already: there is nothing left to check before the run.
    """
    if not value or not isinstance(value, str | os.PathLike):
        return None
    return Path(value).expanduser()


def session_outputs(config: pytest.Config, cfg: PerfConfig) -> Iterator[Output]:
    """The places this session will write to."""
    saving = config.getoption("benchmark_save", None) or config.getoption(
        "benchmark_autosave", None
    )
    storage_option = config.getoption("benchmark_storage", None)
    if saving and storage_option:
        storage = _storage_folder(str(storage_option))
        if storage is not None:
            yield Output("--benchmark-storage", storage)
            with contextlib.suppress(ImportError):
                from pytest_benchmark.utils import get_machine_id

                machine: str = get_machine_id()  # type: ignore[no-untyped-call]
                yield Output("--benchmark-storage", storage / machine)
    json_path = _json_path(config.getoption("benchmark_json", None))
    if json_path is not None:
        yield Output("--benchmark-json", json_path, is_file=True)
    if cfg.report is not None:
        yield Output("--perf-report", cfg.report)
    if config.getoption("perf_data_dir", None) is not None or config.getini("perf_data_dir"):
        yield Output("--perf-data-dir", cfg.data_dir, existing_may_be_read_only=True)


def check_outputs(config: pytest.Config, cfg: PerfConfig) -> None:
    """A usage error naming the option and the path of the first place that cannot be written."""
    for output in session_outputs(config, cfg):
        try:
            check_output(output)
        except OutputError as exc:
            raise pytest.UsageError(f"{output.option} {output.path}: {exc}") from None
    if cfg.report is not None:
        from perfsuite.errors import PerfsuiteError
        from perfsuite.verdict.report import check_replaceable

        try:
            check_replaceable(cfg.report)
        except PerfsuiteError as exc:
            raise pytest.UsageError(f"--perf-report {exc}") from None
