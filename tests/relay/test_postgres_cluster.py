"""The throw-away PostgreSQL cluster the relay's PostgreSQL store is tested on
(tests/support/postgres.py), and the plumbing that runs the relay suites once per store backend."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.support import postgres as pgmod
from tests.support.paths import REPO, TESTS
from tests.support.plugin import BACKEND_MODULES, BACKENDS_ENV, backend_module, chosen_backends
from tests.support.postgres import PostgresCluster
from tests.support.relay import RelayServer

ROOT = REPO


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[PostgresCluster]:
    """A cluster of this module's own: these tests stop and restart it."""
    cluster = PostgresCluster().start()
    yield cluster
    cluster.destroy()


def scalar(url: str, query: str) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


def test_the_cluster_serves_on_loopback_with_the_test_settings(postgres: PostgresCluster) -> None:
    url = postgres.url()
    assert url == f"postgresql://{postgres.user}@127.0.0.1:{postgres.port}/postgres"
    assert scalar(url, "SHOW fsync") == "off"
    assert scalar(url, "SHOW full_page_writes") == "off"
    assert scalar(url, "SHOW synchronous_commit") == "on"
    assert int(scalar(url, "SHOW max_connections")) >= 300
    assert scalar(url, "SHOW listen_addresses") == "127.0.0.1"
    assert scalar(url, "SHOW unix_socket_directories") == str(postgres.base)
    assert scalar(url, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user") is True
    # Its programs are Debian's, not whatever PATH offers.
    assert postgres.bin.parent.parent == pgmod.DEBIAN_ROOT
    assert scalar(url, "SHOW server_version").split(".")[0] == postgres.bin.parent.name


def test_each_new_database_is_fresh_and_apart(postgres: PostgresCluster) -> None:
    first, second = postgres.new_database("iso"), postgres.new_database("iso")
    assert first != second
    with psycopg.connect(first) as conn:
        conn.execute("CREATE TABLE marks (n int)")
        conn.execute("INSERT INTO marks VALUES (1)")
    assert scalar(first, "SELECT count(*) FROM marks") == 1
    assert scalar(second, "SELECT to_regclass('marks') IS NULL") is True
    names = {url.rsplit("/", 1)[1] for url in (first, second)}
    listed = scalar(postgres.url(), "SELECT array_agg(datname) FROM pg_database")
    assert names <= set(listed)


def test_a_restart_keeps_what_was_committed(own_cluster: PostgresCluster) -> None:
    url = own_cluster.new_database("restart")
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE kept (n int)")
        conn.execute("INSERT INTO kept VALUES (7)")
    open_session = psycopg.connect(url)
    port = own_cluster.port
    own_cluster.restart()
    # The fast shutdown cut the open session; a new one sees the committed row on the same port.
    with pytest.raises(psycopg.OperationalError):
        open_session.execute("SELECT 1")
    open_session.close()
    assert own_cluster.port == port
    assert scalar(url, "SELECT array_agg(n) FROM kept") == [7]


def test_while_stopped_it_refuses_connections_and_comes_back(own_cluster: PostgresCluster) -> None:
    url = own_cluster.new_database("down")
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE kept AS SELECT 42 AS n")
    with own_cluster.stopped():
        assert not own_cluster.running()
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=2)
    assert own_cluster.running()
    assert scalar(url, "SELECT n FROM kept") == 42


def test_a_crash_like_stop_keeps_what_was_committed(own_cluster: PostgresCluster) -> None:
    url = own_cluster.new_database("crash")
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE kept AS SELECT 9 AS n")
    with own_cluster.stopped("immediate"):
        # Left as a crash leaves it: not shut down, so the next start recovers.
        control = own_cluster.run("pg_controldata", str(own_cluster.data))
        assert "Database cluster state:               in production" in control
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=2)
    assert scalar(url, "SELECT n FROM kept") == 9


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: then it runs as the postgres user")
def test_as_root_the_cluster_belongs_to_the_postgres_user(postgres: PostgresCluster) -> None:
    owner = pwd.getpwnam(pgmod.SYSTEM_USER)
    for path in (postgres.base, postgres.data, postgres.data / "PG_VERSION", postgres.log):
        assert path.stat().st_uid == owner.pw_uid, path
    assert oct(postgres.data.stat().st_mode & 0o777) == oct(0o700)
    postmaster = int((postgres.data / "postmaster.pid").read_text().split()[0])
    status = Path(f"/proc/{postmaster}/status").read_text()
    uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
    assert {int(uid) for uid in uids} == {owner.pw_uid}
    # Under /tmp itself: pytest's own temp folder (0700, root's) is closed to that user.
    assert postgres.base.parent == Path("/tmp")


def test_missing_binaries_name_the_script_that_installs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pgmod, "DEBIAN_ROOT", tmp_path / "no-postgresql")
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_config either
    with pytest.raises(pgmod.PostgresMissingError, match="run scripts/test-deps"):
        PostgresCluster()


# -- the relay on each backend ---------------------------------------------------------------------


@pytest.mark.parametrize("relay_backend", ["postgres"], indirect=True)
def test_a_relay_on_postgres_gets_a_fresh_database_of_the_cluster(
    relay_backend: str,
    make_relay: Callable[..., RelayServer],
    relay: RelayServer,
    postgres: PostgresCluster,
) -> None:
    private = make_relay(events_kept=5)
    urls = {private.config.str("database_url"), relay.config.str("database_url")}
    assert len(urls) == 2  # each relay its own database
    listed = set(scalar(postgres.url(), "SELECT array_agg(datname) FROM pg_database"))
    for server, url in (
        (private, private.config.str("database_url")),
        (relay, relay.config.str("database_url")),
    ):
        assert url.startswith(postgres.url("relay_"))
        assert url.rsplit("/", 1)[1] in listed
        assert scalar(url, "SELECT current_database()") == url.rsplit("/", 1)[1]
        assert httpx.get(server.url + "/api/health", timeout=5).json() == {"status": "ok"}
    assert private.config.int("events_kept") == 5  # the test's own settings still apply


def test_a_relay_by_default_is_on_sqlite(
    relay_backend: str, make_relay: Callable[..., RelayServer]
) -> None:
    assert relay_backend == "sqlite"
    assert make_relay().config.str("database_url") == ""


def collected(module: str, backends: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != BACKENDS_ENV}
    if backends is not None:
        env[BACKENDS_ENV] = backends
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", module],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_relay_suites_run_once_per_backend_and_the_env_picks_one() -> None:
    both = collected("tests/relay/features/test_outbox.py", None)
    relayed = [i for i in both if i.endswith(("[sqlite]", "[postgres]"))]
    assert relayed and len(relayed) % 2 == 0
    for test_id in (i for i in relayed if i.endswith("[sqlite]")):
        assert test_id.removesuffix("[sqlite]") + "[postgres]" in relayed
    only = collected("tests/relay/features/test_outbox.py", "postgres")
    assert [i for i in only if i.endswith("]")] == [i for i in relayed if i.endswith("[postgres]")]


def test_every_suite_run_per_backend_is_a_test_file_there() -> None:
    # Named by path: a suite moved or renamed without its entry would quietly run on SQLite only.
    missing = sorted(name for name in BACKEND_MODULES if not (TESTS / name).is_file())
    assert not missing, "BACKEND_MODULES names files that are not there: " + ", ".join(missing)
    assert backend_module(TESTS / "relay" / "test_api.py") == "relay/test_api.py"
    assert backend_module(REPO / "bench" / "ingest.py") == "ingest.py"


def test_unknown_backends_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BACKENDS_ENV, "sqlite, postgres")
    assert chosen_backends() == ["sqlite", "postgres"]
    monkeypatch.setenv(BACKENDS_ENV, "postgres,mysql")
    with pytest.raises(pytest.UsageError, match="mysql"):
        chosen_backends()
