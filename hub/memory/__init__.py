"""Five-layer memory: markdown files as the truth, indexed in Qdrant for recall."""
