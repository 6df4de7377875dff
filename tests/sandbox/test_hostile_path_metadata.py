"""Hostile case: learning about paths without opening them (issue 13, defect 1).

The filter allows ``newfstatat`` when ``AT_EMPTY_PATH`` is set, so that ``fstat`` of an
open fd works; the kernel ignores that flag for a non-empty path, so a filter alone lets a
protocol learn whether any path exists, with its owner, mode and size. The worker's empty
root (its own user and mount namespaces) is the wall that hides them.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.sandbox.helpers import REACH_SYS, source_spec, toy_states
from tpdisc.sandbox import client, sandbox_walls

# Every route the worker still has to a path's metadata, reported per path as 0 (found) or
# the errno: fstatat with AT_EMPTY_PATH (what the filter lets through) and plain os.stat.
PROBE = (
    REACH_SYS
    + """
ctypes = sys.modules["ctypes"]
os = sys.modules["os"]
libc = ctypes.CDLL(None, use_errno=True)


def fstatat(path):
    buf = ctypes.create_string_buffer(512)
    if libc.fstatat(-100, path.encode(), buf, 0x1000) == 0:
        return 0
    return ctypes.get_errno()


def stat(path):
    try:
        os.stat(path)
        return 0
    except OSError as err:
        return err.errno


class TransmissionProtocol:
    def __init__(self, n_agents, n_steps):
        self.seen = {}

    def share_memories(self, i_step, agent_states):
        paths = PATHS + [f"/proc/{os.getppid()}/cwd", f"/proc/{os.getppid()}/fd/0"]
        self.seen = {p: [fstatat(p), stat(p)] for p in paths}
        self.seen["listing /"] = [0, 0]
        try:
            self.seen["listing /"] = [len(os.listdir("/")), 0]
        except OSError as err:
            self.seen["listing /"] = [0, err.errno]
        return {}

    def get_logs(self):
        return [{"metric_name": p, "metric_description": "", "metric_value": v}
                for p, v in self.seen.items()]
"""
)


def probe(paths: list[str]) -> dict[str, list[int]]:
    """What a sandboxed protocol learns about ``paths`` (and its zygote's cwd and fds)."""
    source = f"PATHS = {paths!r}\n{PROBE}"
    with source_spec(source).open(3, 5, 0) as runner:
        runner.share(0, toy_states())
        return {e["metric_name"]: e["metric_value"] for e in runner.logs()}


def host_paths(tmp: Path) -> list[str]:
    secret = tmp / "secret.txt"
    secret.write_text("TOPSECRET")
    return [
        "/etc/passwd",
        os.getcwd(),
        str(secret),
        f"/proc/{os.getpid()}/cwd",
        f"/proc/{os.getpid()}/environ",
    ]


def namespaces_up() -> bool:
    return client.get_zygote().namespaces


def test_no_path_of_the_host_is_visible(open_dir: Path) -> None:
    if not namespaces_up():
        pytest.skip(f"no empty root here: {client.get_zygote().namespaces_reason}")
    seen = probe(host_paths(open_dir))
    for path, (by_fstatat, by_stat) in seen.items():
        if path == "listing /":
            # Only seccomp keeps the worker from listing its root (which is empty anyway).
            assert by_stat == errno.EPERM, seen
            continue
        assert by_fstatat == errno.ENOENT, (path, seen)
        assert by_stat == errno.EPERM, (path, seen)  # the filter: stat of a path is refused


def test_the_worker_still_has_a_root() -> None:
    seen = probe(["/"])
    assert seen["/"][0] == 0  # the root exists, it is just empty
    if namespaces_up():
        assert seen[f"/proc/{client.get_zygote().pid}/cwd"] == [errno.ENOENT, errno.EPERM]


def test_walls_are_reported() -> None:
    walls = sandbox_walls()
    assert walls["seccomp"] == (True, "")
    assert walls["namespaces"][0] == client.get_zygote().namespaces


def test_without_namespaces_the_filter_alone_runs_and_says_so(
    open_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.shutdown()
    monkeypatch.setattr(client, "NAMESPACES", False)
    try:
        walls = sandbox_walls()
        assert walls["seccomp"] == (True, "")
        assert walls["namespaces"] == (False, "namespaces turned off by the caller")
        seen = probe(host_paths(open_dir))
        # The documented leak: existence through fstatat; plain stat and opening still fail.
        assert seen["/etc/passwd"] == [0, errno.EPERM]
        assert seen[str(open_dir / "secret.txt")] == [0, errno.EPERM]
        assert seen["listing /"] == [0, errno.EPERM]
    finally:
        client.shutdown()
