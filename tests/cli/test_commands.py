"""The claude-bridge command as a person runs it: real processes, real output."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from relay.store import Store
from tests.support.bridge import FAKE as FAKE_CLAUDE
from tests.support.cli import output_until_started
from tests.support.relay import RelayServer, free_port, transcript

REPLAYED = "5e1f2a3b-0c4d-4e5f-8a6b-7c8d9e0f1a2b"  # the session id a replay is told to use


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "cli", *args], capture_output=True, text=True, timeout=60
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_token_create_prints_the_token_last_and_it_works(
    tmp_path: Path, relay: RelayServer
) -> None:
    out = cli("token", "create", "--data", str(tmp_path), "--kind", "phone", "--name", "p")
    token = out.stdout.strip().splitlines()[-1]
    assert token.startswith("cbp_")
    assert "revoke" in out.stderr  # tells the person how to undo it
    listed = cli("token", "list", "--data", str(tmp_path)).stdout
    assert "phone" in listed and token not in listed  # secrets are never shown again
    # The token is stored hashed: the database file never holds it.
    assert token.encode() not in (tmp_path / "relay.db").read_bytes()


def test_token_revoke_by_id(tmp_path: Path) -> None:
    cli("token", "create", "--data", str(tmp_path), "--kind", "device", "--name", "mac")
    token_id = cli("token", "list", "--data", str(tmp_path)).stdout.split()[0]
    assert "Revoked" in cli("token", "revoke", "--data", str(tmp_path), token_id).stdout
    again = cli("token", "revoke", "--data", str(tmp_path), token_id, check=False)
    assert again.returncode == 2 and "no active token" in again.stderr


def test_events_prints_one_json_event_per_line() -> None:
    out = cli("events", str(transcript("d_bash_permission"))).stdout.splitlines()
    events = [json.loads(line) for line in out]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "user" and "tool_use" in kinds and "tool_result" in kinds
    bash = next(e for e in events if e["kind"] == "tool_use")
    assert bash["tool"] == "Bash" and bash["summary"] == "touch bash_made.txt && echo hi"


def test_events_on_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    result = cli("events", str(tmp_path / "nope.jsonl"), check=False)
    assert result.returncode == 2 and "cannot read" in result.stderr


def test_pair_prints_a_link_and_the_code_which_trades_for_a_login(
    tmp_path: Path, relay: RelayServer
) -> None:
    # Pair against the running relay's own database, as `claude-bridge pair` on its machine does.
    data = str(relay.config.data_path)
    out = cli("pair", "--data", data, "--public-url", relay.url).stdout.splitlines()
    code = out[-1]
    assert any(f"{relay.url}/pair.html#{code}" in line for line in out)
    response = httpx.post(f"{relay.url}/api/pair", json={"code": code, "name": "my phone"})
    assert response.status_code == 200, response.text
    assert response.json()["kind"] == "phone"
    assert "cb_login" in response.headers["set-cookie"]


def test_replay_pushes_a_transcript_over_the_link(relay: RelayServer) -> None:
    account = relay.account()
    path = transcript("n_permissionrequest_allow_hook")
    out = cli(
        "replay",
        "--relay",
        relay.url,
        "--token",
        account.device_token,
        "--session",
        REPLAYED,
        str(path),
    )
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["lines"] == len(path.read_bytes().splitlines())
    with httpx.Client(
        base_url=relay.url, headers={"Authorization": f"Bearer {account.phone_token}"}
    ) as client:
        page = client.get(f"/api/sessions/{REPLAYED}/events", params={"after": 0}).json()
    assert [e["seq"] for e in page["events"]] == list(range(1, summary["last_seq"] + 1))
    assert any(e.get("marker") == "hook_allowed" for e in page["events"])
    # Twice is the same as once.
    again = json.loads(
        cli(
            "replay",
            "--relay",
            relay.url,
            "--token",
            account.device_token,
            "--session",
            REPLAYED,
            "--quiet",
            str(path),
        ).stdout
    )
    assert again["last_seq"] == summary["last_seq"] and again["duplicates"] == summary["lines"]


def test_replay_with_a_bad_token_says_what_to_do(relay: RelayServer) -> None:
    result = cli(
        "replay", "--relay", relay.url, "--token", "nope", str(transcript("b_idle")), check=False
    )
    assert result.returncode == 2
    assert "cannot link" in result.stderr and "device token" in result.stderr


def test_replay_refuses_a_session_id_that_is_not_a_uuid_before_linking(relay: RelayServer) -> None:
    # The relay takes only UUIDs as session ids: say so at once, not as a traceback mid-replay.
    account = relay.account()
    result = cli(
        "replay", "--relay", relay.url, "--token", account.device_token,
        "--session", "replayed-1", str(transcript("b_idle")), check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "'replayed-1' is not a session id" in result.stderr
    assert "Traceback" not in result.stderr


def test_relay_refuses_a_port_in_use_with_advice(relay: RelayServer, tmp_path: Path) -> None:
    result = cli("relay", "--data", str(tmp_path), "--port", str(relay.port), check=False)
    assert result.returncode == 2
    assert "already running" in result.stderr


def test_store_opened_by_the_cli_and_the_relay_together(tmp_path: Path) -> None:
    """The CLI writes tokens into the database of a relay that may be running at the time."""
    from wire import config as configmod

    cfg = configmod.load({"data_dir": str(tmp_path)}, environ={})
    running = Store(cfg)
    try:
        cli("token", "create", "--data", str(tmp_path), "--kind", "phone", "--name", "x")
        rows = running.list_tokens_sync()
        assert [r["name"] for r in rows] == ["x"]
    finally:
        running.close()


def test_up_runs_the_relay_and_this_machines_agent_and_pairs_a_phone(tmp_path: Path) -> None:
    port, socket_name = free_port(), f"cbup-{secrets.token_hex(4)}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["HOME"] = str(tmp_path / "home")  # the agent reads ~/.claude: never the real one
    agent_dir = tmp_path / "agent"
    base = [sys.executable, "-m", "cli", "up", "--data", str(tmp_path / "relay"),
            "--agent-data", str(agent_dir), "--port", str(port), "--claude", FAKE_CLAUDE,
            "--socket", socket_name]  # fmt: skip

    refused = subprocess.run(
        [*base, "--claude-arg=--model"], capture_output=True, text=True, env=env, timeout=60
    )
    assert refused.returncode == 2, refused
    assert "--model is set by claude-bridge" in refused.stderr
    assert not (tmp_path / "relay").exists()  # stopped before anything was made

    up = subprocess.Popen(
        [*base, "--claude-arg=--chrome"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    try:
        text = output_until_started(up)
        assert f"control page: http://127.0.0.1:{port}/" in text
        assert (
            "local agent:  running claude 2.1.328 in" in text and "claude args:  --chrome" in text
        )
        code = re.search(rf"open http://127\.0\.0\.1:{port}/pair\.html#(\S+)", text)
        assert code is not None, text
        paired = httpx.post(f"http://127.0.0.1:{port}/api/pair", json={"code": code.group(1)})
        assert paired.status_code == 200, paired.text
        phone = {"Authorization": f"Bearer {paired.json()['token']}"}
        macs = httpx.get(f"http://127.0.0.1:{port}/api/devices", headers=phone).json()["devices"]
        assert [m["online"] for m in macs] == [True]  # this machine's agent, linked
        up.send_signal(signal.SIGINT)
        assert up.wait(30) == 0
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if up.stdout is not None:
            up.stdout.close()
        subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True, check=False)
    assert json.loads((agent_dir / "claude-args.json").read_text()) == ["--chrome"]
