"""Every example in perfsuite's docstrings runs and shows what it prints."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import perfsuite

PACKAGE = Path(perfsuite.__file__).parent
#: modules with examples, found by their text so collecting imports no framework
WITH_EXAMPLES = sorted(
    ".".join(("perfsuite", *path.relative_to(PACKAGE).with_suffix("").parts))
    for path in PACKAGE.rglob("*.py")
    if ">>>" in path.read_text()
)


def test_examples_are_found() -> None:
    assert "perfsuite.verdict.futility" in WITH_EXAMPLES
    assert "perfsuite.ab.load" in WITH_EXAMPLES


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:  # a workload module of a framework not installed
        pytest.skip(f"{name} needs {exc.name}, which is not installed")
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.attempted > 0, f"{name}: no example ran"
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
