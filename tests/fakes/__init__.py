"""Local fakes of external services, for tests."""
