"""Fakes of the local model servers README's model section names, for litellm to talk to.

openai_compatible (vLLM, LM Studio and llama.cpp's llama-server: the fake OpenAI's chat
endpoint and scripting, behind only the routes each server serves, with each one's quirks:
vLLM's served model name and its "auto" tool choice flags, llama-server's --jinja, a key
given with --api-key), ollama (Ollama's own API: /api/chat streamed as NDJSON, /api/tags,
/api/show, /api/version, and its OpenAI-compatible /v1) and server (a fake built from the
command that starts the real server, as README gives it, served like the fake OpenAI).
"""
