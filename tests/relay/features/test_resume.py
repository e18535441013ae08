"""Resume scopes on a real relay (relay/features/resume.py) with a scripted Mac: the account's
default and the session's own, what the Mac is told (``set_resume``), the reopen card's figures
from a captured conversation's usage, and ``POST …/reopen`` with and without a scope."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.support.api import error_of, new_id
from tests.support.relay import Account, RelayServer, mac
from tests.support.transcripts import CLAUDE_332, prompt_line, tool_result_line, tool_use_line
from tests.support.waits import await_until
from wire.protocol import Command, CommandResult
from wire.transcript import read_lines

LIFE1 = CLAUDE_332 / "resume_chooser" / "life1" / "transcript_before_aging.jsonl"
# What the captured conversation's last answer re-reads (FINDINGS.md §4: 1200 + 120000 + 300 + 31).
LAST_ANSWER_TOKENS = 121531
REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). "
)
SAID = "To tell you how to proceed, the user said:\n"
DECISION = "use pnpm, not npm"


class Recorder:
    def __init__(self) -> None:
        self.commands: list[Command] = []

    async def __call__(self, command: Command) -> CommandResult:
        self.commands.append(command)
        return CommandResult(command_id="", ok=True, data={})

    def last(self, name: str) -> dict[str, Any]:
        return next(c.args for c in reversed(self.commands) if c.name == name)


def conversation_lines() -> list[Any]:
    captured = LIFE1.read_text(encoding="utf-8").splitlines()
    mine = [
        prompt_line("INSTALL please"),
        tool_use_line("Bash", {"command": "npm install"}, "t-npm"),
        tool_result_line("t-npm", REJECTED + SAID + DECISION, is_error=True),
    ]
    return list(read_lines(("\n".join([*captured, *mine]) + "\n").encode()))


def test_scopes_figures_and_reopen(relay: RelayServer, account: Account) -> None:
    recorder = Recorder()
    session_id = new_id()
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    base = f"/api/sessions/{session_id}"

    async def go() -> None:
        async with (
            mac(relay, account.device_token, on_command=recorder) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await link.send_lines(session_id, new_id(), conversation_lines(), cwd="/Users/t/p")
            account_scope = (await client.get("/api/settings/resume_scope")).json()
            assert account_scope == {"scope": "full", "set": False}

            figures = (await client.get(f"{base}/reopen")).json()
            assert figures["scope"] == "full" and figures["session_scope"] is None
            scopes = figures["scopes"]
            assert scopes["full"]["tokens"] == LAST_ANSWER_TOKENS
            # The fake API says every request read 120000 cached tokens, so the fixed part (what
            # any first request reads) is nearly all of it: a summary never says it costs more.
            assert scopes["summary"]["tokens"] <= scopes["full"]["tokens"]
            assert figures["fixed"] is not None and scopes["fresh"]["tokens"] > figures["fixed"]
            assert scopes["fresh"]["fits"] is True and scopes["fresh"]["decisions"] == 1

            chosen = await client.put(f"{base}/resume_scope", json={"scope": "fresh"})
            assert chosen.json() == {"session_scope": "fresh", "scope": "fresh", "mac_told": True}
            told = recorder.last("set_resume")
            assert told["scope"] == "fresh" and told["decisions"] == 1
            assert DECISION in told["handoff"] and "BIG_CONTEXT" not in told["handoff"]
            session = (await client.get(base)).json()
            assert session["resume_scope"] == "fresh"

            reopened = await client.post(f"{base}/reopen")
            assert reopened.status_code == 200 and reopened.json()["scope"] == "fresh"
            sent = recorder.last("reopen")
            assert sent["scope"] == "fresh" and DECISION in sent["handoff"]

            once = await client.post(f"{base}/reopen", json={"scope": "summary"})
            assert once.json()["scope"] == "summary"
            assert recorder.last("reopen") == {"scope": "summary"}
            error_of(await client.post(f"{base}/reopen", json={"scope": "most"}), 400, "bad_scope")
            error_of(await client.post(f"{base}/reopen", content=b"[1]"), 400, "bad_request")

            # The account's default reaches the sessions that follow it.
            await client.put(f"{base}/resume_scope", json={"scope": None})
            assert recorder.last("set_resume") == {"decisions": 0}  # nobody set one
            count = len(recorder.commands)
            put = await client.put("/api/settings/resume_scope", json={"scope": "summary"})
            assert put.json() == {"scope": "summary", "set": True}

            async def told_all() -> bool:
                return len(recorder.commands) > count

            await await_until(told_all, 10, "set_resume sent")
            assert recorder.last("set_resume") == {"scope": "summary", "decisions": 0}
            figures = (await client.get(f"{base}/reopen")).json()
            assert figures["scope"] == "summary" and figures["account_scope"] == "summary"
            # A session with nothing said yet: nothing to re-read, the handoff just its opening.
            created = await client.post(
                "/api/sessions", json={"device_id": account.device_id, "cwd": "/Users/t/new"}
            )
            empty = (await client.get(f"/api/sessions/{created.json()['id']}/reopen")).json()
            assert empty["scopes"]["full"]["tokens"] is None and empty["fixed"] is None
            assert empty["scopes"]["fresh"]["decisions"] == 0 and empty["scopes"]["fresh"]["fits"]
            bad = await client.put("/api/settings/resume_scope", json={"scope": "all"})
            assert bad.status_code == 422 or bad.status_code == 400

    asyncio.run(go())
