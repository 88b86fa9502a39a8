"""A minimal adapter and everything it is tested with, as docs/adapters.md walks through it.

Minichat is a made-up chat platform, as small as a platform gets: a bot token, one endpoint
to post a message, a signed webhook for what people say. `minichat.py` is its adapter (what
an adapter's author writes), `fake_minichat.py` the fake of the platform its tests talk to,
and `minichat_harness.py` the contract harness that runs the kit's cases against the two
(tests/contract/test_example_adapter.py). Copy the three to start an adapter of your own.
"""
