"""The `animahub` command line: every command, the client that talks to a hub, the run file."""
