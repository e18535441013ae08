"""Entry point: ``python3 tests/fakeclaude`` or ``python3 -m fakeclaude`` from ``tests/``."""

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the package, not its modules one by one
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    sys.path.insert(0, str(here.parent))

# Run as a script, tests/ is on the path and this package is ``fakeclaude``: the type checker
# knows it as ``tests.fakeclaude``.
from fakeclaude.app import main  # type: ignore[import-not-found]

sys.exit(main())
