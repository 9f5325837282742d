"""Is a TCP endpoint reachable? A connect with a bound wait, name resolution included."""

from __future__ import annotations

import socket
import threading

#: seconds to connect before calling an endpoint unreachable
PROBE_TIMEOUT = 5.0


def unreachable(host: str, port: int, timeout: float = PROBE_TIMEOUT) -> str | None:
    """None when a TCP connection to ``host:port`` opens in time, else why not (one line).

    Name resolution has no timeout of its own, so the connect runs on a daemon thread that
    is abandoned after ``2 * timeout`` seconds.
    """
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host.strip("[]"), port), timeout=timeout).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=connect, name="tcp-probe", daemon=True)
    thread.start()
    thread.join(timeout * 2)
    error = outcome[0] if outcome else TimeoutError(f"no answer within {timeout * 2:.0f} s")
    if error is None:
        return None
    return getattr(error, "strerror", None) or str(error) or type(error).__name__
