"""The pieces of the fake Telegram; the server that wires them is
animahub_kit/fakes/telegram_server.py.

objects (the Telegram objects it builds and keeps: chats, the bot's messages, entities), state
(what the fake holds and records: people, chats, topics, files, calls, what the bot posted),
people (the Message objects Telegram builds for what a person says), wire (the plumbing of
every Bot API call: parameters, recording, token, 429s, failures and faults, answers), and the
methods by family: updates (getUpdates, webhooks, and the updates people cause), messages
(sends, edits, drafts and chat actions), files (getFile and the download) and bot (getMe and
the command list). animahub_kit/fakes/telegram_html.py parses ``parse_mode=HTML``.
"""
