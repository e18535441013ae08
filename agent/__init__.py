"""The claude-bridge agent: the daemon on each Mac that runs Claude Code and links to the relay."""
