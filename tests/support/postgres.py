"""A real, throw-away PostgreSQL cluster from Debian's ``postgresql`` package, for the relay's
PostgreSQL store: initdb into a fresh folder, ``postgres`` on 127.0.0.1 on a free port, trust
authentication, settings for a test machine. As root it runs as the ``postgres`` system user
(PostgreSQL refuses to run as root)."""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from tests.support.relay import free_port

MISSING = "PostgreSQL is missing: run scripts/test-deps"
# Debian installs each major version's server programs here (postgresql-common picks the newest
# for its own wrappers). /usr/local/bin or PATH may hold other builds or links; these are real.
DEBIAN_ROOT = Path("/usr/lib/postgresql")
SYSTEM_USER = "postgres"  # the system user Debian's package creates, who runs it when we are root
SUPERUSER = "postgres"  # initdb -U: the same role name whoever runs the tests
START_TIMEOUT = 30  # seconds for pg_ctl to see the server accept connections
READY_TIMEOUT = 30  # seconds for a connection to succeed after a start or restart
BIND_ATTEMPTS = 3  # a free port can be taken between choosing it and binding it

# Tuned for a throw-away cluster on a small test machine: no fsync (a crash loses nothing worth
# keeping), commits still wait for their WAL write (the relay's acknowledgements mean something
# to it), room for several relay nodes each with a pool, little memory.
SETTINGS: dict[str, str | int] = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "on",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": 0,
    "max_connections": 300,
    "shared_buffers": "32MB",
    "log_min_messages": "warning",
    "log_line_prefix": "%m [%p] %d ",
    "timezone": "UTC",
}
HBA = """\
# Trust: a throw-away cluster reached only on this machine.
local all all trust
host all all 127.0.0.1/32 trust
"""


class PostgresMissingError(RuntimeError):
    pass


def bindir() -> Path:
    """The newest Debian PostgreSQL's bin folder, else ``pg_config --bindir``'s."""
    versions = sorted(
        (p for p in DEBIAN_ROOT.glob("*/bin") if re.fullmatch(r"\d+", p.parent.name)),
        key=lambda p: int(p.parent.name),
    )
    for candidate in reversed(versions):
        if (candidate / "initdb").exists():
            return candidate
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0 and (Path(out.stdout.strip()) / "initdb").exists():
            return Path(out.stdout.strip())
    raise PostgresMissingError(MISSING)


class PostgresCluster:
    """One cluster in its own temp folder (data, unix socket, log). ``start()`` creates it the
    first time and starts it again after ``stop()``; ``destroy()`` stops it and removes it."""

    def __init__(self, settings: dict[str, str | int] | None = None) -> None:
        self.bin = bindir()
        self.as_root = os.geteuid() == 0
        # Under /tmp, not pytest's tmp_path: /tmp/pytest-of-root is 0700, and the postgres user
        # must reach its data folder and socket.
        self.base = Path(tempfile.mkdtemp(prefix="cb-postgres-"))
        self.data = self.base / "data"
        self.log = self.base / "postgres.log"
        self.settings = {**SETTINGS, **(settings or {})}
        self.port = 0
        self.user = SUPERUSER
        if self.as_root:
            owner = pwd.getpwnam(SYSTEM_USER)
            os.chown(self.base, owner.pw_uid, owner.pw_gid)

    # -- running the programs -------------------------------------------------------------------

    def run(self, program: str, *args: str, timeout: float = 60) -> str:
        """One of the cluster's programs (pg_ctl, pg_controldata, psql, ...) as its owner; its
        output, or a RuntimeError with that and the server log's tail."""
        command = [str(self.bin / program), *args]
        if self.as_root:
            command = ["runuser", "-u", SYSTEM_USER, "--", *command]
        # cwd: the postgres user may not be able to enter ours.
        done = subprocess.run(
            command, cwd=self.base, capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{program} {' '.join(args)} failed ({done.returncode}):\n"
                f"{done.stdout}{done.stderr}\n{self.log_tail()}"
            )
        return done.stdout

    def log_tail(self, lines: int = 30) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def _initdb(self) -> None:
        self.run(
            "initdb", "-D", str(self.data), "-U", self.user, "--auth=trust",
            "--encoding=UTF8", "--locale=C", "--no-sync",
        )  # fmt: skip
        (self.data / "pg_hba.conf").write_text(HBA)
        conf = self.data / "postgresql.conf"
        conf.write_text(conf.read_text() + "\ninclude 'test.conf'\n")

    def _write_settings(self) -> None:
        settings = {**self.settings, "port": self.port, "unix_socket_directories": str(self.base)}
        lines = [f"{key} = '{value}'" for key, value in settings.items()]
        path = self.data / "test.conf"
        path.write_text("\n".join(lines) + "\n")
        if self.as_root:
            owner = pwd.getpwnam(SYSTEM_USER)
            os.chown(path, owner.pw_uid, owner.pw_gid)

    def _pg_ctl(self, *args: str) -> None:
        self.run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(START_TIMEOUT),
            *args, timeout=START_TIMEOUT + 10,
        )  # fmt: skip

    # -- the cluster's life ---------------------------------------------------------------------

    def start(self) -> PostgresCluster:
        """Create the cluster the first time; start it (on the same port after a stop)."""
        if not (self.data / "PG_VERSION").exists():
            self._initdb()
        attempts = 1 if self.port else BIND_ATTEMPTS
        for attempt in range(attempts):
            if not self.port or attempt:
                self.port = free_port()
                self._write_settings()
            try:
                self._pg_ctl("start")
                break
            except RuntimeError:
                if attempt == attempts - 1 or "could not bind" not in self.log_tail():
                    raise
        self.wait_ready()
        return self

    def stop(self, mode: str = "fast") -> None:
        """Fast shutdown: open sessions are cut, committed work is kept. ``mode="immediate"``
        stops it as a crash would (no checkpoint: the next start recovers from the WAL)."""
        self._pg_ctl("stop", "-m", mode)

    def restart(self) -> None:
        """Fast shutdown then start again; returns once it accepts connections."""
        self._pg_ctl("restart", "-m", "fast")
        self.wait_ready()

    @contextlib.contextmanager
    def stopped(self, mode: str = "fast") -> Iterator[None]:
        """PostgreSQL down for the ``with`` block, up again (same port, same data) after it."""
        self.stop(mode)
        try:
            yield
        finally:
            self.start()

    def running(self) -> bool:
        try:
            self.run("pg_ctl", "-D", str(self.data), "status")
        except RuntimeError:
            return False
        return True

    def destroy(self) -> None:
        """Stop it (immediately: nothing in it is kept) and remove its folder."""
        if self.data.exists() and self.running():
            self.run("pg_ctl", "-D", str(self.data), "-w", "stop", "-m", "immediate")
        shutil.rmtree(self.base, ignore_errors=True)

    # -- databases ------------------------------------------------------------------------------

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{dbname}"

    def connect(self, dbname: str = "postgres", **kwargs: Any) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url(dbname), **kwargs)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self.connect(connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def new_database(self, prefix: str = "test") -> str:
        """A fresh, empty database; its URL."""
        name = f"{prefix}_{secrets.token_hex(6)}"
        with self.connect(autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)
