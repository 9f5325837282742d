"""A folder's files by relative path, to compare folders byte for byte."""

from __future__ import annotations

from pathlib import Path


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }
