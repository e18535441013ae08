"""The claude-bridge agent: the daemon on each Mac that runs Claude Code and links to the relay.

What it shares with the relay (the link messages and client, settings, policy model, marker
lines) is in ``wire/``; the agent never imports the relay.
"""
