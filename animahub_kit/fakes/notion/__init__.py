"""The pieces of the fake Notion; the server that wires them is animahub_kit/fakes/notion_server.py.

model (data sources, pages, Notion's small formats), errors (a refusal as Notion words it),
properties (page property values checked as Notion checks them), workspace (what the fake
holds, and finds as a request names it), objects (the JSON it answers with), wire (recording,
authentication, answers, faults), and the request handlers by resource: pages, data_sources,
users.
"""
