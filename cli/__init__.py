"""The ``claude-bridge`` command line: a thin layer over the relay, the agent and the shared parts.

``main`` is the entry point (``claude-bridge up``, ``relay``, ``token``, ``pair``, ``events``,
``cost``); ``sessions`` holds the session commands (a client of the relay's HTTP API); ``replay``
pushes transcripts over the link client. The agent's own commands (``agent``, ``screen``) are
built by agent/cli.py and registered here. It is the one package that imports all three parts.
"""
