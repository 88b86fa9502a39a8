"""What litellm alone costs per streamed `mock_response` call: the floor under the hub's
throughput when the model is litellm's mock (see hub_overhead.py).

    .venv/bin/python bench/litellm_mock_cost.py [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from importlib.metadata import version

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import litellm


async def one() -> None:
    response = await litellm.acompletion(
        model="openai/bench",
        messages=[{"role": "user", "content": "How is the project going?"}],
        stream=True,
        mock_response="All good: on track for Friday.",
        num_retries=0,
    )
    async for _chunk in response:
        pass


async def main(calls: int) -> None:
    litellm.suppress_debug_info = True
    for _ in range(20):
        await one()
    await asyncio.sleep(0.5)  # let litellm's background logging of the warm-up finish
    cpu = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    await asyncio.sleep(0.5)  # and of the measured calls, which is part of their cost
    cpu = time.process_time() - cpu
    print(f"litellm {version('litellm')}")
    print(f"CPU per streamed mock call: {cpu / calls * 1000:.2f} ms")
    print(f"ceiling on one event loop: {calls / cpu:.0f} calls/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    asyncio.run(main(parser.parse_args().calls))
