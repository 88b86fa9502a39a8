"""Who is talking: identity, credentials, linking, admission, sharing, forgetting, handoffs."""
