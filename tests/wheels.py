"""Pure-Python wheels made on the spot: a package whose versions differ in their work."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

#: the module of package ``perfwork``: LOOPS sets how much work one call does
MODULE = '''
"""A package whose releases differ in how much work run() does."""
__version__ = "{version}"
LOOPS = {loops}


def run() -> int:
    total = 0
    for i in range(LOOPS):
        total += i * i
    return total
'''


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(folder: Path, name: str, version: str, loops: int) -> Path:
    """Write ``{name}-{version}-py3-none-any.whl`` into ``folder``: one module whose
    ``run()`` loops ``loops`` times."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": MODULE.format(version=version, loops=loops).encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = [_record_line(path, data) for path, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel
