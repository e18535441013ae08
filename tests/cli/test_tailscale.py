"""`claude-bridge up --tailscale`: the relay served at this machine's *.ts.net name.

The `tailscale` here is tests/fakes/tailscale, a stand-in that answers the commands with the real
CLI's output and keeps its serve config in a file. It terminates no TLS, so what tailscaled would
send on (Host, X-Forwarded-*) is sent to the relay's loopback port by the test itself.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from cli import publish
from cli import tailscale as ts
from tests.support.bridge import FAKE as FAKE_CLAUDE
from tests.support.cli import output_until_started
from tests.support.paths import FAKES
from tests.support.relay import free_port
from wire import config as configmod

HOST = "mybox.tail1234.ts.net"
URL = f"https://{HOST}"


def fake_state(path: Path, **changes: Any) -> Path:
    state: dict[str, Any] = {
        "daemon": True,
        "BackendState": "Running",
        "AuthURL": "",
        "host": "mybox",
        "tailnet": "tail1234.ts.net",
        "caps": ["https", "funnel"],
        "operator": True,
        "serve": {},
        "calls": [],
    }
    state.update(changes)
    path.write_text(json.dumps(state))
    return path


def fake_cli(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FAKES / "tailscale"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TAILSCALE_FAKE_STATE": str(state)},
        timeout=30,
    )


# -- pure: reading the CLI's output -------------------------------------------------------


def test_status_json_gives_the_ts_net_name_and_what_the_node_may_do(tmp_path: Path) -> None:
    out = fake_cli(fake_state(tmp_path / "s.json"), "status", "--json").stdout
    status = ts.parse_status(out)
    assert (status.backend_state, status.dns_name, status.url) == ("Running", HOST, URL)
    assert status.https and status.funnel
    assert ts.status_problem(status, funnel=True) is None


def test_status_as_an_older_tailscale_prints_it_still_reads() -> None:
    # No CapMap (before 1.62), only the CertDomains list says HTTPS is on.
    text = json.dumps(
        {
            "BackendState": "Running",
            "Self": {"DNSName": "old.tail9.ts.net.", "HostName": "old", "TailscaleIPs": []},
            "MagicDNSSuffix": "tail9.ts.net",
            "CurrentTailnet": {
                "Name": "x",
                "MagicDNSSuffix": "tail9.ts.net",
                "MagicDNSEnabled": True,
            },
            "CertDomains": ["old.tail9.ts.net"],
        }
    )
    status = ts.parse_status(text)
    assert status.https and not status.funnel and status.url == "https://old.tail9.ts.net"
    problem = ts.status_problem(status, funnel=True)
    assert problem is not None and "funnel" in problem.message.lower()


@pytest.mark.parametrize(
    ("changes", "funnel", "message", "hint"),
    [
        ({"BackendState": "Stopped"}, False, "Tailscale is stopped", "tailscale up"),
        ({"BackendState": "NeedsLogin", "AuthURL": "https://login.tailscale.com/a/x1"}, False,
         "logged out", "log in at https://login.tailscale.com/a/x1"),
        ({"BackendState": "NeedsMachineAuth"}, False, "approve", "admin/machines"),
        ({"caps": []}, False, "HTTPS certificates are not enabled", "admin/dns"),
        ({"caps": ["https"]}, True, "Funnel is not allowed", "--tailscale"),
    ],
)  # fmt: skip
def test_each_state_tailscale_reports_is_one_line_with_its_fix(
    tmp_path: Path, changes: dict[str, Any], funnel: bool, message: str, hint: str
) -> None:
    out = fake_cli(fake_state(tmp_path / "s.json", **changes), "status", "--json").stdout
    problem = ts.status_problem(ts.parse_status(out), funnel)
    assert problem is not None
    assert message in problem.message and hint in problem.hint
    assert "\n" not in problem.message + problem.hint


@pytest.mark.parametrize(
    ("stderr", "stdout", "message", "hint"),
    [
        ("failed to connect to local tailscaled; it doesn't appear to be running "
         "(sudo systemctl start tailscaled ?)", "", "not running", "systemctl start tailscaled"),
        ("failed to connect to local Tailscale service; is Tailscale running?", "",
         "not running", "the Tailscale app"),
        ("sending serve config: Access denied: serve config denied\n\nUse 'sudo tailscale serve "
         "--bg'.\nTo not require root, use 'sudo tailscale set --operator=$USER' once.", "",
         "refuses", "--operator=$USER"),
        ("", "\nServe is not enabled on your tailnet.\nTo enable, visit:\n\n         "
         "https://login.tailscale.com/f/serve?node=n1\n", "Serve is not enabled",
         "https://login.tailscale.com/f/serve?node=n1"),
        ('Funnel not available; "funnel" node attribute not set. See '
         "https://tailscale.com/s/no-funnel.", "", "Funnel is not allowed", "access controls"),
        ("flag provided but not defined: -bogus", "", "flag provided but not defined",
         "tailscale status"),
    ],
)  # fmt: skip
def test_cli_errors_become_one_line_and_a_fix(
    stderr: str, stdout: str, message: str, hint: str
) -> None:
    problem = ts.command_problem("tailscale serve", 1, stdout, stderr)
    assert message in problem.message and hint in problem.hint
    assert "\n" not in problem.message


def test_version_line_and_the_oldest_cli_with_the_new_serve_syntax(tmp_path: Path) -> None:
    assert ts.parse_version(fake_cli(fake_state(tmp_path / "s.json"), "version").stdout) == (
        1,
        96,
        4,
    )
    assert ts.parse_version("1.97.12-t1234abcd\n") == (1, 97, 12)
    assert ts.parse_version("") == ()
    assert (1, 50, 1) < ts.MIN_VERSION <= (1, 52)


def test_serve_config_conflicts_leave_the_persons_own_serving_alone() -> None:
    target = "http://127.0.0.1:8765"
    theirs = {"Web": {f"{HOST}:443": {"Handlers": {"/": {"Proxy": "http://127.0.0.1:3000"}}}}}
    problem = ts.serve_conflict(theirs, HOST, target, funnel=False)
    assert problem is not None and "http://127.0.0.1:3000" in problem.message
    # Ours from an earlier `up` that was killed: taken over again.
    assert ts.serve_conflict(theirs, HOST, target, False, ours="http://127.0.0.1:3000") is None
    other_path = {"Web": {f"{HOST}:443": {"Handlers": {"/grafana/": {"Proxy": "http://x:3000"}}}}}
    assert ts.serve_conflict(other_path, HOST, target, funnel=False) is None
    public = ts.serve_conflict(other_path, HOST, target, funnel=True)
    assert public is not None and "/grafana/" in public.message  # Funnel is per port
    funnelled = {**other_path, "AllowFunnel": {f"{HOST}:443": True}}
    assert ts.serve_conflict(funnelled, HOST, target, funnel=False) is not None
    assert ts.serve_conflict({}, HOST, target, funnel=True) is None
    assert ts.served_at_root({}, HOST) == ""


# -- `claude-bridge up --tailscale` as a person runs it ------------------------------------


class Up:
    def __init__(self, tmp_path: Path, state: Path, path: str | None = None) -> None:
        self.port = free_port()
        self.socket = f"cbts-{secrets.token_hex(4)}"
        self.data = tmp_path / "relay"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
        self.env.update(
            HOME=str(tmp_path / "home"),
            TAILSCALE_FAKE_STATE=str(state),
            PATH=path if path is not None else f"{FAKES}{os.pathsep}{os.environ['PATH']}",
        )
        self.base = [sys.executable, "-m", "cli", "up", "--data", str(self.data),
                     "--agent-data", str(tmp_path / "agent"), "--port", str(self.port),
                     "--claude", FAKE_CLAUDE, "--socket", self.socket]  # fmt: skip

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.base, *args], capture_output=True, text=True, env=self.env, timeout=60
        )

    def start(self, *args: str) -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen(
            [*self.base, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=self.env,
        )  # fmt: skip
        return proc, output_until_started(proc)

    def stop(self, proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> str:
        proc.send_signal(sig)
        try:
            rest, _ = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)
        return rest


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return fake_state(tmp_path / "tailscale.json")


def served(state: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(state.read_text()).get("serve") or {}
    return config


def calls(state: Path) -> list[list[str]]:
    return [list(c) for c in json.loads(state.read_text())["calls"]]


@pytest.mark.slow  # three runs of `up`, each starting the relay and the agent
def test_up_tailscale_serves_the_relay_at_the_ts_net_name_and_undoes_it(
    tmp_path: Path, state: Path
) -> None:
    # The person already serves something else on this machine: it must stay.
    theirs = {"Proxy": "http://127.0.0.1:3000"}
    fake_state(state, serve={"TCP": {"443": {"HTTPS": True}},
                             "Web": {f"{HOST}:443": {"Handlers": {"/grafana/": theirs}}}})  # fmt: skip
    up = Up(tmp_path, state)
    proc, out = up.start("--tailscale")
    try:
        code = re.search(rf"open {re.escape(URL)}/pair\.html#(\S+)", out)
        assert code is not None, out
        assert f"Reached at {URL} from the devices in your tailnet" in out
        assert "this computer only" not in out
        handlers = served(state)["Web"][f"{HOST}:443"]["Handlers"]
        target = f"http://127.0.0.1:{up.port}"
        assert handlers == {"/": {"Proxy": target}, "/grafana/": theirs}
        assert "AllowFunnel" not in served(state)
        assert ["serve", "--bg", "--yes", "--https=443", "--set-path=/", target] in calls(state)

        # What tailscaled sends on for a phone in the tailnet, to where serve points.
        tailscaled = {"Host": HOST, "X-Forwarded-Host": HOST, "X-Forwarded-Proto": "https",
                      "X-Forwarded-For": "100.64.0.7", "Origin": URL}  # fmt: skip
        paired = httpx.post(f"{target}/api/pair", json={"code": code.group(1)}, headers=tailscaled)
        assert paired.status_code == 200, paired.text
        cookie = paired.headers["set-cookie"]
        assert "secure" in cookie.lower(), cookie  # https as tailscaled saw it
        login = cookie.split(";", 1)[0]
        foreign = httpx.post(
            f"{target}/api/logout",
            headers={**tailscaled, "Origin": "https://evil.example", "Cookie": login},
        )
        assert foreign.status_code == 403, foreign.text
        assert foreign.json()["error"]["code"] == "bad_origin"
        own = httpx.post(f"{target}/api/logout", headers={**tailscaled, "Cookie": login})
        assert own.status_code == 200, own.text  # the page's own origin, through the proxy

        remembered = up.data / publish.CHOICE_FILE
        assert stat.S_IMODE(remembered.stat().st_mode) == 0o600
        assert json.loads(remembered.read_text())["way"] == "tailscale"
    finally:
        rest = up.stop(proc, signal.SIGTERM)
    assert proc.returncode == 0, rest
    assert f"{URL} is no longer served by Tailscale" in rest
    assert served(state)["Web"] == {f"{HOST}:443": {"Handlers": {"/grafana/": theirs}}}
    assert ["serve", "--https=443", "--set-path=/", "off"] in calls(state)

    # Remembered: the next `up` goes through Tailscale again without the flag.
    fake_state(state, BackendState="Stopped")
    again = up.run()
    assert again.returncode == 2, again
    assert "claude-bridge: Tailscale is stopped on this machine" in again.stderr
    # --local forgets it: loopback, and `up` says that reaches this computer only.
    asked = len(calls(state))
    proc, out = up.start("--local")
    try:
        assert f"open http://127.0.0.1:{up.port}/pair.html#" in out
        assert publish.LOCAL_ONLY in out
        assert not (up.data / publish.CHOICE_FILE).exists()
    finally:
        up.stop(proc, signal.SIGINT)
    assert len(calls(state)) == asked  # --local asks Tailscale nothing


@pytest.mark.slow
def test_up_funnel_makes_it_public_and_ctrl_c_turns_it_off(tmp_path: Path, state: Path) -> None:
    up = Up(tmp_path, state)
    proc, out = up.start("--funnel")
    try:
        assert f"open {URL}/pair.html#" in out and "by anyone on the internet" in out
        assert served(state)["AllowFunnel"] == {f"{HOST}:443": True}
    finally:
        rest = up.stop(proc, signal.SIGINT)
    assert proc.returncode == 0, rest
    assert served(state) == {}
    assert ["funnel", "--https=443", "--set-path=/", "off"] in calls(state)


@pytest.mark.parametrize(
    ("changes", "flag", "message", "hint"),
    [
        ({"daemon": False}, "--tailscale", "Tailscale is not running on this machine",
         "systemctl start tailscaled"),
        ({"BackendState": "NeedsLogin", "AuthURL": "https://login.tailscale.com/a/abc"},
         "--tailscale", "Tailscale is logged out", "log in at https://login.tailscale.com/a/abc"),
        ({"caps": []}, "--tailscale", "HTTPS certificates are not enabled", "admin/dns"),
        ({"caps": ["https"]}, "--funnel", "Funnel is not allowed", "--tailscale"),
        ({"version": "1.50.1"}, "--tailscale", "Tailscale 1.50.1 is too old", "update"),
        ({"operator": False}, "--tailscale", "refuses to change its serve settings",
         "sudo tailscale set --operator=$USER"),
        ({"serve": {"Web": {f"{HOST}:443": {"Handlers": {"/": {"Proxy": "http://127.0.0.1:3000"}}}}}},
         "--tailscale", "already served by Tailscale (to http://127.0.0.1:3000)", "--set-path=/ off"),
    ],
)  # fmt: skip
def test_up_tailscale_says_what_is_wrong_in_one_line_and_how_to_fix_it(
    tmp_path: Path, state: Path, changes: dict[str, Any], flag: str, message: str, hint: str
) -> None:
    before = served(fake_state(state, **changes))
    result = Up(tmp_path, state).run(flag)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("claude-bridge: "), result.stderr
    assert message in lines[0] and hint in lines[1], result.stderr
    assert served(state) == before  # nothing left changed
    assert "pair a phone" not in result.stdout  # no link that would not open


def test_up_tailscale_without_tailscale_installed(tmp_path: Path, state: Path) -> None:
    bare = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p)
    result = Up(tmp_path, state, path=bare).run("--tailscale")
    assert result.returncode == 2
    assert "Tailscale is not installed here" in result.stderr
    assert "https://tailscale.com/download" in result.stderr


def test_flags_that_cannot_go_together(tmp_path: Path, state: Path) -> None:
    result = Up(tmp_path, state).run("--tailscale", "--public-url", "https://relay.example")
    assert result.returncode == 2
    assert "--tailscale and --public-url cannot be used together" in result.stderr
    assert calls(state) == []


def test_a_remembered_choice_file_is_private_and_read_back(tmp_path: Path) -> None:
    folder = tmp_path / "relay"
    publish.save_choice(folder, publish.Choice("url", "https://relay.example"))
    assert stat.S_IMODE((folder / publish.CHOICE_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert publish.load_choice(folder) == publish.Choice("url", "https://relay.example")
    (folder / publish.CHOICE_FILE).write_text("{}")
    with pytest.raises(publish.PublishError, match="no known choice"):
        publish.load_choice(folder)


def _flags(**given: Any) -> argparse.Namespace:
    values = {"tailscale": False, "funnel": False, "local": False, "public_url": None}
    return argparse.Namespace(**{**values, **given})


def test_a_serve_left_by_a_killed_up_stays_known_as_ours(tmp_path: Path) -> None:
    folder = tmp_path / "relay"
    publish.save_choice(folder, publish.Choice("tailscale", served="http://127.0.0.1:8765"))
    again = publish.choose(_flags(tailscale=True), folder)
    assert again == publish.Choice("tailscale", served="http://127.0.0.1:8765")
    assert publish.choose(_flags(local=True), folder) == publish.Choice("local")
    assert publish.choose(_flags(), folder) == publish.Choice("local")  # forgotten


def test_the_relay_behind_a_proxy_on_this_machine_believes_loopback(tmp_path: Path) -> None:
    cfg = configmod.load({"data_dir": str(tmp_path)}, environ={})
    behind = publish.prepare(publish.Choice("url", "https://relay.example"), cfg)
    assert behind.config.base_url == "https://relay.example" and behind.note == ""
    assert behind.config.str("trusted_proxies") == publish.LOOPBACK_PROXIES
    lan = publish.prepare(publish.Choice("url", "http://192.168.1.20:8765"), cfg)
    assert lan.note == publish.PLAIN_HTTP and lan.config.str("trusted_proxies") == ""
    local = publish.prepare(publish.Choice("local"), cfg)
    assert local.note == publish.LOCAL_ONLY and local.config.str("trusted_proxies") == ""
    with pytest.raises(publish.PublishError, match="is not an http"):
        publish.choose(_flags(public_url="relay.example"), tmp_path)


@pytest.mark.slow
def test_a_serve_left_by_a_killed_up_is_taken_over_by_the_next(tmp_path: Path, state: Path) -> None:
    first = Up(tmp_path, state)
    proc, _ = first.start("--tailscale")
    first.stop(proc, signal.SIGKILL)  # no chance to undo anything
    left = served(state)["Web"][f"{HOST}:443"]["Handlers"]["/"]
    assert left == {"Proxy": f"http://127.0.0.1:{first.port}"}

    second = Up(tmp_path, state)  # another port this time
    proc, out = second.start("--tailscale")
    try:
        assert f"open {URL}/pair.html#" in out
        handler = served(state)["Web"][f"{HOST}:443"]["Handlers"]["/"]
        assert handler == {"Proxy": f"http://127.0.0.1:{second.port}"}
    finally:
        second.stop(proc, signal.SIGINT)
    assert proc.returncode == 0
    assert served(state) == {}
