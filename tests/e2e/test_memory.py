"""Memory with a tap, end to end with the real Claude Code 2.1.332 against the project's fake
API: a fact accepted on the phone is written by the Mac into the project's CLAUDE.local.md, and
the next session started in that folder carries it to the model — while the session started
before the tap never did (it applies from the next start, as the page says)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from relay.features import decisions
from relay.ledger import Decision, Ledger, Source
from tests.support.bridge import E2E, Bridge, seed_home
from tests.support.journeys import start_session, wait_answered
from tests.support.relay import RelayServer, free_port
from tests.support.waits import wait_for

FACT = "Which package manager? → pnpm, never npm"


@contextlib.contextmanager
def dumping_api(dump: Path) -> Iterator[str]:
    """The fake Anthropic API writing each request's whole body into ``dump``."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(E2E / "mockapi.py"), "--port", str(port), "--dump-dir", str(dump),
         "--scenarios", str(E2E / "scenarios.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url), 15, "the fake API")
        yield url
    finally:
        proc.kill()
        proc.wait()


def _answers(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url + "/v1/models", timeout=1).status_code == 200
    return False


def requests_with(dump: Path, text: str, since: float) -> list[Path]:
    return [
        p for p in sorted(dump.glob("*.json"))
        if float(p.stem) >= since and text in p.read_text()
    ]  # fmt: skip


def test_an_accepted_fact_reaches_the_model_from_the_next_start(
    relay: RelayServer, claude_bin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "requests"
    with dumping_api(dump) as url:
        bridge = Bridge(relay, relay.account(), tmp_path, claude_bin, url)
        seed_home(bridge.home, [])
        try:
            bridge.start_agent()
            cwd = bridge.folder("shop")
            with bridge.phone() as phone:
                before = time.time()
                first = start_session(phone, bridge, cwd, prompt="hello", permission_mode="manual")
                wait_answered(phone, first)

                # The person marked a decision "remember" (the decisions feature's seam).
                decision = Decision(
                    "e1.0", "typed_answer", "pnpm, never npm", Source(1, None),
                    context="Which package manager?",
                )  # fmt: skip

                async def ledger_for(state: object, session_id: str) -> Ledger:
                    return Ledger(decisions=(decision,) if session_id == first else ())

                async def remembered(
                    state: object, project: str, account_id: str
                ) -> dict[str, frozenset[str]]:
                    return {first: frozenset({"e1.0"})}

                monkeypatch.setattr(decisions, "ledger_for", ledger_for)
                monkeypatch.setattr(decisions, "remembered", remembered)

                found = phone.get("/api/memory", params={"project": cwd}).json()["candidates"]
                assert [c["text"] for c in found] == [FACT]
                assert not (Path(cwd) / "CLAUDE.local.md").exists()
                assert not requests_with(dump, "never npm", before)
                accepted = phone.post(f"/api/memory/{found[0]['id']}", json={"action": "accept"})
                assert accepted.status_code == 200, accepted.text
                assert f"- {FACT}" in (Path(cwd) / "CLAUDE.local.md").read_text()

                tapped = time.time()
                second = start_session(
                    phone, bridge, cwd, prompt="hi again", permission_mode="manual"
                )
                wait_answered(phone, second)
                carried = requests_with(dump, "never npm", tapped)
                assert carried, "the next session's requests do not carry the accepted fact"
                body = json.loads(carried[0].read_text())
                assert "CLAUDE.local.md" in json.dumps(body)
        finally:
            bridge.stop_agent()
            bridge.kill_tmux()
