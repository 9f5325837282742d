"""A base for objects that own processes or threads and release them on ``with`` exit."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

_Self = TypeVar("_Self", bound="Closing")


class Closing:
    """``with obj:`` calls ``obj.close()`` on the way out, whatever happened inside.

    Usage::

        with LocalCluster() as cluster:   # stopped even if the block raises
            cluster.ensure_workers(2)
    """

    def close(self) -> None:
        """Release what the object owns; safe to call more than once."""
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
