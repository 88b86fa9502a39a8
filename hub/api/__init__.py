"""The HTTP API: FastAPI routes over the hub, plus whatever routes the adapters bring."""
