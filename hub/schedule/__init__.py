"""Each Anima's life on the schedule: heartbeats, crons, sessions, consolidation runs."""
