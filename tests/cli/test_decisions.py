"""``claude-bridge decisions`` run as a process against a real relay, with a session made of the
captured Claude Code 2.1.332 question and plan runs."""

from __future__ import annotations

import asyncio
import json
import uuid

from cli.client import SessionSnapshot
from cli.decisions import ledger_lines
from tests.support.cli import cli
from tests.support.relay import Account, RelayServer, mac, transcript
from wire.transcript import read_lines

QUESTION = "Which colour should the widget be?"


def push(relay: RelayServer, account: Account, session_id: str) -> None:
    async def run() -> None:
        async with mac(relay, account.device_token) as link:
            for name in ("f_ask_question", "g_plan_approval"):
                lines = list(read_lines(transcript(name).read_bytes()))
                await link.send_lines(session_id, name, lines, cwd="/work/widgets")

    asyncio.run(run())


def test_decisions_lists_the_ledger_and_pins_and_removes_constraints(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    push(relay, account, session_id)
    out = cli(relay, account.phone_token, "decisions", session_id).stdout
    assert f"answered ({QUESTION}):" in out and "\n      Blue\n" in out
    assert "rejected the plan and said:" in out and "      MAKE_PLAN again" in out
    assert "permission mode set to:" in out and "      Plan" in out
    assert "Constraints\n  none: pin one" in out

    pinned = cli(
        relay, account.phone_token, "decisions", "-1", "--add-constraint", "Never deploy on Friday"
    ).stdout
    assert "Never deploy on Friday" in pinned
    body = json.loads(cli(relay, account.phone_token, "decisions", session_id, "--json").stdout)
    assert [c["text"] for c in body["constraints"]] == ["Never deploy on Friday"]
    assert ("answer", "Blue") in [(d["kind"], d["text"]) for d in body["decisions"]]
    cid = body["constraints"][0]["id"]
    left = cli(
        relay, account.phone_token, "decisions", session_id, "--remove-constraint", cid, "--json"
    ).stdout
    assert json.loads(left)["constraints"] == []
    wrong = cli(
        relay, account.phone_token, "decisions", session_id, "--remove-constraint", cid, code=2
    ).stderr
    assert "unknown_constraint" in wrong


def test_ledger_lines_show_each_text_whole_with_its_source() -> None:
    session: SessionSnapshot = {"id": "s-1", "title": "Widgets"}
    ledger = {
        "decisions": [
            {
                "kind": "plan_approved",
                "text": "# Plan\n\n1. Paint it blue",
                "context": "",
                "source": {"seq": 7, "at": None},
                "remembered": True,
            }
        ],
        "constraints": [],
        "open_items": [{"kind": "task", "text": "Add tests", "status": "pending"}],
        "dropped": 2,
    }
    lines = ledger_lines(session, ledger)
    assert lines[:5] == [
        'Decisions of session s-1 ("Widgets")',
        "  #7  approved the plan:  [remember]",
        "      # Plan",
        "      ",
        "      1. Paint it blue",
    ]
    assert "  (2 older decisions are not kept)" in lines
    assert lines[-1] == "  task [pending]: Add tests"
