"""Read-only views of what the hub keeps: conversations, transcripts, charts, audit, MCP."""
