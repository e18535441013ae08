"""Login services: `claude-bridge up install|uninstall` and `agent install`, and doctor's check.

The unit and plist texts are checked as they are written. The install runs against the stand-in
`systemctl` in tests/fakes (what it answers is said there: daemon-reload, enable --now,
disable --now, is-enabled); the installed unit's ExecStart is then run here as systemd would run
it (its own PATH, a throw-away HOME, tmux on a throw-away TMUX_TMPDIR, the fake claude)."""

from __future__ import annotations

import json
import os
import plistlib
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from agent import service
from cli import checkup
from cli.checks import ServiceProbe, decide_service
from cli.checkup import probe_service
from cli.service import UP_LABEL, UP_UNIT, up_command, up_service
from tests.support.bridge import FAKE, REPO
from tests.support.cli import output_until_started
from tests.support.relay import free_port

FAKES = REPO / "tests" / "fakes"
VENV_BIN = Path(sys.executable).parent  # holds the installed `claude-bridge`


def test_the_up_unit_runs_up_without_a_pairing_code_with_its_own_path() -> None:
    command = up_command("/opt/cb/bin/claude-bridge", Path("/h/relay dir"), Path("/h/agent"),
                         9999, "claude-bridge", None, "/opt/claude/bin/claude")  # fmt: skip
    assert command == ["/opt/cb/bin/claude-bridge", "up", "--no-pair", "--data", "/h/relay dir",
                       "--agent-data", "/h/agent", "--port", "9999", "--socket", "claude-bridge",
                       "--claude", "/opt/claude/bin/claude"]  # fmt: skip
    path = service.service_path(
        ["/opt/cb/bin/claude-bridge", "/opt/claude/bin/claude", "/opt/homebrew/bin/tmux"],
        "/usr/bin:/opt/homebrew/bin:/bin",
    )
    # The programs' folders first, then the current PATH, each folder once.
    assert path == "/opt/cb/bin:/opt/claude/bin:/opt/homebrew/bin:/usr/bin:/bin"
    settings = (("CB_PAIR_CODE_TTL", "900"), ("CB_MODEL_PRICES", "a b 50%"))
    text = service.unit_text(up_service(command, path, settings))
    lines = text.splitlines()
    assert "[Service]" in lines and "[Install]" in lines and "WantedBy=default.target" in lines
    exec_start = next(line for line in lines if line.startswith("ExecStart="))
    assert shlex.split(exec_start.removeprefix("ExecStart=")) == command  # the space is quoted
    assert f"Environment=PATH={path}" in lines
    # The settings set now, quoted for systemd (a space) and with % escaped (its specifiers).
    assert "Environment=CB_PAIR_CODE_TTL=900" in lines
    assert 'Environment="CB_MODEL_PRICES=a b 50%%"' in lines
    assert "Restart=on-failure" in lines and f"RestartSec={service.RESTART_SECONDS}" in lines


def test_the_plists_are_valid_and_keep_the_service_alive() -> None:
    command = ["/opt/cb/bin/claude-bridge", "up", "--no-pair", "--data", "/h/a&b <relay>"]
    for svc in (
        up_service(command, "/opt/cb/bin:/usr/bin", (("CB_PAIR_CODE_TTL", "900"),)),
        service.Service(
            "com.claude-bridge.agent",
            "claude-bridge-agent.service",
            "agent",
            ("/opt/cb/bin/claude-bridge", "agent"),
            "/usr/bin",
            "agent.log",
        ),
    ):
        data = plistlib.loads(
            service.plist_text(svc, Path("/h/Library/Logs/claude-bridge")).encode()
        )
        assert data["Label"] == svc.label
        assert data["ProgramArguments"] == list(svc.command)  # & and < survive as they are
        assert data["EnvironmentVariables"] == {"PATH": svc.path_env, **dict(svc.environment)}
        assert data["RunAtLoad"] is True and data["KeepAlive"] is True
        assert data["ThrottleInterval"] == service.RESTART_SECONDS
        log = f"/h/Library/Logs/claude-bridge/{svc.log_name}"
        assert data["StandardOutPath"] == log and data["StandardErrorPath"] == log
    assert plistlib.loads(service.plist_text(up_service(command, ""), Path("/l")).encode())[
        "Label"
    ] == (UP_LABEL)


def test_doctor_names_the_service_due_for_each_kind_of_machine() -> None:
    up = decide_service(ServiceProbe("Linux", f"/h/.config/systemd/user/{UP_UNIT}"))
    assert up.status == "warn" and "claude-bridge up is not a login service" in up.detail
    assert up.fix.startswith("claude-bridge up install")
    agent = decide_service(ServiceProbe("Darwin", "/h/x.plist", kind="agent"))
    assert agent.status == "warn" and agent.fix == "claude-bridge agent install"
    disabled = decide_service(ServiceProbe("Linux", f"/h/{UP_UNIT}", True, "disabled"))
    assert disabled.fix == f"systemctl --user enable --now {UP_UNIT}"


def _answers(calls: list[list[str]], code: int = 0) -> object:
    def run(argv: list[str]) -> tuple[int, str]:
        calls.append(argv)
        return code, "enabled\n" if argv[0] == "systemctl" else ""

    return run


def test_doctor_finds_either_service(tmp_path: Path) -> None:
    home = tmp_path / "home"
    calls: list[list[str]] = []
    # Nothing installed: an `up` machine is due `up install`, one linked elsewhere `agent install`.
    here = probe_service("Linux", home, _answers(calls), remote=False)  # type: ignore[arg-type]
    assert here.kind == "up" and here.path.endswith(UP_UNIT) and not here.exists
    away = probe_service("Darwin", home, _answers(calls), remote=True)  # type: ignore[arg-type]
    assert away.kind == "agent" and away.path.endswith("com.claude-bridge.agent.plist")
    assert calls == []  # no manager asked about a file that is not there
    # The agent's unit on a machine that runs `up` counts too (and the other way round).
    agent_unit = service.unit_path(home, "claude-bridge-agent.service")
    agent_unit.parent.mkdir(parents=True)
    agent_unit.write_text("[Service]\n")
    found = probe_service("Linux", home, _answers(calls), remote=False)  # type: ignore[arg-type]
    assert found.kind == "agent" and found.exists and found.state == "enabled"
    assert calls == [["systemctl", "--user", "is-enabled", "claude-bridge-agent.service"]]
    plist = service.plist_path(home, UP_LABEL)
    plist.parent.mkdir(parents=True)
    plist.write_text("")
    loaded = probe_service("Darwin", home, _answers(calls), remote=True)  # type: ignore[arg-type]
    assert loaded.kind == "up" and loaded.state == "loaded"
    assert calls[-1] == ["launchctl", "print", f"gui/{os.getuid()}/{UP_LABEL}"]


def _env(tmp_path: Path, calls: Path) -> dict[str, str]:
    claude_bin = tmp_path / "claude-bin"  # claude where a person has it, not on the service's PATH
    claude_bin.mkdir()
    (claude_bin / "claude").write_text(f'#!/bin/sh\nexec {shlex.quote(FAKE)} "$@"\n')
    (claude_bin / "claude").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env.update(
        HOME=str(tmp_path / "home"),
        TMUX_TMPDIR=str(tmp_path / "tmux"),
        SYSTEMCTL_FAKE_LOG=str(calls),
        PATH=os.pathsep.join([str(FAKES), str(claude_bin), str(VENV_BIN), "/usr/bin", "/bin"]),
    )
    (tmp_path / "tmux").mkdir(mode=0o700)
    return env


def _logged(calls: Path) -> list[list[str]]:
    return [json.loads(line) for line in calls.read_text().splitlines()]


def _unit_fields(unit: Path) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in unit.read_text().splitlines():
        key, sep, value = line.partition("=")
        if key == "Environment":  # one line per variable
            name, _, value = value.partition("=")
            key = f"Environment.{name}"
        if sep:
            fields[key] = value
    return fields


@pytest.mark.skipif(sys.platform != "linux", reason="the systemd user unit is Linux's")
def test_up_install_runs_the_relay_and_agent_at_login_and_uninstall_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (VENV_BIN / "claude-bridge").exists(), "the venv's claude-bridge command"
    calls = tmp_path / "systemctl.log"
    env = _env(tmp_path, calls)
    relay_dir, agent_dir, port = tmp_path / "relay", tmp_path / "agent", free_port()
    socket_name = f"cbsvc-{os.getpid()}"
    running = socket.create_server(("127.0.0.1", port))  # an `up` still running by hand
    env["CB_PAIR_CODE_TTL"] = "900"  # a setting in the shell that installs it
    install = subprocess.run(
        [sys.executable, "-m", "cli", "up", "install", "--data", str(relay_dir), "--agent-data",
         str(agent_dir), "--port", str(port), "--socket", socket_name, "--claude-arg=--chrome",
         "--public-url", "https://relay.example"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )  # fmt: skip
    running.close()
    assert install.returncode == 0, install
    assert f"something listens on port {port} now" in install.stdout  # stop it, says install
    home = tmp_path / "home"
    unit = home / ".config" / "systemd" / "user" / UP_UNIT
    assert f"Installed {unit}; it starts at login" in install.stdout
    assert f"pair a phone with: claude-bridge pair --data {relay_dir}" in install.stdout
    assert _logged(calls) == [["--user", "daemon-reload"], ["--user", "enable", "--now", UP_UNIT]]
    assert (unit.parent / "default.target.wants" / UP_UNIT).resolve() == unit
    assert unit.stat().st_mode & 0o777 == 0o600 and unit.parent.stat().st_mode & 0o777 == 0o700
    # The choices given to `install` are remembered where `up` reads them, not on its line.
    assert json.loads((agent_dir / "claude-args.json").read_text()) == ["--chrome"]
    assert json.loads((relay_dir / "link.json").read_text())["url"] == "https://relay.example"
    fields = _unit_fields(unit)
    command = shlex.split(fields["ExecStart"])
    assert command == [str(VENV_BIN / "claude-bridge"), "up", "--no-pair", "--data",
                       str(relay_dir), "--agent-data", str(agent_dir), "--port", str(port),
                       "--socket", socket_name]  # fmt: skip
    assert "with the settings set now: CB_PAIR_CODE_TTL" in install.stdout
    assert fields["Environment.CB_PAIR_CODE_TTL"] == "900"
    path = fields["Environment.PATH"]
    assert path.split(":")[:2] == [str(VENV_BIN), str(tmp_path / "claude-bin")]  # tmux: /usr/bin
    assert "/usr/bin" in path.split(":")
    # doctor sees it enabled (asking the stand-in's is-enabled).
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.setenv("SYSTEMCTL_FAKE_LOG", str(calls))
    monkeypatch.setenv("HOME", str(home))
    ok = decide_service(probe_service("Linux", home, checkup.run_manager))
    assert ok.status == "ok" and ok.detail == f"{unit} (enabled)"

    # systemd's start: the unit's command with the unit's PATH, no terminal.
    service_env = {"HOME": str(home), "TMUX_TMPDIR": env["TMUX_TMPDIR"], "PATH": path,
                   "CB_PAIR_CODE_TTL": fields["Environment.CB_PAIR_CODE_TTL"]}  # fmt: skip
    started = time.monotonic()
    up = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=service_env)  # fmt: skip
    try:
        text = output_until_started(up)
        print(f"service ready in {time.monotonic() - started:.2f} s")
        assert "control page: https://relay.example/" in text  # the remembered choice
        assert "local agent:  running claude 2.1.328 in" in text
        assert "claude args:  --chrome" in text
        assert "pair.html" not in text and "type the code" not in text  # no code in its log
        assert f"pair a phone: claude-bridge pair --data {relay_dir}" in text
        assert "up install" not in text  # already a login service: no advice to become one
        relay = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{relay}/api/health").status_code == 200
        with closing(sqlite3.connect(relay_dir / "relay.db")) as db:  # none made, not just unshown
            assert db.execute("SELECT count(*) FROM pairing_codes").fetchone() == (0,)
        pair = subprocess.run(
            [sys.executable, "-m", "cli", "pair", "--data", str(relay_dir)],
            capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
        )  # fmt: skip
        assert pair.returncode == 0, pair
        code = pair.stdout.strip().splitlines()[-1]
        paired = httpx.post(f"{relay}/api/pair", json={"code": code})
        assert paired.status_code == 200, paired.text
        phone = {"Authorization": f"Bearer {paired.json()['token']}"}
        macs = httpx.get(f"{relay}/api/devices", headers=phone).json()["devices"]
        assert [m["online"] for m in macs] == [True]  # this machine's agent, linked
        up.send_signal(signal.SIGTERM)  # how systemd stops it
        assert up.wait(30) == 0
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if up.stdout is not None:
            up.stdout.close()
        subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True,
                       env=service_env, check=False)  # fmt: skip
    for made in (relay_dir, agent_dir):
        assert made.stat().st_mode & 0o777 == 0o700

    gone = subprocess.run([sys.executable, "-m", "cli", "up", "uninstall"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=60)  # fmt: skip
    assert gone.returncode == 0 and f"Removed {unit}." in gone.stdout, gone
    assert _logged(calls)[-2:] == [["--user", "disable", "--now", UP_UNIT],
                                   ["--user", "daemon-reload"]]  # fmt: skip
    assert not unit.exists() and not (unit.parent / "default.target.wants" / UP_UNIT).exists()
    missing = decide_service(probe_service("Linux", home, checkup.run_manager))
    assert missing.status == "warn" and missing.fix.startswith("claude-bridge up install")
    again = subprocess.run([sys.executable, "-m", "cli", "up", "uninstall"],
                           capture_output=True, text=True, env=env, cwd=REPO, timeout=60)  # fmt: skip
    assert "was not installed" in again.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="the systemd user unit is Linux's")
def test_agent_install_writes_its_unit_through_the_same_writer(tmp_path: Path) -> None:
    calls = tmp_path / "systemctl.log"
    env = _env(tmp_path, calls)
    agent_dir = tmp_path / "agent"
    refused = subprocess.run(
        [sys.executable, "-m", "cli", "agent", "install", "--data", str(agent_dir)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2 and "--relay URL --pair CODE" in refused.stderr
    agent_dir.mkdir(mode=0o700)
    (agent_dir / "relay-url").write_text("https://relay.example\n")
    (agent_dir / "device-token").write_text("cbd_x\n")
    done = subprocess.run(
        [sys.executable, "-m", "cli", "agent", "install", "--data", str(agent_dir)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done
    unit = tmp_path / "home" / ".config" / "systemd" / "user" / "claude-bridge-agent.service"
    fields = _unit_fields(unit)
    assert shlex.split(fields["ExecStart"]) == [str(VENV_BIN / "claude-bridge"), "agent",
                                                "--data", str(agent_dir)]  # fmt: skip
    assert str(tmp_path / "claude-bin") in fields["Environment.PATH"].split(":")
    assert _logged(calls)[-1] == ["--user", "enable", "--now", "claude-bridge-agent.service"]
    home = tmp_path / "home"
    # doctor on this machine (it links elsewhere): the agent's service, found.
    probe = probe_service("Linux", home, lambda argv: (0, "enabled\n"), remote=True)
    assert probe.kind == "agent" and decide_service(probe).status == "ok"


def test_up_says_once_how_to_start_it_at_login(tmp_path: Path) -> None:
    env = _env(tmp_path, tmp_path / "systemctl.log")
    port, socket_name = free_port(), f"cbhint-{os.getpid()}"
    up = subprocess.Popen(
        [sys.executable, "-m", "cli", "up", "--data", str(tmp_path / "relay"), "--agent-data",
         str(tmp_path / "agent"), "--port", str(port), "--socket", socket_name],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        text = output_until_started(up)
        up.send_signal(signal.SIGINT)
        assert up.wait(30) in {0, 130}
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if up.stdout is not None:
            up.stdout.close()
        subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True,
                       env=env, check=False)  # fmt: skip
    assert "/pair.html#" in text  # run by a person: a pairing link, as before
    assert text.count("claude-bridge up install") == 1, text
