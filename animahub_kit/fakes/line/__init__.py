"""The pieces of the fake LINE; the server that wires them is animahub_kit/fakes/line_server.py.

objects (what it builds and keeps: the calls, the bot's messages, chats, contents, reply
tokens, deliveries), state (what the fake holds and records, shared by all the others), wire
(the plumbing of every Messaging API call: recording, the access token, 429s, the quota, the
fault policy, dropped answers), the handlers by family: messages (reply and push), account
(profiles, members, the bot's info and the loading animation) and content (the download),
and LINE's side of the webhook: events (the events people cause) and webhook (signing and
delivering them, redelivery included).
"""
