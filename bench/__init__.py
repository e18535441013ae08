"""Benchmarks of the relay: durable ingest, SSE fan-out, catch-up. They print figures; see README.md."""
