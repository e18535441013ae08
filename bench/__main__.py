"""`python -m bench`: run every benchmark (see bench/run_all.py and bench/README.md)."""

from bench.run_all import main

raise SystemExit(main())
