"""``claude-bridge report`` as a person runs it (``python -m cli report``) against a real relay
fed by a scripted Mac over the real link: a session that stopped and started again is a resume
of its Mac and its project, a search followed by an opened result counts as found; the table
and ``--json`` say so, and a bad date is a clear refusal."""

from __future__ import annotations

import json

from tests.support.api import new_id
from tests.support.cli import cli
from tests.support.relay import Account, RelayServer, phone_client
from tests.support.web import LoopThread, ScriptedMac, user_line, wait_for

SHOP = "/Users/ada/src/shop"


def test_the_report_as_a_table_and_as_json(
    relay: RelayServer, account: Account, loop: LoopThread
) -> None:
    mac = ScriptedMac(relay, account.device_token, loop).connect()
    try:
        sid = new_id()
        mac.send_json_lines(sid, [user_line("fix the report page", "u-1")], cwd=SHOP)
        mac.update(sid, state="ended")
        mac.update(sid, state="starting")
        with phone_client(relay, account.phone_token) as phone:
            wait_for(
                lambda: phone.get("/api/report").json()["totals"]["sessions"]["resumed"]["full"],
                what="the resume recorded",
            )
            search_id = phone.get("/api/search", params={"q": "report"}).json()["search_id"]
            phone.post("/api/search/opened", json={"search_id": search_id, "session_id": sid})
    finally:
        mac.close()

    table = cli(relay, account.phone_token, "report").stdout.splitlines()
    assert table[0].startswith("Usage ")
    header = table[1].split()
    assert header[:3] == ["started", "resumed", "rate"]
    assert "starts: new 0, reopen 1, revive 0, move 0" in table
    rows = {line.split()[0]: line.split() for line in table[2:-2]}
    assert rows["all"][1:4] == ["0", "1/0/0", "100%"]
    assert rows["all"][6:8] == ["1", "100%"]
    assert rows["mac:Studio"][1:3] == ["0", "1/0/0"]
    assert rows[SHOP][1:3] == ["0", "1/0/0"], table

    body = json.loads(cli(relay, account.phone_token, "report", "--json").stdout)
    assert body["totals"]["sessions"]["resumed"]["full"] == 1
    assert body["by_project"][SHOP]["sessions"]["resumed"]["full"] == 1
    assert body["totals"]["search"] == {"searches": 1, "followed": 1, "success_rate": 1.0}

    refused = cli(relay, account.phone_token, "report", "--since", "someday", code=2)
    assert "not a date" in refused.stderr
