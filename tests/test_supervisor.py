"""The child-process supervisor: no shell, the ready line, and no orphan however the parent ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfsuite.harness import supervisor
from perfsuite.harness.supervisor import Child, ChildError, ChildExited, ChildTimeout
from tests.ab_repo import default_sigint

ROOT = Path(__file__).resolve().parents[1]

#: a child speaking the protocol: a ready line with its pid, then one reply per stdin line
SERVER = textwrap.dedent(
    """
    import os, sys
    from perfsuite.harness.supervisor import open_channel, reply
    channel = open_channel()
    print("noise from a library")  # goes to stderr, never into the protocol
    reply(channel, "test-ready", pid=os.getpid())
    for line in sys.stdin:
        if line.strip() == "spawn":  # a grandchild in the child's process group
            import subprocess
            grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            reply(channel, "test-ready", grandchild=grandchild.pid)
        else:
            reply(channel, "test-ready", echo=line.strip())
    """
)

#: a child that ignores its stdin (so a closed pipe does not end it), then sleeps
SLEEPER = textwrap.dedent(
    """
    import os, time
    from perfsuite.harness.supervisor import open_channel, reply
    reply(open_channel(), "test-ready", pid=os.getpid())
    time.sleep(600)
    """
)

#: a parent that supervises one SLEEPER child, prints the child's pid, then waits to be ended
PARENT = textwrap.dedent(
    """
    import sys, time
    from perfsuite.harness.supervisor import Child
    with Child([sys.executable, sys.argv[1]], name="server", marker="test-ready") as child:
        print(child.expect(60)["pid"], flush=True)
        time.sleep(600)
    """
)


def _env() -> dict[str, str]:
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def server(tmp_path: Path) -> Path:
    path = tmp_path / "server.py"
    path.write_text(SERVER)
    return path


def test_ready_line_replies_and_stderr(server: Path) -> None:
    with Child([sys.executable, str(server)], name="server", marker="test-ready", env=_env()) as c:
        assert c.expect(60) == {"pid": c.pid}
        c.send("$(echo hi) *")
        assert c.expect(60) == {"echo": "$(echo hi) *"}  # no shell between us
        assert c.running
    assert not _alive(c.pid)
    assert "noise from a library" in c.stderr_text()
    assert supervisor.live_children() == []


def test_exit_before_the_ready_line_is_named_with_its_status() -> None:
    script = "import sys; print('no framework here', file=sys.stderr); sys.exit(3)"
    with Child([sys.executable, "-c", script], name="server", marker="test-ready") as child:
        with pytest.raises(ChildExited, match=r"^server exited with status 3$") as info:
            child.expect(60)
        assert info.value.returncode == 3
        assert child.stderr_tail() == "no framework here"


def test_silent_child_times_out() -> None:
    script = "import time; time.sleep(600)"
    child = Child([sys.executable, "-c", script], name="sleeper", marker="test-ready")
    with child, pytest.raises(ChildTimeout, match=r"^sleeper: no reply within 0\.2 s$"):
        child.expect(0.2)
    assert not _alive(child.pid)


def test_unreadable_protocol_line_is_an_error() -> None:
    script = "print('test-ready not-json', flush=True)"
    with (
        Child([sys.executable, "-c", script], name="odd", marker="test-ready") as child,
        pytest.raises(ChildError, match=r"^odd: unreadable reply 'test-ready not-json'$"),
    ):
        child.expect(60)


def test_missing_program_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ChildError, match=r"^cannot run .*nothing-here: "):
        Child([str(tmp_path / "nothing-here")], name="x", marker="m")


def test_close_kills_the_whole_process_group(server: Path) -> None:
    child = Child([sys.executable, str(server)], name="server", marker="test-ready", env=_env())
    child.expect(60)
    child.send("spawn")
    grandchild = int(child.expect(60)["grandchild"])
    assert _alive(grandchild)
    child.close()
    assert _gone_within(grandchild, 10)
    assert not _alive(child.pid)


def test_term_ignoring_child_is_killed_after_the_grace(server: Path) -> None:
    script = textwrap.dedent(
        """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("test-ready {}", flush=True)
        time.sleep(600)
        """
    )
    child = Child([sys.executable, "-c", script], name="stubborn", marker="test-ready")
    child.expect(60)
    supervisor.stop_children([child], grace=0.2)
    assert child.popen.returncode == -signal.SIGKILL


@pytest.mark.parametrize(
    "how", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name
)
def test_no_orphan_however_the_parent_ends(tmp_path: Path, how: signal.Signals) -> None:
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(SLEEPER)
    parent_script = tmp_path / "parent.py"
    parent_script.write_text(PARENT)
    parent = subprocess.Popen(
        [sys.executable, str(parent_script), str(sleeper)],
        stdout=subprocess.PIPE,
        env=_env(),
        text=True,
        preexec_fn=default_sigint,  # SIGINT as from a terminal, however pytest was started
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(how)
        parent.wait(timeout=30)
        assert _gone_within(child, 10), f"child {child} outlived its parent ({how.name})"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_harness_imports_neither_pytest_nor_a_framework() -> None:
    modules = ["supervisor", "coldstart", "tfcluster", "consumer", "probe", "closing"]
    code = (
        "import sys\n"
        + "".join(f"import perfsuite.harness.{name}\n" for name in modules)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pytest', '_pytest', 'tensorflow', 'torch', 'nvidia')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
