"""The pieces of the fake Discord; the server that wires them is
animahub_kit/fakes/discord_server.py.

objects (the JSON Discord's users, channels, messages, interactions and guild look like),
state (what the fake holds and records: people, places, messages, snowflakes), gateway (the
WebSocket sessions: hello, identify, resume, heartbeat, dispatch), wire (the HTTP plumbing
around every REST call: recording, authentication, 429s and faults, JSON answers), and the
REST handlers by resource: login (what discord.py asks at login), channels (channels, DMs and
their messages) and interactions (commands, interaction callbacks, webhook followups).
"""
