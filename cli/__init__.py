"""The ``claude-bridge`` command line: a thin layer over the relay, the agent and the shared parts.

``main`` is the entry point: it builds the parser from the command modules it lists
(``COMMANDS``: ``up``, ``serve`` for ``relay``, ``tokens``, ``pair``, the session commands …),
each adding its own commands with ``register``, and runs the one named. The command modules share
what they need through libraries that register nothing: ``common`` (settings, failing, this
machine's relay and agent, the relay client), ``arguments``, ``client`` (the relay's HTTP API),
``references`` (SESSION and MAC), ``display``, ``publish`` and ``tailscale`` (how a phone reaches
``up``), ``service`` (``up`` at login), ``checks`` and ``checkup`` (doctor's decisions and probes).
The agent's own commands (``agent``, ``screen``) are built by agent/cli.py and registered here. It
is the one package that imports all three parts.
"""
