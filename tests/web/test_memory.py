"""Memory candidates on the page (web/js/memory.js) in Chromium at 390×844, against a real relay
fed by a scripted Mac over the real link: a correction given in two sessions of a folder shows
as one candidate with where it was found; the person edits it, keeps the personal file, sees the
diff and the "applies from the next start" note, and only the dialog's button writes; a
dismissal is kept too."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import (
    Phone,
    ScriptedMac,
    actions,
    new_sid,
    tool_result_line,
    tool_use_line,
    user_line,
    wait_for,
)
from wire.memory_section import apply_section, unified_diff

SHOP = "/Users/ada/src/shop"
SAID = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). To tell you how to proceed, "
    "the user said:\n"
)


def rejected(tool_id: str, words: str) -> list[dict[str, Any]]:
    result = tool_result_line(tool_id, SAID + words, tool_id + "-r")
    result["message"]["content"][0]["is_error"] = True
    return [
        user_line("set up the project", tool_id + "-p"),
        tool_use_line(tool_id, "Bash", {"command": "npm install"}, tool_id + "-u"),
        result,
    ]


def written(scripted: ScriptedMac, dry_run: bool) -> list[Any]:
    return [
        c for c in scripted.commands if c.name == "write_memory" and c.args["dry_run"] is dry_run
    ]


def test_a_candidate_is_reviewed_edited_and_written_only_from_the_diff(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sids = [new_sid(), new_sid()]
    for n, words in enumerate(["Use pnpm, not npm.", "use pnpm,  not npm"]):
        scripted.send_json_lines(sids[n], rejected(f"toolu_{n}", words), cwd=SHOP)
        scripted.send_json_lines(
            new_sid(), rejected(f"toolu_x{n}", f"Never push on day {n}"), cwd=SHOP
        )
    before = "# Shop\n\nBuild with make.\n"
    edited = "Use pnpm, never npm"
    scripted.answers["write_memory"] = {
        "diff": unified_diff(before, apply_section(before, [edited]), "CLAUDE.local.md"),
        "path": SHOP + "/CLAUDE.local.md",
    }
    page = phone.login(account).open("/#/settings")
    page.locator("#set-memory").click()
    item = page.locator(".mem-item[data-state='proposed']")
    expect(item).to_have_count(1)
    expect(item.locator(".mem-rule")).to_have_text("Corrected twice")
    expect(item.locator(".mem-text")).to_have_value("use pnpm,  not npm")
    expect(page.locator(".page.memory .note")).to_contain_text("next start")
    item.locator(".mem-found summary").click()
    expect(item.locator(".mem-evidence li")).to_have_count(2)
    expect(item.locator(".mem-file")).to_have_value("CLAUDE.local.md")
    phone.shot("memory-candidates-390x844")

    item.locator(".mem-text").fill(edited)
    item.locator(".mem-review").click()
    sheet = page.locator(".mem-review-sheet")
    expect(sheet.locator(".d-add")).to_contain_text(["+", "- Use pnpm, never npm"])
    expect(sheet.locator(".mem-applies")).to_contain_text("next start")
    phone.shot("memory-diff-390x844")
    dry = wait_for(lambda: written(scripted, True), what="the dry run")
    assert dry[-1].args["facts"] == [edited] and not written(scripted, False)

    sheet.locator(".mem-write").click()
    done = page.locator(".mem-item[data-state='edited']")
    expect(done).to_be_visible()
    expect(done.locator(".mem-state")).to_have_text("Accepted, edited")
    sent = written(scripted, False)
    assert len(sent) == 1 and sent[0].args["facts"] == [edited]
    assert sent[0].args["file"] == "CLAUDE.local.md" and sent[0].args["cwd"] == SHOP
    expect(page.locator(".mem-item[data-state='proposed']")).to_have_count(0)
    phone.shot("memory-decided-390x844")

    # Every candidate's fate is kept: dismissed is listed, never proposed again.
    scripted.send_json_lines(new_sid(), rejected("toolu_y", "Keep the changelog short"), cwd=SHOP)
    scripted.send_json_lines(new_sid(), rejected("toolu_z", "keep the changelog short."), cwd=SHOP)
    page.reload()
    fresh = page.locator(".mem-item[data-state='proposed']")
    expect(fresh).to_have_count(1)
    fresh.locator(".mem-dismiss").click()
    expect(page.locator(".mem-item[data-state='dismissed']")).to_have_count(1)
    assert len(written(scripted, False)) == 1

    # The session menu leads to its project's memory.
    page.goto(f"/#/s/{sids[0]}")
    actions(page, "Project memory")
    expect(page.locator("#mem-project")).to_have_value(SHOP)
    expect(page.locator(".mem-item[data-state='edited']")).to_have_count(1)
