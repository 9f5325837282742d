"""perfsuite: a pytest plugin and bench suite for ML input-pipeline and execution-mode regressions.

Importing this package is cheap: TensorFlow, torch and DALI are imported only by
the code that needs them.
"""

from __future__ import annotations

from perfsuite.data.recipes import Recipe, load_recipe
from perfsuite.errors import PerfsuiteError

__version__ = "0.1.0"

__all__ = ["PerfsuiteError", "Recipe", "__version__", "load_recipe"]
