"""The page's files and changes view, the new-session pickers and the wide layout, in Chromium
against the real relay and the real agent (with the fake claude), on a real git folder."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.support.bridge import Bridge
from tests.support.journeys import start_session, wait_state
from tests.support.relay import RelayServer
from tests.support.waits import wait_for
from tests.support.web import Phone, actions

LONG_LINE = "x = '" + "long " * 80 + "'\n"


def make_repo(root: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    (root / "src").mkdir()
    (root / "src" / "main.py").write_text(
        "import os\n\n\ndef main():\n    # the answer\n    return 1\n" + LONG_LINE
    )
    (root / "README.md").write_text("# shop\n")
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "first")
    (root / "src" / "main.py").write_text(
        "import os\n\n\ndef main():\n    # the answer\n    return 2\n" + LONG_LINE
    )
    (root / "README.md").write_text("# shop\n\nstaged\n")
    git("add", "README.md")
    (root / "<img src=x onerror=alert(1)>.txt").write_text("<script>alert(1)</script>\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")


@pytest.fixture
def session(fake: Bridge) -> Iterator[tuple[Bridge, str]]:
    fake.start_agent()
    cwd = fake.folder("shop")
    make_repo(Path(cwd))
    with fake.phone() as client:
        session_id = start_session(client, fake, cwd, prompt="hello", permission_mode="manual")
        wait_state(client, session_id, "idle")
    yield fake, session_id


def no_overflow(page: Page) -> None:
    width = page.evaluate("window.innerWidth")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"page is {scroll} px wide in a {width} px window"


def tall_enough(page: Page, selector: str) -> None:
    heights = page.eval_on_selector_all(
        selector, "els => els.map(e => Math.round(e.getBoundingClientRect().height))"
    )
    assert heights and min(heights) >= 44, (selector, heights)


def test_changes_and_files_of_a_session_on_a_phone(
    browser: Browser, session: tuple[Bridge, str]
) -> None:
    bridge, session_id = session
    phone = Phone(browser, bridge.relay).login(bridge.account)
    try:
        page = phone.open(f"/#/s/{session_id}")
        expect(page.locator(".convo")).to_be_visible()
        actions(page, "Changes")
        expect(page).to_have_url(re.compile(f"#/s/{session_id}/changes$"))
        rows = page.locator(".flist.changes .frow")
        expect(rows).to_have_count(4)
        expect(page.locator(".fv")).to_contain_text("Branch main · 4 changed")
        readme = rows.filter(has_text="README.md")
        expect(readme).to_contain_text("staged: modified")
        expect(rows.filter(has_text="logo.png")).to_contain_text("untracked")
        no_overflow(page)
        tall_enough(page, ".frow, .tab")
        phone.shot("40-changes-390")

        rows.filter(has_text="src/main.py").click()
        unified = page.locator(".diff.unified")
        expect(unified.locator(".d-del")).to_contain_text("return 1")
        expect(unified.locator(".d-add")).to_contain_text("return 2")
        expect(page.locator(".dhead")).to_have_text(["Not staged"])
        # The long line scrolls inside the diff, never the page.
        no_overflow(page)
        phone.shot("41-diff-unified-390")
        page.get_by_role("button", name="Split").click()
        pair = page.locator(".diff.split .drow", has=page.locator(".d-del"))
        expect(pair.locator(".d-del")).to_contain_text("return 1")
        expect(pair.locator(".d-add")).to_contain_text("return 2")
        no_overflow(page)
        tall_enough(page, ".seg, .crumb")
        phone.shot("42-diff-split-390")

        page.get_by_role("link", name="Files").click()
        expect(page).to_have_url(re.compile(f"#/s/{session_id}/files$"))
        names = page.locator(".flist .fname")
        expect(names.first).to_have_text("src/")
        # A name with markup in it is text, never an element.
        expect(page.locator(".fname", has_text="<img src=x onerror=alert(1)>.txt")).to_have_count(1)
        assert page.locator(".fv img").count() == 0
        page.locator(".fname", has_text="<img").click()
        expect(page.locator("pre.code")).to_have_text("<script>alert(1)</script>\n")
        assert page.locator(".fv script").count() == 0 and not phone.dialogs
        page.go_back()
        page.locator(".fname", has_text="logo.png").click()
        expect(page.locator(".fv-binary")).to_have_text("Binary file: not shown.")
        page.go_back()
        page.locator(".fname", has_text="src/").click()
        page.locator(".fname", has_text="main.py").click()
        code = page.locator("pre.code")
        expect(code.locator(".tk-kw").first).to_have_text("import")
        expect(code.locator(".tk-com")).to_have_text("# the answer")
        expect(page.locator("pre.gutter")).to_contain_text("7")
        scroll, client = code.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert scroll > client  # the long line scrolls in its block
        no_overflow(page)
        phone.shot("43-file-390")

        # Back to the session from the top bar.
        page.locator("#back").click()
        expect(page).to_have_url(re.compile(f"#/s/{session_id}$"))
    finally:
        phone.close()


def test_the_changes_view_in_korean(browser: Browser, session: tuple[Bridge, str]) -> None:
    bridge, session_id = session
    phone = Phone(browser, bridge.relay, locale="ko-KR").login(bridge.account)
    try:
        page = phone.open(f"/#/s/{session_id}/changes")
        expect(page.locator(".tab[aria-current='page']")).to_have_text("변경 사항")
        expect(page.locator(".fv")).to_contain_text("브랜치 main · 4개 바뀜")
        expect(page.locator(".badge.staged")).to_have_text("스테이징됨: 수정")
        no_overflow(page)
        phone.shot("47-changes-ko-390")
    finally:
        phone.close()


def test_a_mac_offline_or_a_folder_outside_git_is_said_plainly(
    browser: Browser, fake: Bridge
) -> None:
    fake.start_agent()
    cwd = fake.folder("plain")
    with fake.phone() as client:
        session_id = start_session(client, fake, cwd, prompt="hello", permission_mode="manual")
        wait_state(client, session_id, "idle")
    phone = Phone(browser, fake.relay).login(fake.account)
    try:
        page = phone.open(f"/#/s/{session_id}/changes")
        expect(page.locator(".fv-error")).to_have_text(
            "The session's folder is not in a git repository."
        )
        fake.stop_agent()
        wait_for(lambda: fake.relay.state.live.link(fake.account.device_id) is None, 30, "offline")
        page.goto(f"/#/s/{session_id}/files")
        page.reload()
        expect(page.locator(".fv-error")).to_have_attribute("data-code", "device_offline")
        no_overflow(page)
    finally:
        phone.close()


def test_new_session_picks_a_recent_folder_a_model_and_a_mode(
    browser: Browser, session: tuple[Bridge, str]
) -> None:
    bridge, _ = session
    other = bridge.folder("other")
    phone = Phone(browser, bridge.relay).login(bridge.account)
    try:
        page = phone.open("/#/new")
        picks = page.locator("#ns-recent .ns-folder")
        expect(picks.first).to_contain_text("shop")
        tall_enough(page, "#ns-recent .ns-folder, #ns-model-pick, #ns-mode")
        picks.first.click()
        assert page.input_value("#ns-cwd").endswith("/shop")
        expect(picks.first).to_have_attribute("aria-pressed", "true")
        page.fill("#ns-cwd", other)  # typed as before
        expect(picks.first).to_have_attribute("aria-pressed", "false")
        expect(page.locator("#ns-model")).to_be_hidden()
        page.select_option("#ns-model-pick", "other")
        page.fill("#ns-model", "claude-test-model")
        page.select_option("#ns-mode", "plan")
        no_overflow(page)
        phone.shot("44-new-session-pickers-390")
        page.get_by_role("button", name="Start").click()
        expect(page).to_have_url(re.compile(r"#/s/[0-9a-f-]{36}$"))
        new_id = page.url.rsplit("/", 1)[1]
        assert bridge.agent is not None
        record = wait_for(lambda: bridge.agent and bridge.agent.registry.get(new_id), 15, "record")
        assert (record.cwd, record.model, record.permission_mode) == (
            other,
            "claude-test-model",
            "plan",
        )
        # A model from the list needs no typing.
        page.goto("/#/new")
        page.wait_for_selector("#ns-model-pick option", state="attached")  # a lazy chunk
        options = page.eval_on_selector_all("#ns-model-pick option", "os => os.map(o => o.value)")
        assert options[:3] == ["", "opus", "sonnet"] and options[-1] == "other"
    finally:
        phone.close()


@pytest.mark.parametrize(("width", "height", "beside"), [(1280, 800, True), (768, 1024, False)])
def test_wide_screens_keep_the_list_beside_the_session(
    browser: Browser, session: tuple[Bridge, str], width: int, height: int, beside: bool
) -> None:
    bridge, session_id = session
    phone = Phone(browser, bridge.relay).login(bridge.account)
    try:
        page = phone.page
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/#/s/{session_id}")
        expect(page.locator(".convo")).to_be_visible()
        side = page.locator("#side")
        if not beside:
            expect(side).to_have_count(0)
            no_overflow(page)
            phone.shot(f"45-session-{width}")
            return
        expect(side.locator(f'a.session-row[data-id="{session_id}"]')).to_have_attribute(
            "aria-current", "page"
        )
        list_box = side.bounding_box()
        main_box = page.locator("#view").bounding_box()
        assert list_box and main_box
        assert list_box["x"] + list_box["width"] <= main_box["x"] + 1  # beside, not above
        assert main_box["width"] >= 600 and list_box["height"] > 200
        no_overflow(page)
        phone.shot(f"45-session-{width}")
        actions(page, "Changes")
        expect(page.locator(".flist.changes .frow")).to_have_count(4)
        expect(side).to_be_visible()
        page.locator(".frow", has_text="src/main.py").click()
        page.get_by_role("button", name="Split").click()
        no_overflow(page)
        phone.shot(f"46-diff-split-{width}")
        # Narrowed to a phone, the list goes and the page is as before.
        page.set_viewport_size({"width": 390, "height": 844})
        expect(side).to_have_count(0)
        no_overflow(page)
    finally:
        phone.close()


def test_the_highlighter_and_the_diff_reader(browser: Browser, relay: RelayServer) -> None:
    """The page's own functions, run in Chromium: text stays text, multi-line strings and
    comments are one token, diffs pair deletions with additions."""
    context = browser.new_context(base_url=relay.url)
    try:
        page = context.new_page()
        page.goto("/pair.html")
        got = page.evaluate(
            """async (inputs) => {
              const f = await import('/js/files.js');
              const spans = (text, lang) => {
                const box = document.createElement('div');
                box.append(f.highlight(text, lang));
                return { text: box.textContent, tags: [...box.querySelectorAll('*')].map(
                  (e) => e.tagName + '.' + e.className + ':' + e.textContent) };
              };
              const rows = f.parseDiff(inputs.diff);
              return {
                py: spans(inputs.py, 'py'),
                js: spans(inputs.js, 'js'),
                html: spans('<img src=x onerror=alert(1)>', 'js'),
                langs: ['a/b.tsx', 'Makefile', 'x.unknown', 'README.md'].map(f.languageOf),
                rows: rows.map((r) => [r.kind, r.text, r.old ?? null, r.new ?? null]),
                pairs: f.pairRows(rows).map(([a, b]) => [a && a.text, b && b.text]),
              };
            }""",
            {
                "diff": "diff --git a/x b/x\n@@ -1,3 +1,3 @@\n a\n-b\n-c\n+B\n d\n",
                "py": 'def f():\n    """doc\n    more"""\n    return 0x1F  # done\n',
                "js": "/* a\n b */ const s = `<b>${x}</b>`;",
            },
        )
    finally:
        context.close()
    assert got["py"]["text"].startswith("def f():\n") and got["py"]["tags"] == [
        "SPAN.tk-kw:def",
        'SPAN.tk-str:"""doc\n    more"""',
        "SPAN.tk-kw:return",
        "SPAN.tk-num:0x1F",
        "SPAN.tk-com:# done",
    ]
    assert got["js"]["tags"] == [
        "SPAN.tk-com:/* a\n b */",
        "SPAN.tk-kw:const",
        "SPAN.tk-str:`<b>${x}</b>`",
    ]
    assert got["html"]["text"] == "<img src=x onerror=alert(1)>"
    assert all(not tag.startswith("IMG") for tag in got["html"]["tags"])
    assert got["langs"] == ["js", "sh", None, "md"]
    assert got["rows"] == [
        ["meta", "diff --git a/x b/x", None, None],
        ["hunk", "@@ -1,3 +1,3 @@", None, None],
        ["ctx", "a", 1, 1],
        ["del", "b", 2, None],
        ["del", "c", 3, None],
        ["add", "B", None, 2],
        ["ctx", "d", 4, 3],
    ]
    assert got["pairs"] == [
        ["diff --git a/x b/x", None],
        ["@@ -1,3 +1,3 @@", None],
        ["a", "a"],
        ["b", "B"],
        ["c", None],
        ["d", "d"],
    ]
