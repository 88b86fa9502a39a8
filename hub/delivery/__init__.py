"""Everything the hub sends: the outbox and its delivery rows, chunking, targets, platforms."""
