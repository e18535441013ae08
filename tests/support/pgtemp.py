"""A fresh PostgreSQL database per test, on the server ``CB_TEST_PG`` names (skipped without it).

``CB_TEST_PG=postgresql://postgres@127.0.0.1:5432`` (no database name): each test gets a database
of its own, made and dropped around it. Modules take the fixture by importing it.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest

ENV = "CB_TEST_PG"


def server_url() -> str:
    base = os.environ.get(ENV, "").rstrip("/")
    if not base:
        pytest.skip(f"set {ENV}=postgresql://user@host:port to run against PostgreSQL")
    return base


@pytest.fixture
def pg_url() -> Iterator[str]:
    """The URL of an empty database of this test's own."""
    psycopg = pytest.importorskip("psycopg")
    base = server_url()
    name = "t_" + secrets.token_hex(6)
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(base + "/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
