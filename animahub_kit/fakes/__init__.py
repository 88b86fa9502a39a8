"""Local fakes of external services (the chat platforms, Notion, model servers), each a real
HTTP server on 127.0.0.1 that the service's own SDK or client talks to."""
