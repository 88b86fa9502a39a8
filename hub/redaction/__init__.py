"""Secrets kept out of everything the hub keeps and prints: gitleaks' rules and the hub's own."""
