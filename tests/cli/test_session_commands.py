"""The session commands of ``claude-bridge`` beyond open/sessions — search, rename, session-cost,
policy, pin/unpin, retention and subagents — run as processes (``python -m cli …``) against a
real relay, with sessions made by pushing captured transcripts over the real link.

The Mac is a ScriptedMac (wire.client.MacLink on its own loop thread) that records the commands
it gets and answers ``set_policy`` / ``change_policy`` the way the agent does (the policy it now
holds, or ``bad_args``), so a test sees exactly what reached the Mac.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.client import CommandError, SubagentSummary
from cli.display import usd_text
from cli.move import move_line, move_target
from cli.policy import parse_rule
from cli.retention import run_lines
from cli.subagents import pick_subagent
from relay.features.retention import DAY, Retention
from tests.support.api import new_id
from tests.support.cli import cli
from tests.support.relay import TRANSCRIPTS, Account, RelayServer, phone_client, transcript
from tests.support.web import LoopThread, ScriptedMac, assistant_line, user_line
from wire.transcript import read_lines

SUB_MAIN = TRANSCRIPTS / "m_subagent__b9a49076-7ef0-4409-b3eb-ff11c5c634e6.jsonl"
SUB_AGENT_FILE = TRANSCRIPTS / "m_subagent__subagent__agent-a0f2c7af82d1d7fd7.jsonl"
AGENT = "a0f2c7af82d1d7fd7"
SUB_EVENTS = 4  # the subagent's prompt, its Bash call and result, its report


@pytest.fixture
def studio(relay: RelayServer, account: Account, loop: LoopThread) -> Iterator[ScriptedMac]:
    mac = ScriptedMac(relay, account.device_token, loop, name="Studio")
    mac.connect()
    yield mac
    mac.close()


def cli_json(server: RelayServer, acct: Account, *args: str) -> Any:
    return json.loads(cli(server, acct.phone_token, *args, "--json").stdout)


def api(server: RelayServer, acct: Account, method: str, url: str, **kwargs: Any) -> Any:
    with phone_client(server, acct.phone_token) as client:
        response = client.request(method, url, **kwargs)
    assert response.status_code < 400, response.text
    return response.json()


def push(mac: ScriptedMac, session_id: str, prefix: str, cwd: str = "/Users/ada/src/shop") -> int:
    path = transcript(prefix)
    return mac.send_records(session_id, path.stem, list(read_lines(path.read_bytes())), cwd)


def push_turn(mac: ScriptedMac, session_id: str, prompt: str, answer: str, cwd: str) -> int:
    """One whole turn (prompt, answer, turn end): a title and a summary snapshot follow."""
    ts = "2026-11-29T21:33:55.000Z"
    end = {"type": "system", "subtype": "turn_duration", "durationMs": 900, "timestamp": ts}
    lines = [
        user_line(prompt, str(uuid.uuid4())),
        assistant_line(answer, str(uuid.uuid4())),
        {**end, "uuid": str(uuid.uuid4()), "sessionId": "conv"},
    ]
    return mac.send_json_lines(session_id, lines, cwd=cwd)


def push_subagent_run(mac: ScriptedMac, session_id: str) -> int:
    """The captured subagent run: the parent's transcript and the subagent's, as the agent sends
    them (the subagent's conversation is ``agent-<id>``)."""
    last = 0
    for path, conversation in (
        (SUB_MAIN, "b9a49076-7ef0-4409-b3eb-ff11c5c634e6"),
        (SUB_AGENT_FILE, f"agent-{AGENT}"),
    ):
        lines = list(read_lines(path.read_bytes()))
        last = mac.send_records(session_id, conversation, lines, "/work/m")
    return last


def wait_offline(server: RelayServer, acct: Account) -> None:
    deadline = time.monotonic() + 5
    while server.state.live.link(acct.device_id) is not None:
        assert time.monotonic() < deadline, "the Mac's link did not close"
        time.sleep(0.02)


def section(out: str, heading: str) -> str:
    """The lines of one section of `search` output, up to the next blank line."""
    start = out.index(heading)
    end = out.find("\n\n", start)
    return out[start : end if end != -1 else len(out)]


# -- search ------------------------------------------------------------------------------------


def test_search_splits_this_mac_and_folder_from_other_places(
    relay: RelayServer, account: Account, studio: ScriptedMac, loop: LoopThread, tmp_path: Path
) -> None:
    token, _, laptop_id = relay.state.store.create_token(account.account_id, "device", "Laptop")
    laptop = ScriptedMac(relay, token, loop, name="Laptop").connect()
    here_a, here_sub, same_mac_other_folder, other_mac = (new_id() for _ in range(4))
    unrelated = new_id()
    try:
        prompt, answer = "work on the gazelle parser", "The gazelle parser now reads dates."
        push_turn(studio, here_a, prompt, answer, "/work/a")
        push_turn(studio, here_sub, prompt, answer, "/work/a/sub")
        push_turn(studio, same_mac_other_folder, prompt, answer, "/work/ab")
        push_turn(laptop, other_mac, prompt, answer, "/work/a")
        push_turn(studio, unrelated, "tune the heron cache", "Tuned.", str(tmp_path))
    finally:
        laptop.close()

    out = cli(
        relay, account.phone_token, "search", "gazelle", "--mac", "Studio", "--cwd", "/work/a"
    ).stdout
    assert out.startswith("Sessions matching 'gazelle', best first:")
    here = section(out, "This Mac / this folder: Studio · /work/a (2)")
    elsewhere = section(out, "Other places (2)")
    assert here_a in here and here_sub in here and other_mac not in here
    assert same_mac_other_folder in elsewhere and other_mac in elsewhere
    assert unrelated not in out
    # Each result: id and title, then Mac · folder · state · last active, then the summary.
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if other_mac in line)
    assert "Work on the gazelle parser" in lines[row]
    assert lines[row + 1].split(" · ")[:3] == ["      Laptop", "/work/a", "offline"]
    assert "active " in lines[row + 1]
    assert "gazelle parser" in lines[row + 2] and "reads dates" in lines[row + 2]

    body = cli_json(relay, account, "search", "gazelle", "--mac", laptop_id)
    assert [i["id"] for i in body["here"]] == [other_mac]
    assert {i["id"] for i in body["elsewhere"]} == {here_a, here_sub, same_mac_other_folder}

    # Without --mac/--cwd/--here: one list, no sections (the current folder is not assumed).
    plain = cli(relay, account.phone_token, "search", "gazelle", cwd=str(tmp_path)).stdout
    assert "This Mac" not in plain and "Other places" not in plain
    assert all(i in plain for i in (here_a, here_sub, same_mac_other_folder, other_mac))
    # --here is the current folder…
    local = cli(relay, account.phone_token, "search", "--here", cwd=str(tmp_path)).stdout
    assert section(local, f"This Mac / this folder: {tmp_path} (1)").count(unrelated) == 1
    assert "Sessions, most recently active first:" in local  # no query: browse
    assert here_a in section(local, "Other places")
    # … and this Mac too when its agent is linked to this account (it wrote its device id).
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "device-id").write_text(account.device_id + "\n")
    on_studio = cli(
        relay, account.phone_token, "search", "--here", cwd=str(tmp_path), agent_dir=str(agent_dir)
    ).stdout
    assert section(on_studio, f"This Mac / this folder: Studio · {tmp_path} (1)").count(unrelated)
    (agent_dir / "device-id").write_text("mac_of_another_account\n")
    unknown_mac = cli(
        relay, account.phone_token, "search", "--here", cwd=str(tmp_path), agent_dir=str(agent_dir)
    ).stdout
    assert f"This Mac / this folder: {tmp_path} (1)" in unknown_mac  # the folder alone

    # Filters go to the relay as they are.
    api(relay, account, "PATCH", f"/api/sessions/{here_a}", json={"group": "infra"})
    grouped = cli_json(relay, account, "search", "gazelle", "--group", "infra")
    assert [i["id"] for i in grouped["elsewhere"]] == [here_a]
    ended = cli_json(relay, account, "search", "gazelle", "--state", "idle", "--state", "ended")
    assert len(ended["elsewhere"]) == 4
    assert cli_json(relay, account, "search", "gazelle", "--state", "busy")["elsewhere"] == []
    tomorrow = time.strftime("%Y-%m-%d", time.localtime(time.time() + DAY))
    none = cli(relay, account.phone_token, "search", "gazelle", "--since", tomorrow).stdout
    assert none.strip() == "No session matches 'gazelle' with these filters."
    limited = cli(relay, account.phone_token, "search", "gazelle", "--limit", "1").stdout
    assert "… more" in limited and "--limit" in limited

    bad = cli(relay, account.phone_token, "search", "x", "--state", "sleeping", code=2).stderr
    assert "unknown state 'sleeping'" in bad and "bad_state" in bad
    date = cli(relay, account.phone_token, "search", "x", "--since", "last week", code=2).stderr
    assert "is not a date" in date
    nomac = cli(relay, account.phone_token, "search", "x", "--mac", "Nope", code=2).stderr
    assert "no Mac 'Nope'" in nomac and "Studio" in nomac


# -- rename ------------------------------------------------------------------------------------


def test_rename_by_id_or_offset_and_give_the_automatic_title_back(
    relay: RelayServer, account: Account, studio: ScriptedMac
) -> None:
    older, newer = new_id(), new_id()
    push(studio, older, "d_bash_permission")
    time.sleep(0.01)
    push(studio, newer, "b_idle")

    out = cli(relay, account.phone_token, "rename", "-2", "Fix", "the", "build").stdout
    assert out.strip() == f'Renamed session {older}: "Fix the build"'
    assert api(relay, account, "GET", f"/api/sessions/{older}")["title"] == "Fix the build"
    assert "Fix the build" in cli(relay, account.phone_token, "sessions").stdout
    # The id never changes; a search finds the new title.
    found = cli_json(relay, account, "search", "build")
    assert [i["id"] for i in found["elsewhere"]] == [older]

    renamed = cli_json(relay, account, "rename", newer, "Say hello")
    assert (renamed["id"], renamed["title"]) == (newer, "Say hello")

    back = cli(relay, account.phone_token, "rename", older, "--auto").stdout
    assert back.strip() == f'Session {older} shows its automatic title again: "RUN_BASH one"'
    assert api(relay, account, "GET", f"/api/sessions/{older}")["title"] == "RUN_BASH one"
    greeting = cli(relay, account.phone_token, "rename", "-1", "--auto").stdout
    assert "automatic title again: none yet" in greeting

    missing = cli(relay, account.phone_token, "rename", older, code=2).stderr
    assert "rename needs a TITLE" in missing and "--auto" in missing
    both = cli(relay, account.phone_token, "rename", older, "x", "--auto", code=2).stderr
    assert "not both" in both
    unknown = cli(relay, account.phone_token, "rename", "nope-123", "x", code=2).stderr
    assert "no session nope-123" in unknown and "claude-bridge sessions" in unknown
    offset = cli(relay, account.phone_token, "rename", "-3", "x", code=2).stderr
    assert "no session -3: there are only 2 sessions" in offset
    assert studio.commands == []  # titles never need the Mac


# -- session-cost ------------------------------------------------------------------------------


def test_session_cost_prints_the_relays_figures(
    relay: RelayServer, account: Account, studio: ScriptedMac
) -> None:
    resumed, delegated = new_id(), new_id()
    push(studio, resumed, "k_resume")
    push_subagent_run(studio, delegated)

    expected = api(relay, account, "GET", f"/api/sessions/{resumed}/cost")
    assert cli_json(relay, account, "session-cost", resumed) == expected
    assert expected["source"] == "cost-state" and expected["usd"] == pytest.approx(0.01712)
    out = cli(relay, account.phone_token, "session-cost", resumed).stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"Cost of session {resumed}")
    assert lines[1] == "  USD: $0.0171  (Claude Code's own figure, from its cost-state line)"
    assert f"{expected['input_tokens']:>12,} tokens" in lines[2]
    assert lines[2].startswith("  input:")
    assert lines[3].startswith("  output:") and f"{expected['output_tokens']:,}" in lines[3]
    assert "By model:" in out and "By subagent:" not in out
    for model in expected["by_model"]:
        assert model in out

    sub = api(relay, account, "GET", f"/api/sessions/{delegated}/cost")
    assert list(sub["by_agent"]) == [AGENT]
    text = cli(relay, account.phone_token, "session-cost", "-1").stdout
    assert text.startswith(f"Cost of session {delegated}")
    assert "(estimated from the price catalogue)" in text
    by_agent = text[text.index("By subagent:") :].splitlines()
    assert by_agent[1].split()[:2] == ["NAME", "INPUT"]
    assert by_agent[2].startswith(f"  {AGENT} general-purpose")
    assert by_agent[2].rstrip().endswith(usd_text(sub["by_agent"][AGENT]["usd"]))

    unknown = cli(relay, account.phone_token, "session-cost", "nope-1", code=2).stderr
    assert "no session nope-1" in unknown


# -- subagents ---------------------------------------------------------------------------------


def test_subagents_lists_summary_lines_and_pages_one_history(
    make_relay: Callable[..., RelayServer], loop: LoopThread
) -> None:
    server = make_relay(catchup_page=2)  # the subagent's 4 events take two pages
    acct = server.account()
    mac = ScriptedMac(server, acct.device_token, loop).connect()
    session_id, plain = new_id(), new_id()
    try:
        push(mac, plain, "b_idle")
        push_subagent_run(mac, session_id)
        listed = api(server, acct, "GET", f"/api/sessions/{session_id}/subagents")["subagents"]
        assert len(listed) == 1

        out = cli(server, acct.phone_token, "subagents", session_id).stdout
        lines = out.splitlines()
        assert lines[0].startswith(f"Subagents of session {session_id}") and "(1):" in lines[0]
        assert lines[1] == f"  1. {listed[0]['line']}"
        assert f"id {AGENT}" in lines[2] and f"{SUB_EVENTS} events" in lines[2]
        assert f"at #{listed[0]['call_seq']}" in lines[2]
        assert lines[-1] == f"Full history: claude-bridge subagents {session_id} --agent a0f2c7af"
        body = cli_json(server, acct, "subagents", session_id)
        assert body == {"session_id": session_id, "subagents": listed}

        history = cli(server, acct.phone_token, "subagents", "-1", "--agent", "a0f2c7af").stdout
        hist_lines = history.splitlines()
        assert hist_lines[0].startswith(f"Subagent {AGENT} of session {session_id}")
        assert hist_lines[1] == f"  {listed[0]['line']}"
        assert "you: SUBTASK_PROMPT" in history and "[subagent" not in history
        assert f"{SUB_EVENTS} events." in hist_lines[-1]
        full = cli_json(server, acct, "subagents", session_id, "--agent", AGENT)
        seqs = [e["seq"] for e in full["events"]]
        assert len(seqs) == SUB_EVENTS and seqs == sorted(seqs)
        assert seqs[0] == listed[0]["first_seq"] and seqs[-1] == listed[0]["last_seq"]
        assert all(e["agent_id"] == AGENT for e in full["events"])

        none = cli(server, acct.phone_token, "subagents", plain).stdout
        assert none.strip() == f"No subagents in session {plain}."
        wrong = cli(
            server, acct.phone_token, "subagents", session_id, "--agent", "zzz", code=2
        ).stderr
        assert "no subagent 'zzz'" in wrong and AGENT in wrong
    finally:
        mac.close()


# -- policy ------------------------------------------------------------------------------------


def test_policy_shows_and_changes_the_rules_on_the_mac(
    relay: RelayServer, account: Account, studio: ScriptedMac
) -> None:
    session_id = new_id()
    push(studio, session_id, "b_idle")
    path = f"/api/sessions/{session_id}/policy"

    shown = cli(relay, account.phone_token, "policy", session_id).stdout
    assert shown.startswith(f"Permission policy of session {session_id}")
    assert "never reported by the Mac" in shown and "allow all: no" in shown
    assert "  read     ask (no rule)" in shown and "Read" in shown
    assert studio.commands == []  # showing needs no Mac

    changed = cli(
        relay,
        account.phone_token,
        "policy",
        session_id,
        "--category",
        "read=allow",
        "--tool",
        "Bash=deny",
    ).stdout
    assert studio.command_names() == ["change_policy"]
    want = {"allow_all": False, "categories": {"read": "allow"}, "tools": {"Bash": "deny"}}
    assert studio.commands[0].args == {
        "changes": {"categories": {"read": "allow"}, "tools": {"Bash": "deny"}}
    }
    assert changed.startswith("Changed on Studio.")
    assert "held and applied by Studio" in changed
    assert "  read     allow" in changed and "tools:   Bash deny" in changed
    assert api(relay, account, "GET", path)["policy"] == want

    # Changes apply on top of what the session has; unset drops a rule.
    # "allow all" with no --for lasts the relay's default (allow_all_default_minutes)
    body = cli_json(relay, account, "policy", "-1", "--allow-all", "--tool", "Bash=unset")
    merged = {"allow_all": True, "categories": {"read": "allow"}, "tools": {}}
    assert body["ok"] is True and body["policy"].pop("allow_all_until") > 0
    assert body["policy"] == merged
    asked = {"allow_all": True, "allow_all_for": 3600.0, "tools": {"Bash": None}}
    assert studio.commands[-1].args == {"changes": asked}
    allowed = cli(relay, account.phone_token, "policy", session_id).stdout
    assert (
        "allow all: yes, until" in allowed and "  edit     allow (allow all) (no rule)" in allowed
    )
    lasting = cli_json(relay, account, "policy", session_id, "--allow-all", "--for", "session")
    assert lasting["policy"]["allow_all_until"] is None
    assert studio.commands[-1].args["changes"]["allow_all_for"] == "session"
    assert "until the session ends" in cli(relay, account.phone_token, "policy", session_id).stdout
    reset = cli_json(relay, account, "policy", session_id, "--reset", "--tool", "WebFetch=ask")
    assert reset["policy"] == {"allow_all": False, "categories": {}, "tools": {"WebFetch": "ask"}}
    off = cli_json(relay, account, "policy", session_id, "--no-allow-all", "--reset")
    assert off["policy"] == {"allow_all": False, "categories": {}, "tools": {}}

    # Mistakes are caught before anything is sent.
    sent = len(studio.commands)
    rule = cli(relay, account.phone_token, "policy", session_id, "--tool", "Bash=maybe", code=2)
    assert "NAME=RULE" in rule.stderr and "allow, ask, deny, unset" in rule.stderr
    category = cli(
        relay, account.phone_token, "policy", session_id, "--category", "files=allow", code=2
    ).stderr
    assert "no category 'files'" in category and "read, edit, execute, web, mcp" in category
    assert len(studio.commands) == sent
    # The Mac refusing is the relay's message.
    studio.fail["change_policy"] = ("bad_args", "policy: not today")
    refused = cli(relay, account.phone_token, "policy", session_id, "--allow-all", code=2).stderr
    assert "policy: not today (bad_args)" in refused
    del studio.fail["change_policy"]

    # A rule the Mac gained meanwhile (a card's "always allow") is kept by a change from here.
    studio.policies[session_id] = studio.policies[session_id].always_allow("WebFetch")
    kept = cli_json(relay, account, "policy", session_id, "--tool", "Grep=deny")
    assert kept["policy"]["categories"] == {"web": "allow"}
    assert kept["policy"]["tools"] == {"Grep": "deny"}
    cli_json(relay, account, "policy", session_id, "--reset")

    unknown = cli(relay, account.phone_token, "policy", "nope-2", code=2).stderr
    assert "no session nope-2" in unknown

    # The Mac offline: the relay's copy still shows; a change is refused and nothing changes.
    cli_json(relay, account, "policy", session_id, "--category", "edit=deny")
    studio.close()
    wait_offline(relay, account)
    away = cli(relay, account.phone_token, "policy", session_id).stdout
    assert "Studio is offline, and changes need it online" in away
    assert "  edit     deny" in away
    offline = cli(relay, account.phone_token, "policy", session_id, "--allow-all", code=2).stderr
    assert "device_offline" in offline and "claude-bridge agent" in offline
    assert api(relay, account, "GET", path)["policy"]["allow_all"] is False


# -- pin, unpin, retention ---------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.start = time.time()
        self.now = self.start

    def __call__(self) -> float:
        return self.now

    def days(self, days: float) -> None:
        self.now = self.start + days * DAY


def test_pin_unpin_and_retention_runs(
    make_relay: Callable[..., RelayServer], loop: LoopThread
) -> None:
    server = make_relay(retention_retry_interval=0.1)
    acct = server.account()
    retention: Retention = server.app.state.retention
    clock = Clock()
    retention.clock = clock
    mac = ScriptedMac(server, acct.device_token, loop).connect()
    kept, old = new_id(), new_id()
    try:
        push(mac, kept, "b_idle")
        push(mac, old, "d_bash_permission")

        view = cli(server, acct.phone_token, "retention").stdout.splitlines()
        assert view[0].startswith(
            "Retention: archive after 30 days idle, delete 180 days after archiving; "
            "runs every 1 h (next "
        )
        # The run at start-up came before this account had sessions.
        assert view[1:] == [
            "Last run: none yet for this account.",
            "Archived: none.",
            "Pinned: none.",
        ]

        pinned = cli(server, acct.phone_token, "pin", kept).stdout
        assert pinned.strip() == (
            f"Pinned session {kept}: kept, never archived or deleted (stage: active)."
        )
        assert api(server, acct, "GET", f"/api/sessions/{kept}")["pinned"] is True

        clock.days(31)
        ran = cli(server, acct.phone_token, "retention", "--run").stdout.splitlines()
        assert ran[0] == "Ran retention now: archived 1, made active again 0, deleted 0."
        assert ran[1] == f'  archived   {old} "RUN_BASH one" (idle 31.0 days)'
        assert ran[-1] == "Kept 1 pinned and 0 working. Now 1 active, 1 archived, 1 pinned."

        overview = cli(server, acct.phone_token, "retention").stdout
        assert "archived 1, made active again 0, deleted 0" in overview
        assert "Archived (1):" in overview and f"  {old}  archived " in overview
        assert ", deleted " in overview and f"Pinned (1): {kept}" in overview
        body = cli_json(server, acct, "retention")
        assert [a["session_id"] for a in body["archived"]] == [old] and body["pinned"] == [kept]

        # Archived: still searchable, read-only (a change says how to make it active).
        assert [i["id"] for i in cli_json(server, acct, "search", "--archived")["elsewhere"]] == [
            old
        ]
        assert [i["id"] for i in cli_json(server, acct, "search", "--active")["elsewhere"]] == [
            kept
        ]
        archived = cli(server, acct.phone_token, "policy", old, "--allow-all", code=2).stderr
        assert "session_archived" in archived and "claude-bridge pin" in archived
        assert "[archived]" in cli(server, acct.phone_token, "search", "RUN_BASH").stdout

        unpinned = cli(server, acct.phone_token, "unpin", kept).stdout
        assert unpinned.startswith(f"Unpinned session {kept}: it ages again; archived ")
        assert unpinned.rstrip().endswith("if left idle.")
        still = cli(server, acct.phone_token, "unpin", old).stdout
        assert "it is archived, and deleted " in still
        back = cli_json(server, acct, "pin", old)
        assert (back["stage"], back["pinned"]) == ("active", True)

        clock.days(62)
        report = cli_json(server, acct, "retention", "--run")["report"]
        assert [a["session_id"] for a in report["archived"]] == [kept]
        assert "archived 1" in report["summary"]

        # 180 days after archiving: deleted on the relay and, over the link, on the Mac.
        clock.days(62 + 181)
        gone = cli(server, acct.phone_token, "retention", "--run").stdout.splitlines()
        assert gone[0] == "Ran retention now: archived 0, made active again 0, deleted 1."
        assert gone[1] == f"  deleted    {kept} (also on its Mac)"
        assert [c.session_id for c in mac.commands if c.name == "delete_history"] == [kept]
        missing = cli(server, acct.phone_token, "pin", kept, code=2).stderr
        assert f"no session {kept}" in missing
    finally:
        mac.close()

    empty = server.account()
    nothing = cli(server, empty.phone_token, "retention", "--run").stdout
    assert nothing.startswith("Ran retention now")


# -- logins ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("search", "x"),
        ("rename", "s-1", "x"),
        ("session-cost", "s-1"),
        ("policy", "s-1"),
        ("pin", "s-1"),
        ("unpin", "s-1"),
        ("retention",),
        ("retention", "--run"),
        ("subagents", "s-1"),
    ],
    ids=lambda a: "-".join(a),
)
def test_every_command_says_what_to_do_about_a_bad_token(
    relay: RelayServer, account: Account, args: tuple[str, ...]
) -> None:
    bad = cli(relay, "cbp_not-a-real-token", *args, code=2).stderr
    assert "unauthorized" in bad and "pair again" in bad and "→" in bad
    device = cli(relay, account.device_token, *args, code=2).stderr
    assert "phone token" in device
    nothing = cli(relay, "", *args, code=2).stderr
    assert "no phone token" in nothing and "CB_TOKEN" in nothing


def test_unreachable_relay_and_offsets_without_sessions(
    relay: RelayServer, account: Account
) -> None:
    for args in (("session-cost", "-1"), ("subagents", "-1"), ("pin", "-1")):
        err = cli(relay, account.phone_token, *args, code=2).stderr
        assert "no session -1: there are no sessions yet" in err
    zero = cli(relay, account.phone_token, "pin", "-0", code=2).stderr
    assert "SESSION -0: offsets start at -1" in zero
    gone = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli",
            "retention",
            "--relay",
            "http://127.0.0.1:9",
            "--token",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert gone.returncode == 2 and "cannot reach the relay" in gone.stderr


def test_pure_parts() -> None:
    assert parse_rule("read=Allow", "category") == ("read", "allow")
    assert parse_rule("mcp__x__y=unset", "tool") == ("mcp__x__y", "unset")
    with pytest.raises(CommandError):
        parse_rule("Bash", "tool")
    assert usd_text(None) == "unknown" and usd_text(0) == "$0.0000"
    listed: list[SubagentSummary] = [{"agent_id": "abc1"}, {"agent_id": "abd2"}, {"agent_id": None}]
    assert pick_subagent(listed, "abc", "s") == "abc1"
    with pytest.raises(CommandError, match="2 subagents start with 'ab'"):
        pick_subagent(listed, "ab", "s")
    assert run_lines(None)[0].startswith("Ran retention now")


def test_move_names_the_mac_shows_progress_and_the_reason_it_failed(
    relay: RelayServer, account: Account, studio: ScriptedMac, loop: LoopThread
) -> None:
    token, _, laptop_id = relay.state.store.create_token(account.account_id, "device", "Laptop")
    laptop = ScriptedMac(relay, token, loop, name="Laptop").connect()
    try:
        sid = new_id()
        push(studio, sid, "g_plan")
        studio.update(sid, state="idle")
        refused = cli(relay, account.phone_token, "move", sid, "Studio", code=2)
        assert "already" in refused.stderr
        laptop.answers["move_probe"] = {"have": []}
        studio.fail["move_export"] = ("disk_full", "the disk of Studio is full (2 MB free)")
        failed = cli(relay, account.phone_token, "move", sid, "--cwd", "/Users/ada/work", code=2)
        assert "to Laptop when its turn ends" in failed.stdout
        assert failed.stderr.startswith(
            "claude-bridge: not moved to Laptop: the disk of Studio is full (2 MB free) (disk_full)"
        ), failed.stderr
        assert "goes on where it was" in failed.stderr
        probe = next(c for c in laptop.commands if c.name == "move_probe")
        assert probe.args["cwd"] == "/Users/ada/work"
        moved = api(relay, account, "GET", f"/api/sessions/{sid}/move")["move"]
        assert moved["to"] == laptop_id and moved["state"] == "failed"
    finally:
        laptop.close()


def test_move_pure_parts() -> None:
    macs: list[Any] = [
        {"id": "m1", "name": "Studio", "online": True},
        {"id": "m2", "name": "Laptop", "online": True},
        {"id": "m3", "name": "Old iMac", "online": False},
    ]
    assert move_target(macs, None, "m1")["id"] == "m2"  # the only other online
    assert move_target(macs, "laptop", "m1")["id"] == "m2"
    with pytest.raises(CommandError, match="already"):
        move_target(macs, "Studio", "m1")
    with pytest.raises(CommandError, match="no other Mac is online"):
        move_target([macs[0], macs[2]], None, "m1")
    line = move_line(
        {"state": "moving", "step": "sending", "bytes": 5_000_000, "total": 20_000_000}, "Laptop"
    )
    assert line == "Moving to Laptop: sending, 4.8 MB of 19.1 MB"
    assert move_line({"state": "done", "cwd": "/w"}, "Laptop") == "Moved to Laptop, in /w."
