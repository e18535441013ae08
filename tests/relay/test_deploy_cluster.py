"""deploy/'s cluster files: Caddyfile.cluster with the real Caddy, and compose.yaml read as data.

The Caddyfile runs as it is, with only its list of nodes (relay1:8765 relay2:8765 relay3:8765)
rewritten to three stand-in HTTP servers on 127.0.0.1, CB_SITE=localhost and CB_TLS=internal,
under a few global options that move Caddy onto free ports with its own folders. Requests spread
over the three, least_conn puts open streams on the node with the fewest, a stopped node is
skipped (the request to it is retried on another), and SSE frames are not buffered.

compose.yaml is not run here (containers are outside the test suite); it is parsed and checked
against the settings table, the Caddyfile and the relay's health route.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from relay.routes import router as api_router
from tests.support.nodes import templated_caddyfile
from tests.support.paths import REPO
from tests.support.relay import free_port
from wire import config

DEPLOY = REPO / "deploy"
CADDYFILE = DEPLOY / "Caddyfile.cluster"
COMPOSE = DEPLOY / "compose.yaml"
NODES = ("relay1", "relay2", "relay3")
NODE_PORT = 8765
UPSTREAMS = " ".join(f"{node}:{NODE_PORT}" for node in NODES)  # as the file lists them
HEALTH = "/api/health"
PASSWORD = "3f9c0a71d2"  # what a person puts in deploy/.env

SEQUENTIAL_REQUESTS = 60  # all three seen: a miss has odds 3·(2/3)^60, about 1e-10
HOLD_SECONDS = 20.0  # a stand-in holds a stream at most this long waiting for the test
STARTUP_SECONDS = 60.0

needs_caddy = pytest.mark.skipif(
    shutil.which("caddy") is None, reason="caddy not installed (scripts/test-deps)"
)


# -- stand-in relay nodes ------------------------------------------------------------------


@dataclass
class Node:
    """A stand-in relay node: answers the health route, names itself on /who, and holds an SSE
    stream on /api/stream after its first event until ``release`` is set."""

    name: str
    server: ThreadingHTTPServer | None = None
    release: threading.Event = field(default_factory=threading.Event)
    streams_finished: int = 0
    who: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def address(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> Node:
        node = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, body: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == HEALTH:
                    self._send(b'{"status":"ok"}', "application/json")
                elif self.path == "/who":
                    with node.lock:
                        node.who += 1
                    self._send(node.name.encode(), "text/plain")
                elif self.path == "/api/stream":
                    # HTTP/1.0 with no length: the stream ends when the connection closes.
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.end_headers()
                    self.wfile.write(f"data: {node.name}\n\n".encode())
                    self.wfile.flush()
                    node.release.wait(HOLD_SECONDS)
                    with node.lock:
                        node.streams_finished += 1
                    self.wfile.write(b"data: done\n\n")
                else:
                    self.send_error(404)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """The node dies: its port refuses connections from now on."""
        self.release.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def refuses(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


# -- Caddy with the shipped file (its node list replaced: tests/support/nodes.py) ---------------


@dataclass
class Cluster:
    nodes: list[Node]
    https_port: int
    admin_port: int
    ca: Path
    log: Path

    @property
    def url(self) -> str:
        return f"https://localhost:{self.https_port}"

    def client(self) -> httpx.Client:
        context = ssl.create_default_context(cafile=str(self.ca))
        return httpx.Client(base_url=self.url, verify=context, timeout=15)

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def open_requests(self, node: Node) -> int:
        """The requests Caddy has open at ``node`` (what least_conn compares)."""
        upstreams = httpx.get(f"http://127.0.0.1:{self.admin_port}/reverse_proxy/upstreams")
        (entry,) = [u for u in upstreams.json() if u["address"] == node.address]
        return int(entry["num_requests"])


@contextlib.contextmanager
def caddy_in_front(root: Path, nodes: list[Node]) -> Iterator[Cluster]:
    root.mkdir(parents=True, exist_ok=True)
    site = root / "Caddyfile.cluster"
    site.write_text(templated_caddyfile([n.address for n in nodes]))
    https_port, admin_port = free_port(), free_port()
    config_file = root / "Caddyfile"
    config_file.write_text(
        "{\n"
        f"\tadmin 127.0.0.1:{admin_port}\n"  # the test reads the open requests per node there
        "\tdebug\n"  # the proxy logs each attempt at a node, the failed ones too
        f"\thttp_port {free_port()}\n"
        f"\thttps_port {https_port}\n"
        "\tauto_https disable_redirects\n"
        "\tskip_install_trust\n"
        "\tgrace_period 1s\n"  # a test's streams may still be open when it stops
        "}\n"
        f"import {site}\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "CB_SITE": "localhost",
        "CB_TLS": "internal",
    }
    log = root / "caddy.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["caddy", "run", "--config", str(config_file), "--adapter", "caddyfile"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    ca = root / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    cluster = Cluster(nodes, https_port, admin_port, ca, log)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            if ca.exists():
                try:
                    with cluster.client() as c:
                        if c.get("/who").status_code == 200:
                            break
                except (httpx.HTTPError, ssl.SSLError):
                    pass
            time.sleep(0.2)
        yield cluster
    finally:
        for node in nodes:
            node.release.set()
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for node in nodes:
            node.stop()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    nodes = [Node(name).start() for name in NODES]
    with caddy_in_front(tmp_path / "caddy", nodes) as running:
        yield running


@contextlib.contextmanager
def open_streams(client: httpx.Client, count: int) -> Iterator[list[tuple[str, Iterator[str]]]]:
    """``count`` SSE streams through Caddy, all held open; each with the node its first event
    names and the rest of its lines."""
    with contextlib.ExitStack() as stack:
        streams = []
        for _ in range(count):
            response = stack.enter_context(client.stream("GET", "/api/stream"))
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.iter_lines()
            streams.append((first_data(lines), lines))
        yield streams


def first_data(lines: Iterator[str]) -> str:
    for line in lines:
        if line.startswith("data: "):
            return line.removeprefix("data: ")
    raise AssertionError("the stream ended before its first event")


# -- (a) the file is valid as shipped ------------------------------------------------------


def caddy_env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": "/nonexistent", **extra}


@needs_caddy
@pytest.mark.parametrize("tls", ["acme", "internal"])
def test_the_cluster_caddyfile_is_valid_as_shipped(tls: str) -> None:
    env = caddy_env(CB_SITE="relay.example.com", CB_TLS=tls)
    command = ["--adapter", "caddyfile", "--config", str(CADDYFILE)]
    checked = subprocess.run(
        ["caddy", "validate", *command], capture_output=True, text=True, env=env, timeout=60
    )
    assert checked.returncode == 0, checked.stderr
    adapted = subprocess.run(
        ["caddy", "adapt", *command], capture_output=True, text=True, env=env, timeout=60
    )
    assert adapted.returncode == 0, adapted.stderr
    site = json.loads(adapted.stdout)["apps"]["http"]["servers"]["srv0"]["routes"][0]
    assert site["match"] == [{"host": ["relay.example.com"]}]
    (proxy,) = [h for h in site["handle"][0]["routes"][0]["handle"]]
    assert proxy["handler"] == "reverse_proxy"  # and nothing before it: no `encode`
    assert [u["dial"] for u in proxy["upstreams"]] == [f"{n}:{NODE_PORT}" for n in NODES]
    balancing = proxy["load_balancing"]
    assert balancing["selection_policy"]["policy"] == "least_conn"
    assert balancing["try_duration"] > 0
    checks = proxy["health_checks"]
    assert checks["active"]["uri"] == HEALTH
    assert checks["passive"]["fail_duration"] > 0
    assert "unhealthy_status" not in checks["passive"]  # a node's 503 is its answer, not death
    assert proxy["flush_interval"] == -1
    uses_internal = '"internal"' in adapted.stdout
    assert uses_internal == (tls == "internal")


def test_the_health_route_the_files_use_is_the_relays() -> None:
    paths = {getattr(route, "path", None) for route in api_router.routes}
    assert HEALTH in paths


# -- (b) the real Caddy in front of three nodes --------------------------------------------


@needs_caddy
@pytest.mark.slow  # Caddy makes its CA and a certificate at start
def test_requests_spread_and_open_streams_go_to_the_least_busy_node(cluster: Cluster) -> None:
    with cluster.client() as client:
        seen = Counter(client.get("/who").text for _ in range(SEQUENTIAL_REQUESTS))
        assert set(seen) == set(NODES), seen
        # least_conn: each new stream goes to a node with no open stream yet.
        with open_streams(client, len(NODES)) as streams:
            assert sorted(name for name, _ in streams) == sorted(NODES)


@needs_caddy
@pytest.mark.slow
def test_sse_frames_pass_before_the_node_ends_the_stream(cluster: Cluster) -> None:
    with cluster.client() as client, client.stream("GET", "/api/stream") as response:
        lines = response.iter_lines()
        started = time.monotonic()
        name = first_data(lines)
        node = cluster.node(name)
        # The node is still holding the stream open: the first frame was not buffered.
        assert node.streams_finished == 0 and not node.release.is_set()
        assert time.monotonic() - started < HOLD_SECONDS / 2
        node.release.set()
        assert first_data(lines) == "done"
    assert node.streams_finished == 1


@needs_caddy
@pytest.mark.slow
def test_a_stopped_node_is_skipped_and_its_requests_retried_elsewhere(cluster: Cluster) -> None:
    dead = cluster.nodes[-1]
    alive = {n.name for n in cluster.nodes if n is not dead}
    with cluster.client() as client, open_streams(client, len(NODES)) as streams:
        # End the stream on the node that will die, keep one open on each of the others:
        # least_conn then picks the dead node first, and Caddy must retry elsewhere.
        dead.release.set()
        (rest,) = [lines for name, lines in streams if name == dead.name]
        assert first_data(rest) == "done"
        deadline = time.monotonic() + HOLD_SECONDS
        while cluster.open_requests(dead):  # until Caddy counts the ended stream closed
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert all(cluster.open_requests(n) == 1 for n in cluster.nodes if n is not dead)
        dead.stop()
        assert refuses(dead.address)

        first = client.get("/who")
        assert first.status_code == 200 and first.text in alive, first.text
        answers: Counter[str] = Counter()
        for _ in range(SEQUENTIAL_REQUESTS):
            r = client.get("/who")
            assert r.status_code == 200, r.text
            answers[r.text] += 1
        assert set(answers) == alive, answers
        for node in cluster.nodes:
            node.release.set()
    # The first request went to the dead node (least_conn: it had no open stream), failed to
    # connect and was retried on another; the passive check then kept it out: one failed dial.
    assert failed_dials(cluster.log, dead.address) == ["/who"]


def failed_dials(log: Path, address: str) -> list[str]:
    """The paths of the requests Caddy could not connect to ``address`` for (its debug log)."""
    paths = []
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        attempt = entry.get("msg") == "upstream roundtrip" and entry.get("upstream") == address
        if attempt and "connection refused" in entry.get("error", ""):
            paths.append(entry["request"]["uri"])
    return paths


# -- (c) compose.yaml ----------------------------------------------------------------------

_KEY = re.compile(r"^(<<|[A-Za-z_][\w.-]*):(?: |$)")
_INT = re.compile(r"^-?\d+$")


def parse_yaml_subset(text: str) -> Any:
    """The YAML compose.yaml is written in: block mappings and sequences, plain and quoted
    scalars, comments on their own lines, anchors on mappings and ``<<: *anchor`` merges.
    Anything else is an error, not a guess (PyYAML is not a dependency of the project)."""
    lines: list[tuple[int, str]] = []
    for raw in text.splitlines():
        content = raw.strip()
        if content and not content.startswith("#"):
            assert "\t" not in raw[: len(raw) - len(raw.lstrip())], "tabs in indentation"
            lines.append((len(raw) - len(raw.lstrip(" ")), content))
    anchors: dict[str, Any] = {}
    value, end = _block(lines, 0, lines[0][0], anchors)
    assert end == len(lines), f"unparsed from line {lines[end]}"
    return value


def _block(lines: list[tuple[int, str]], i: int, indent: int, anchors: dict[str, Any]) -> Any:
    if lines[i][1].startswith("- "):
        return _sequence(lines, i, indent, anchors)
    return _mapping(lines, i, indent, anchors)


def _mapping(
    lines: list[tuple[int, str]], i: int, indent: int, anchors: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent:
        match = _KEY.match(lines[i][1])
        assert match, f"not a mapping entry: {lines[i][1]!r}"
        key, rest = match.group(1), lines[i][1][match.end() :].strip()
        i += 1
        anchor = None
        if rest.startswith("&"):
            anchor, _, rest = rest[1:].partition(" ")
        value: Any = None
        if rest:
            value = _scalar(rest.strip(), anchors)
        elif i < len(lines) and lines[i][0] > indent:
            value, i = _block(lines, i, lines[i][0], anchors)
        if anchor:
            anchors[anchor] = value
        if key == "<<":
            out.update(value)
        else:
            assert key not in out, f"duplicate key {key}"
            out[key] = value
    assert i == len(lines) or lines[i][0] < indent, f"bad indentation at {lines[i][1]!r}"
    return out, i


def _sequence(
    lines: list[tuple[int, str]], i: int, indent: int, anchors: dict[str, Any]
) -> tuple[list[Any], int]:
    out: list[Any] = []
    while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
        item = lines[i][1][2:].strip()
        if _KEY.match(item):  # "- key: value" opens a mapping two columns in
            lines[i] = (indent + 2, item)
            value, i = _mapping(lines, i, indent + 2, anchors)
            out.append(value)
        else:
            out.append(_scalar(item, anchors))
            i += 1
    return out, i


def _scalar(text: str, anchors: dict[str, Any]) -> Any:
    if text.startswith("*"):
        return copy.deepcopy(anchors[text[1:]])
    if text.startswith('"'):
        return json.loads(text)  # the double-quoted strings here use no YAML-only escapes
    if text.startswith("'"):
        assert text.endswith("'")
        return text[1:-1].replace("''", "'")
    assert not text.startswith(("[", "{", "|", ">", "&", "!")), f"outside the subset: {text}"
    assert " #" not in text, f"a comment after a value: {text}"
    if _INT.match(text):
        return int(text)
    if text in {"true", "false"}:
        return text == "true"
    return text


class Unset(Exception):
    """A required variable (``${NAME:?message}``) is not set: Compose stops with the message."""


def interpolate(value: str, variables: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?message}`` in one value."""

    def one(match: re.Match[str]) -> str:
        name, form, arg = match.group(1), match.group(2), match.group(3)
        if variables.get(name):
            return variables[name]
        if form == ":?":
            raise Unset(f"{name}: {arg}")
        return arg if form == ":-" else ""

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", one, value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    parsed = parse_yaml_subset(COMPOSE.read_text())
    assert isinstance(parsed, dict)
    return parsed


def test_the_subset_parser_reads_compose_yaml_as_pyyaml_does(compose: dict[str, Any]) -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML not installed: the cross-check needs it")
    assert compose == yaml.safe_load(COMPOSE.read_text())


def test_compose_runs_three_relay_nodes_on_postgresql(compose: dict[str, Any]) -> None:
    services = compose["services"]
    relays = {name for name, s in services.items() if "CB_DATABASE_URL" in s.get("environment", {})}
    assert relays == set(NODES)

    postgres = services["postgres"]
    assert postgres["image"] == "postgres:16"
    pg_env = postgres["environment"]
    with pytest.raises(Unset, match="POSTGRES_PASSWORD"):
        interpolate(pg_env["POSTGRES_PASSWORD"], {})
    assert "pg_isready" in postgres["healthcheck"]["test"]
    (data,) = [v.split(":")[0] for v in postgres["volumes"] if "/var/lib/postgresql/data" in v]
    assert data in compose["volumes"]  # a named volume, not a folder of the host

    settings = {s.env_var for s in config.SETTINGS}
    for name in NODES:
        node = services[name]
        env = node["environment"]
        unknown = {k for k in env if k.startswith("CB_")} - settings
        assert not unknown, f"{name} sets variables that are no setting: {unknown}"
        assert node["build"]["dockerfile"] == "deploy/Containerfile"
        assert (DEPLOY / node["build"]["context"] / node["build"]["dockerfile"]).is_file()
        assert node["restart"] == "unless-stopped"
        assert node["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert env["CB_HOST"] == "0.0.0.0" and int(env["CB_PORT"]) == NODE_PORT
        probe = " ".join(node["healthcheck"]["test"])
        assert f"127.0.0.1:{NODE_PORT}{HEALTH}" in probe

        # The password is required and comes from outside the file: no default to fall back on.
        with pytest.raises(Unset, match="POSTGRES_PASSWORD"):
            interpolate(env["CB_DATABASE_URL"], {})
        url = urlsplit(interpolate(env["CB_DATABASE_URL"], {"POSTGRES_PASSWORD": PASSWORD}))
        assert url.scheme == "postgresql" and url.hostname == "postgres"
        assert url.username == pg_env["POSTGRES_USER"] and url.path == f"/{pg_env['POSTGRES_DB']}"
        assert url.password == interpolate(
            pg_env["POSTGRES_PASSWORD"], {"POSTGRES_PASSWORD": PASSWORD}
        )
        assert interpolate(env["CB_PUBLIC_URL"], {"CB_SITE": "relay.test"}) == "https://relay.test"

        # Forwarded headers are believed from the network Caddy shares with the nodes only.
        trusted = interpolate(env["CB_TRUSTED_PROXIES"], {})
        assert config.trusted_networks(trusted)
        front = compose["networks"]["front"]["ipam"]["config"][0]["subnet"]
        assert interpolate(front, {}) == trusted
        assert "front" in node["networks"] and "front" in services["caddy"]["networks"]
        assert "front" not in postgres["networks"]


def test_compose_puts_caddy_in_front_with_the_cluster_caddyfile(compose: dict[str, Any]) -> None:
    caddy = compose["services"]["caddy"]
    assert caddy["image"] == "caddy:2"
    published = {p.split(":")[0] for p in caddy["ports"]}
    assert {"80", "443"} <= published
    mount = next(v for v in caddy["volumes"] if v.endswith(":/etc/caddy/Caddyfile:ro"))
    assert (DEPLOY / mount.split(":")[0]).resolve() == CADDYFILE
    # Caddy's own variables are the Caddyfile's placeholders, not relay settings.
    text = CADDYFILE.read_text()
    for name in caddy["environment"]:
        assert "{$" + name + ":" in text, f"{name} is not a placeholder of {CADDYFILE.name}"
    # Only Caddy publishes ports.
    others = [n for n, s in compose["services"].items() if n != "caddy" and "ports" in s]
    assert not others
