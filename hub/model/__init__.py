"""The language model: the litellm client, its workers, failures, health, gate and deadlines."""
