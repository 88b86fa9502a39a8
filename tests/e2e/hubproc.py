"""Run `animahub` as a real subprocess on a temporary data root, the way a user does."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from hub.people.owner_key import read_owner_key

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMAHUB_")}
    env.update(ANIMAHUB_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True", **extra)
    return env


def cli(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "animahub"), *args],
        env=env_for(home, **extra),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def child_pids(parent: int, needle: str) -> list[int]:
    """Processes whose parent is `parent` and whose command line contains `needle`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if ppid == parent and needle in command:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


class HubProcess:
    def __init__(self, home: Path, port: int, **extra: str) -> None:
        self.home = home
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.extra = extra
        self.proc: subprocess.Popen[str] | None = None
        self.log = home / f"stdout-{port}.log"

    def start(self, timeout: float = 60) -> HubProcess:
        return self.launch().ready(timeout)

    def launch(self) -> HubProcess:
        """`animahub start`, not waiting for it (`ready` waits): several start at once."""
        handle = self.log.open("a")
        self.proc = subprocess.Popen(
            [str(BIN / "animahub"), "start", "--port", str(self.port)],
            env=env_for(self.home, **self.extra),
            stdout=handle,
            stderr=subprocess.STDOUT,
            text=True,
        )
        return self

    def ready(self, timeout: float = 60) -> HubProcess:
        """Once the hub answers its health route."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"hub exited early:\n{self.log.read_text()}")
            try:
                health = httpx.get(f"{self.url}/api/system/health", headers=self.owner(), timeout=1)
                if health.status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"hub did not come up:\n{self.log.read_text()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def owner(self) -> dict[str, str]:
        """The owner's credential, as the CLI sends it: the data folder's owner.key (made by
        `init` or the hub's start), never the loopback address."""
        key = read_owner_key(self.home)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def get(self, path: str, **params: Any) -> Any:
        response = httpx.get(f"{self.url}{path}", params=params, headers=self.owner(), timeout=10)
        response.raise_for_status()
        return response.json()
