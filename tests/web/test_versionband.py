"""The Claude Code version band (wire/claude_versions.py → relay → web/js/versionband.js).

A Mac's hello says which Claude Code it runs; the relay keeps it per Mac and adds where it stands
against the tested list (``claude_standing``); the phone shows a band on the overview, in that
Mac's section, and on its sessions when the version is not a tested one. Real relay, the real
link, Debian's Chromium at phone size.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.support.bridge import FAKE, Bridge, seed_home
from tests.support.journeys import start_session, wait_state
from tests.support.relay import Account, RelayServer
from tests.support.web import LoopThread, Phone, ScriptedMac, new_sid, relay_client, wait_for
from wire.claude_versions import newest_tested

NEWER = "2.1.340"
NEWER_TEXT = f"Claude Code {NEWER} is newer than this bridge was tested with: cards may be missed"


def mac(relay: RelayServer, account: Account, loop: LoopThread, version: str) -> ScriptedMac:
    return ScriptedMac(relay, account.device_token, loop, claude_version=version).connect()


# -- the standing, as the relay computes it ---------------------------------------------------


def test_relay_exposes_each_macs_standing(
    relay: RelayServer, account: Account, loop: LoopThread
) -> None:
    studio = mac(relay, account, loop, NEWER)
    try:
        with relay_client(relay, account) as client:
            (device,) = client.get("/api/devices").json()["devices"]
            assert device["info"]["claude_version"] == NEWER
            assert device["claude_standing"] == "newer"
            # the overview snapshot at the head of the account stream says the same
            with client.stream("GET", "/api/stream") as stream:
                for line in stream.iter_lines():
                    if line.startswith("data:") and '"devices"' in line:
                        assert '"claude_standing": "newer"' in line.replace('":"', '": "')
                        break
        studio.close()
        # the Mac comes back with a tested version: the stored standing follows its hello
        studio = mac(relay, account, loop, newest_tested())
        with relay_client(relay, account) as client:
            (device,) = client.get("/api/devices").json()["devices"]
            assert device["claude_standing"] == "tested"
    finally:
        studio.close()


def test_no_standing_without_a_login(relay: RelayServer) -> None:
    assert httpx.get(relay.url + "/api/devices").status_code == 401


# -- the band on the phone ----------------------------------------------------------------------


def test_band_for_a_newer_version_on_the_overview_and_the_session(
    phone: Phone, relay: RelayServer, account: Account, loop: LoopThread
) -> None:
    studio = mac(relay, account, loop, NEWER)
    try:
        sid = new_sid()
        studio.send_transcript(sid, "b_idle")
        page = phone.login(account).open("/")
        section = page.locator(f"section.mac[data-device='{account.device_id}']")
        band = section.locator(".vband")
        expect(band).to_be_visible()
        expect(band).to_have_text(NEWER_TEXT)
        assert band.get_attribute("data-standing") == "newer"
        assert page.viewport_size == {"width": 390, "height": 844}
        # The overview may draw itself again as the Mac's updates come in: measure the band
        # once it stands still.
        box = band.bounding_box()
        for _ in range(20):
            if box is not None:
                break
            page.wait_for_timeout(100)
            box = band.bounding_box()
        assert box is not None and box["width"] <= 390  # wraps on a phone, no sideways scroll
        phone.shot("versions-01-overview-newer")

        page.goto(f"/#/s/{sid}")
        session_band = page.locator(".session-meta + .vband")
        expect(session_band).to_be_visible()
        expect(session_band).to_have_text(NEWER_TEXT)
        expect(page.locator(".vband")).to_have_count(1)  # one band, however often it redraws
        phone.shot("versions-02-session-newer")
    finally:
        studio.close()


def test_a_tested_version_shows_no_band(
    phone: Phone, relay: RelayServer, account: Account, loop: LoopThread
) -> None:
    studio = mac(relay, account, loop, newest_tested())
    try:
        sid = new_sid()
        studio.send_transcript(sid, "b_idle")
        page = phone.login(account).open("/")
        expect(page.locator(f"section.mac[data-device='{account.device_id}'] h2")).to_be_visible()
        page.goto(f"/#/s/{sid}")
        expect(page.locator(".session-meta")).to_contain_text("Studio")
        expect(page.locator(".vband")).to_have_count(0)
        page.goto("/")
        expect(page.locator(f"section.mac[data-device='{account.device_id}'] h2")).to_be_visible()
        expect(page.locator(".vband")).to_have_count(0)
    finally:
        studio.close()


def test_band_follows_a_relinked_mac_and_reads_in_korean(
    browser: object, relay: RelayServer, account: Account, loop: LoopThread
) -> None:
    korean = Phone(browser, relay, locale="ko-KR")  # type: ignore[arg-type]
    studio = mac(relay, account, loop, newest_tested())
    try:
        page = korean.login(account).open("/")
        section = page.locator(f"section.mac[data-device='{account.device_id}']")
        expect(section.locator("h2")).to_be_visible()
        expect(section.locator(".vband")).to_have_count(0)
        # Claude Code was updated on the Mac and its agent linked again: no reload needed
        studio.close()
        studio = mac(relay, account, loop, "2.0.1")
        band = section.locator(".vband")
        expect(band).to_have_text(
            "Claude Code 2.0.1은(는) 이 브리지가 테스트한 버전보다 오래됐어요: 카드를 잘못 읽을 수 있어요"
        )
        korean.shot("versions-03-overview-older-ko")
    finally:
        studio.close()
        korean.close()


def test_band_text_is_escaped(
    phone: Phone, relay: RelayServer, account: Account, loop: LoopThread
) -> None:
    shown = NEWER + " <img src=x onerror=alert(1)>"
    studio = mac(relay, account, loop, shown)
    try:
        page = phone.login(account).open("/")
        band = page.locator(".vband")
        expect(band).to_have_text(
            f"Claude Code {shown} is newer than this bridge was tested with: cards may be missed"
        )
        expect(page.locator(".vband img")).to_have_count(0)
        wait_for(lambda: not phone.dialogs, what="no alert")
    finally:
        studio.close()


# -- the agent: a Claude Code updated while it runs ---------------------------------------------


def _claude_at(path: Path, version: str) -> None:
    """A ``claude`` that says ``version`` and otherwise is the fake Claude Code; replaced the way
    npm replaces it (a new file moved over the old one)."""
    new = path.with_suffix(".new")
    new.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "--version" ]; then echo "{version} (Claude Code)"; exit 0; fi\n'
        f'exec "{FAKE}" "$@"\n'
    )
    new.chmod(0o755)
    os.replace(new, path)


def test_an_updated_claude_is_reported_at_the_next_launch(
    relay: RelayServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    _claude_at(claude, newest_tested())
    bridge = Bridge(relay, relay.account(), tmp_path, str(claude), api_url="http://127.0.0.1:9")
    seed_home(bridge.home, [])
    original = bridge.env
    monkeypatch.setattr(bridge, "env", lambda: {**original(), "FAKECLAUDE_DIALOG_DEAF": "0.05"})

    def standing_on_relay(client: httpx.Client) -> tuple[str, str]:
        (device,) = client.get("/api/devices").json()["devices"]
        return device["info"]["claude_version"], device["claude_standing"]

    try:
        agent = bridge.start_agent()
        with bridge.phone() as phone:
            assert standing_on_relay(phone) == (newest_tested(), "tested")
            first = start_session(phone, bridge, bridge.folder("one"), prompt="hello")
            wait_state(phone, first, "idle")
            assert agent.claude_version == newest_tested()  # same binary: not asked again

            _claude_at(claude, NEWER)  # `npm update -g` while the agent runs
            second = start_session(phone, bridge, bridge.folder("two"), prompt="hello")
            # told at that launch, not at the agent's next start
            wait_for(lambda: standing_on_relay(phone) == (NEWER, "newer"), 20, "the new version")
            wait_state(phone, second, "idle")
        assert agent.claude_version == NEWER
    finally:
        bridge.stop_agent()
        bridge.kill_tmux()
