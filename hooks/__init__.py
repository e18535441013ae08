"""The hook command Claude Code runs, ``cb-hook`` (found by ``agent.hooksettings``)."""
