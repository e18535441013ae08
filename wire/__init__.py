"""What both sides of claude-bridge share: the Mac's agent and the relay each import it.

It holds only what both need to speak to each other: the typed link messages (``protocol``), the
one table of settings (``config``), the format of the agent's own marker lines (``markers``), the
link client and the one reader of a transcript's complete lines (``client``), the permission
policy model (``policy``) and the one-line summary of a tool's input (``tools``). The rule: the
agent and the relay never import each other, and this package imports neither of them (nor the
``cli`` package, the command line over all three); tests/test_architecture.py checks it.
"""

from importlib import metadata

try:
    # The one version string: pyproject.toml's, as installed.
    __version__ = metadata.version("claude-bridge")
except metadata.PackageNotFoundError:  # a checkout that was never installed
    __version__ = "0+unknown"
