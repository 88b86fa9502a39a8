"""Start-up, the CLI and the idle footprint, as a person meets them (issue 47).

Everything runs as a person runs it: the `animahub` console script of this environment, in
fresh processes, on a data folder made by `animahub init --demo` (three Animas: mika, aria,
kai) with a model configured (`[llm]` pointed at the fake OpenAI server of animahub_kit/fakes,
running in this process; idle, nothing calls it).

Measured, each the median of `--runs` runs:

* *health*: from spawning `animahub start` to the first 200 from `/api/system/health`;
* *--help*: `animahub --help`;
* *status, hub down* (exit code 3), *status, hub up* (right after health, as the embedder
  warms up on the same cores) and *status, hub settled* (`--settle` seconds later);
* *served*: `animahub people list`, answered by the running hub over HTTP;
* *chat*: `animahub chat kai …` with no hub running (an in-process hub), then against the
  running hub twice: its first model call starts the model worker;
* *idle RSS*: `--settle` seconds after health (the embedder's warm-up has finished by
  then), the resident and proportional set sizes of the hub's process and all its
  descendants (from /proc), and how many processes that is; again `--settle` seconds after
  the two chats (the model worker running, the turns indexed).

Each figure is given as wall seconds and as CPU seconds (user + system) of the command, or
of the hub's processes until health: on a machine others load, CPU moves less.

    .venv/bin/python bench/startup.py [--runs 5] [--settle 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from animahub_kit.fakes.openai_server import FakeOpenAI

ANIMAHUB = str(Path(sys.executable).with_name("animahub"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def environment(home: Path, model_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ANIMAHUB_HOME=str(home),
        ANIMAHUB_LLM__MODEL="openai/bench",
        ANIMAHUB_LLM__API_BASE=f"{model_url}/v1",
        ANIMAHUB_LLM__API_KEY="sk-bench-placeholder",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        COLUMNS="120",
    )
    return env


def timed(args: Sequence[str], env: dict[str, str], expect: int = 0) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one `animahub` command: on a machine
    others load, the CPU figure moves less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([ANIMAHUB, *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expect:
        raise SystemExit(f"animahub {' '.join(args)} exited {done.returncode}: {done.stderr}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def cpu_of(pids: Sequence[int]) -> float:
    """CPU seconds (user + system) the processes have used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def start_hub(
    env: dict[str, str], home: Path, port: int
) -> tuple[subprocess.Popen[bytes], float, float]:
    """Spawn `animahub start` and wait for its health; the wall seconds that took, and the
    CPU seconds its processes had used by then."""
    key = (home / "owner.key").read_text(encoding="ascii").strip()
    started = time.perf_counter()
    hub = subprocess.Popen(
        [ANIMAHUB, "start", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/api/system/health"
    with httpx.Client(timeout=2, headers={"Authorization": f"Bearer {key}"}) as client:
        while time.perf_counter() - started < 120:
            if hub.poll() is not None:
                raise SystemExit(f"the hub exited {hub.returncode} before it was healthy")
            try:
                if client.get(url).status_code == 200:
                    elapsed = time.perf_counter() - started
                    return hub, elapsed, cpu_of(descendants(hub.pid))
            except httpx.TransportError:
                pass
            time.sleep(0.02)
    hub.kill()
    raise SystemExit("no health after 120 s")


def stop_hub(hub: subprocess.Popen[bytes]) -> None:
    hub.terminate()
    try:
        hub.wait(30)
    except subprocess.TimeoutExpired:
        hub.kill()
        hub.wait()


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def memory_kb(pid: int, field: str) -> int:
    """A field of /proc/PID/smaps_rollup (`Rss`, `Pss`), in kB."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def idle_memory(pid: int) -> tuple[float, float, int]:
    """RSS and PSS of the hub and its descendants, in MB, and how many processes."""
    pids = descendants(pid)
    rss = sum(memory_kb(p, "Rss") for p in pids) / 1024
    pss = sum(memory_kb(p, "Pss") for p in pids) / 1024
    return rss, pss, len(pids)


def median(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} (min {min(values):.2f}, max {max(values):.2f})"


def record(figures: dict[str, list[float]], name: str, wall_cpu: tuple[float, float]) -> None:
    figures.setdefault(f"{name} s", []).append(wall_cpu[0])
    figures.setdefault(f"{name} cpu s", []).append(wall_cpu[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--settle", type=float, default=15.0)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="animahub-startup-"))
    figures: dict[str, list[float]] = {}
    memory: list[tuple[float, float, int]] = []
    try:
        with FakeOpenAI() as model:
            env = environment(home, model.url)
            timed(["init", "--demo", "--owner", "bench"], env)
            for _ in range(args.runs):
                record(figures, "--help", timed(["--help"], env))
                record(figures, "status, hub down", timed(["status"], env, expect=3))
                record(figures, "chat, hub down", timed(["chat", "kai", "hello"], env))
                hub, health, cpu = start_hub(env, home, free_port())
                try:
                    record(figures, "health", (health, cpu))
                    record(figures, "status, hub up", timed(["status"], env))
                    record(figures, "served (people list)", timed(["people", "list"], env))
                    time.sleep(args.settle)
                    memory.append(idle_memory(hub.pid))
                    # Right after health the embedder warms up on the same cores; now not.
                    record(figures, "status, hub settled", timed(["status"], env))
                    first = timed(["chat", "kai", "hello"], env)
                    record(figures, "first chat, hub up", first)
                    record(figures, "next chat, hub up", timed(["chat", "kai", "again"], env))
                    time.sleep(args.settle)
                    memory.append(idle_memory(hub.pid))
                finally:
                    stop_hub(hub)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()}")
    for name, values in figures.items():
        print(f"{name:32} {median(values)}")
    for name, taken in (("idle", memory[0::2]), ("idle after two chats", memory[1::2])):
        rss = [m[0] for m in taken]
        pss = [m[1] for m in taken]
        print(f"{name + ' RSS MB':32} {median(rss)} in {taken[-1][2]} processes")
        print(f"{name + ' PSS MB':32} {median(pss)}")


if __name__ == "__main__":
    main()
