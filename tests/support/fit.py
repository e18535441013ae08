"""What fits a phone's screen, measured in the page: nothing wider than the screen, controls a
finger can hit, the share of the screen a card's dock takes; and a busy session and a long card to
measure them on."""

from __future__ import annotations

import uuid
from typing import Any

from playwright.sync_api import Page

from tests.support.web import (
    ScriptedMac,
    assistant_line,
    new_sid,
    tool_result_line,
    tool_use_line,
    user_line,
)
from wire.protocol import Card, CardOption

MIN_TARGET = 44  # px: the smallest control a finger can hit (Apple and Android guidance)


def no_overflow(page: Page) -> None:
    """Nothing on the screen is wider than the screen."""
    wide = page.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})"
    )
    assert wide["scroll"] <= wide["inner"], wide


def at_bottom(page: Page) -> bool:
    return bool(
        page.evaluate(
            "() => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 4"
        )
    )


def small_targets(page: Page) -> list[dict[str, Any]]:
    """Every visible control under 44 × 44 px (a checkbox counts by the label row it sits in)."""
    found: list[dict[str, Any]] = page.evaluate(
        """(min) => {
          const out = [];
          const seen = new Set();
          for (const el of document.querySelectorAll('a[href], button, summary, select, input[type=checkbox]')) {
            const target = el.matches('input[type=checkbox]') ? (el.closest('label') || el) : el;
            if (seen.has(target)) continue;
            seen.add(target);
            const r = target.getBoundingClientRect();
            const style = getComputedStyle(target);
            if (!r.width || !r.height || style.visibility === 'hidden') continue;
            if (target.closest('[hidden], .sr, .toast')) continue;
            if (r.width < min || r.height < min) {
              out.push({tag: target.tagName, cls: target.className, text: (target.textContent || '').trim().slice(0, 40),
                        w: Math.round(r.width), h: Math.round(r.height)});
            }
          }
          return out;
        }""",
        MIN_TARGET,
    )
    return found


def busy_session(scripted: ScriptedMac, extra: int = 0) -> str:
    sid = new_sid()
    bodies: list[dict[str, Any]] = [user_line("tidy the checkout module", str(uuid.uuid4()))]
    for i in range(extra):
        bodies.append(
            tool_use_line(
                f"toolu_r{i}",
                "Read",
                {"file_path": f"/Users/ada/src/shop/m{i}.py"},
                str(uuid.uuid4()),
            )
        )
        bodies.append(
            tool_result_line(
                f"toolu_r{i}",
                "\n".join(f"{n:>6}\tline {n} of m{i}" for n in range(1, 30)),
                str(uuid.uuid4()),
            )
        )
        bodies.append(
            assistant_line(
                f"Step {i}: read m{i}.py.\n\n" + "A longer paragraph of text. " * 12,
                str(uuid.uuid4()),
            )
        )
    scripted.send_json_lines(sid, bodies)
    return sid


def long_bash_card(card_id: str = "card-b") -> Card:
    command = "\n".join(
        [
            "cd /Users/ada/src/shop && python -m pytest tests/unit -q --maxfail=1 \\",
            "  --cov=shop --cov-report=term-missing \\",
            "  -k 'not slow and not network' \\",
            "  -p no:cacheprovider",
            "echo finished",
        ]
    )
    description = "Run the unit tests with coverage"
    return Card(
        id=card_id,
        kind="permission",
        title="Bash command",
        # the screen's text repeats the description and the command before the question
        text=f"{description}\n{command}\nDo you want to proceed?",
        options=[
            CardOption(key="1", label="Yes"),
            CardOption(
                key="2",
                label="Yes, and don't ask again for python -m pytest commands in /Users/ada/src/shop",
            ),
            CardOption(key="3", label="No, and tell Claude what to do differently (esc)"),
        ],
        tool="Bash",
        tool_input={"command": command, "description": description},
        source="hook",
    )


def dock_share(page: Page) -> dict[str, float]:
    share: dict[str, float] = page.evaluate(
        """() => {
          const top = document.querySelector('.top').getBoundingClientRect();
          const dock = document.querySelector('.dock').getBoundingClientRect();
          const card = document.querySelector('.card').getBoundingClientRect();
          return {topBottom: top.bottom, dockTop: dock.top, dock: dock.height, cardTop: card.top,
                  cardScroll: document.querySelector('.card').scrollHeight - document.querySelector('.card').clientHeight};
        }"""
    )
    return share
