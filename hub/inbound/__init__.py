"""From a platform event to an Anima's mailbox: dedup and persist, pace, route, dispatch."""
