"""What litellm alone costs per streamed `mock_response` call, made the way a model worker
makes it (`hub.model.client.LiteLLMCalls`): the floor under the hub's throughput when the
model is litellm's mock (see hub_overhead.py).

    .venv/bin/python bench/litellm_mock_cost.py [--calls 300] [--model openai/bench]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from importlib.metadata import version

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from hub.model.client import LiteLLMCalls

CALLS = LiteLLMCalls()


async def one(model: str) -> None:
    kwargs = {"model": model, "mock_response": "All good: on track for Friday.", "num_retries": 0}
    messages = [{"role": "user", "content": "How is the project going?"}]
    async for _piece in CALLS.stream_round(messages, kwargs):
        pass


async def main(calls: int, model: str) -> None:
    for _ in range(20):
        await one(model)
    await asyncio.sleep(0.5)  # let litellm's background logging of the warm-up finish
    cpu = time.process_time()
    await asyncio.gather(*(one(model) for _ in range(calls)))
    await asyncio.sleep(0.5)  # and of the measured calls, which is part of their cost
    cpu = time.process_time() - cpu
    print(f"litellm {version('litellm')}")
    print(f"CPU per streamed mock call: {cpu / calls * 1000:.2f} ms")
    print(f"ceiling on one event loop: {calls / cpu:.0f} calls/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--model", default="openai/bench")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.calls, arguments.model))
