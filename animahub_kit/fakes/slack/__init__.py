"""The pieces of the fake Slack; the server that wires them is animahub_kit/fakes/slack_server.py.

model (the records it keeps: calls, bot users, posted messages, deliveries), objects (the
JSON Slack's users, channels, messages and event callbacks look like), state (what the fake
holds and records, and the events a person's doings make), background (the tasks it runs
besides an answer), wire (the plumbing around every Web API call: recording, slowness, 429s,
failures and faults, authentication), the Web API methods by family: chat, conversations and
users; and Slack's side of the hub's inbound: socket_mode (the ``/link`` connections,
envelopes and acknowledgements), signing (signed POSTs to the hub), events (event callback
deliveries and retries) and commands (slash commands and their ``response_url``).
"""
