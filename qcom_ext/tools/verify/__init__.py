"""Crash trials of the risky native calls, run in a child process (``probe(verify=True)``)."""
