"""AnimaHub's adapter kit: what an adapter, in this repository or outside it, is tested with.

`animahub_kit.fakes` are local fakes of the platforms (Slack, Discord, Telegram, LINE,
Notion) and of the model servers (OpenAI's API, vLLM, LM Studio, llama.cpp, Ollama), each
a real HTTP server on 127.0.0.1 that the platform's own SDK talks to. `animahub_kit.contract`
is the contract every platform adapter passes (DESIGN §9): a harness that runs a real hub
with the adapter against a fake, the cases, and the pytest plugin that hands them out.
docs/adapters.md says how to use it; it is installed with the `kit` extra
(`pip install animahub[kit]`), never by the runtime install.
"""
