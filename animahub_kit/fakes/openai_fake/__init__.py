"""The pieces of the fake OpenAI; the server that wires them is animahub_kit/fakes/openai_server.py.

script (the scripted answers: replies, tool calls and failures), state (what the fake holds
and records: the queues, the holds, the request log and the usage of each answer), wire (the
``chat.completion`` object and its ``usage``, counted from the request), streaming (the
``chat.completion.chunk`` events of a streamed answer, as server-sent events), errors (the
OpenAI-style error answers the faults are served as), chat (the ``/chat/completions``
endpoint: reading the body, holds, latency, failures, the answer) and control (the
``/_control/`` routes that drive a fake running in another process); stalls (streams that
go quiet: no first chunk, or half way through).
outage: refusals that last until reset (401 echoing part of the key, 404, 429) and the list
of models (``GET /v1/models``); going down and coming back on the same port is the server's.
"""
