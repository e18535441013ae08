"""The tests' pytest plug-in: every shared fixture, registered once by tests/conftest.py through
``pytest_plugins`` (as libtmux ships its ``pytest_plugin.py``), so no test module imports another's.

- a real relay: ``relay`` (one per run and store backend, tests isolated by ``account``),
  ``make_relay`` (private, with its own settings), on the backend ``relay_backend`` names
  ("sqlite", or "postgres": a fresh database of ``postgres``, one real cluster per run, for each
  relay); ``relay_overrides()`` gives the settings of a fresh store on that backend;
- a Mac: ``bridge`` (the real agent with the real Claude Code, against ``mock_api``, the fake
  Anthropic API; ``claude_bin``), ``fake`` (the real agent with the fake claude);
- a phone's browser: ``browser`` (Debian's Chromium), ``phone`` (logged-in page), ``loop`` (an event
  loop thread for Macs next to Playwright's sync API), ``scripted`` (a scripted Mac on that loop).

The helpers these fixtures hand out live in the importable modules next to this one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.support.bridge import FAKE, Bridge, claude_binary, fake_api, seed_home
from tests.support.paths import TESTS
from tests.support.postgres import PostgresCluster, PostgresMissingError
from tests.support.relay import Account, RelayServer
from tests.support.web import CHROMIUM, CHROMIUM_ARGS, LoopThread, Phone, ScriptedMac

# -- the relay's store backends ------------------------------------------------------------------

BACKENDS = ("sqlite", "postgres")
# The relay's API and link suites, the core's and its features': each of their tests that runs
# a relay runs once per backend (test_x[sqlite], test_x[postgres]). A module here must get its
# relays from ``relay``, ``make_relay`` or ``relay_overrides``. Named by their path under tests/
# (base names repeat across the parts' folders). (tests/wire/test_protocol.py, of the link's
# models alone, runs no relay.)
BACKEND_MODULES = frozenset(
    {
        "relay/test_api.py",
        "relay/test_api_hardening.py",
        "relay/test_api_properties.py",
        "relay/test_link.py",
        "relay/test_link_hardening.py",
        "relay/test_link_properties.py",
        "relay/test_sse.py",
        "relay/test_last_known.py",
        "relay/test_recovery.py",
        # the features' APIs (relay/features/)
        "relay/features/test_outbox.py",
        "relay/features/test_decisions.py",
        "relay/features/test_snapshots.py",
        "relay/features/test_title_convention.py",
        "relay/features/test_search.py",
        "relay/features/test_subagents.py",
        "relay/features/test_audit.py",
        "relay/features/test_cost.py",
        "relay/features/test_push.py",
        "relay/features/test_retention.py",
        "relay/features/test_files.py",
        "relay/features/test_fulltext.py",
        "relay/features/test_memory.py",
        "relay/features/test_report.py",
        "agent/test_approvals.py",
        # sessions in and out (fork, delete)
        "agent/test_fork.py",
        "relay/features/test_delete.py",
        "relay/features/test_moves.py",
    }
)
BACKENDS_ENV = "CB_TEST_BACKENDS"  # e.g. CB_TEST_BACKENDS=postgres: one backend only


def backend_module(path: Path) -> str:
    """A test file as BACKEND_MODULES names it: its path under tests/ ("relay/test_api.py")."""
    path = path.resolve()
    return path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else path.name


def chosen_backends() -> list[str]:
    names = [n.strip() for n in os.environ.get(BACKENDS_ENV, ",".join(BACKENDS)).split(",")]
    chosen = [n for n in names if n]
    unknown = sorted(set(chosen) - set(BACKENDS))
    if unknown or not chosen:
        raise pytest.UsageError(f"{BACKENDS_ENV}: {unknown or 'empty'}; known: {BACKENDS}")
    return chosen


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    in_suite = backend_module(Path(str(metafunc.definition.fspath))) in BACKEND_MODULES
    if in_suite and "relay_backend" in metafunc.fixturenames:
        # Session scope: the shared ``relay`` exists once per backend, not once per test.
        metafunc.parametrize("relay_backend", chosen_backends(), indirect=True, scope="session")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One real PostgreSQL cluster for the run (Debian's), removed at its end."""
    try:
        cluster = PostgresCluster()
    except PostgresMissingError as exc:
        pytest.fail(str(exc))
    try:
        yield cluster.start()
    finally:
        cluster.destroy()


@pytest.fixture(scope="session")
def relay_backend(request: pytest.FixtureRequest) -> str:
    """The relay store's backend: "sqlite" unless the test is parametrised over backends."""
    backend: str = getattr(request, "param", "sqlite")
    return backend


@pytest.fixture(scope="session")
def relay_overrides(
    relay_backend: str, request: pytest.FixtureRequest
) -> Callable[[], dict[str, Any]]:
    """Each call: the settings of a fresh, empty store on ``relay_backend``, to pass to
    ``RelayServer(data_dir, **relay_overrides())``. The cluster starts only if one is needed."""

    cluster: PostgresCluster | None = None
    if relay_backend == "postgres":
        cluster = request.getfixturevalue("postgres")

    def overrides() -> dict[str, Any]:
        return {"database_url": cluster.new_database("relay")} if cluster else {}

    return overrides


# -- the relay -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def relay(
    tmp_path_factory: pytest.TempPathFactory, relay_overrides: Callable[[], dict[str, Any]]
) -> Iterator[RelayServer]:
    """One relay shared by the tests that only need isolation by account."""
    server = RelayServer(tmp_path_factory.mktemp("relay"), **relay_overrides()).start()
    yield server
    server.stop()


@pytest.fixture
def make_relay(tmp_path: Path, relay_overrides: Callable[[], dict[str, Any]]) -> Iterator[Any]:
    """A private relay with its own settings (and its own store), for tests that change limits."""
    servers: list[RelayServer] = []

    def make(**overrides: Any) -> RelayServer:
        settings = {**relay_overrides(), **overrides}
        server = RelayServer(tmp_path / f"relay{len(servers)}", **settings).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def account(relay: RelayServer) -> Account:
    return relay.account()


# -- a Mac ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def claude_bin() -> str:
    return claude_binary()


@pytest.fixture(scope="session")
def mock_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_api(tmp_path_factory.mktemp("mockapi") / "requests.log") as url:
        yield url


@pytest.fixture
def bridge(relay: RelayServer, claude_bin: str, mock_api: str, tmp_path: Path) -> Iterator[Bridge]:
    b = Bridge(relay, relay.account(), tmp_path, claude_bin, mock_api)
    seed_home(b.home, [])
    try:
        yield b
    finally:
        b.stop_agent()
        b.kill_tmux()


@pytest.fixture(name="fake")
def fake_bridge(
    relay: RelayServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Bridge]:
    b = Bridge(relay, relay.account(), tmp_path, FAKE, api_url="http://127.0.0.1:9")
    seed_home(b.home, [])
    original = b.env

    def env() -> dict[str, str]:
        return {**original(), "FAKECLAUDE_SLOW_SECONDS": "8", "FAKECLAUDE_DIALOG_DEAF": "0.05"}

    monkeypatch.setattr(b, "env", env)
    try:
        yield b
    finally:
        b.stop_agent()
        b.kill_tmux()


# -- a phone's browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/test-deps-web (Debian's chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.stop()


@pytest.fixture
def phone(browser: Browser, relay: RelayServer) -> Iterator[Phone]:
    p = Phone(browser, relay)
    yield p
    p.close()


@pytest.fixture
def scripted(relay: RelayServer, account: Account, loop: LoopThread) -> Iterator[ScriptedMac]:
    mac = ScriptedMac(relay, account.device_token, loop).connect()
    yield mac
    mac.close()
