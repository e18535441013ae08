"""The tests' fake Anthropic API (tests/e2e/mockapi.py), run as the tests run it: a key it refuses
the way the real API refuses a wrong one, the session title Claude Code 2.1.332 asks for, and the
scenarios that captured task lists and the resume chooser (tests/fixtures/claude/2.1.332)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e import mockapi
from tests.support.bridge import API_KEY, fake_api

REFUSED_KEY = mockapi.INVALID_KEY_PREFIX + "-mockmockmockmockmock-AAAAAAAA"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_api(tmp_path_factory.mktemp("fakeapi") / "requests.log") as url:
        yield url


def ask(url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", **headers}
    return httpx.post(f"{url}/v1/messages", json=body, headers=headers, timeout=10)


def prompt(text: str, tools: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "model": "claude-opus-5-5",
        "max_tokens": 1000,
        "messages": [{"role": "user", "content": text}],
        "tools": [{"name": n, "input_schema": {"type": "object"}} for n in tools],
    }


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("POST", "/v1/messages", {"x-api-key": REFUSED_KEY}),
        ("POST", "/v1/messages/count_tokens", {"x-api-key": REFUSED_KEY}),
        ("GET", "/v1/models", {"x-api-key": REFUSED_KEY}),
        ("POST", "/v1/messages", {"Authorization": f"Bearer {REFUSED_KEY}"}),
    ],
)
def test_a_refused_key_gets_the_real_apis_401_on_every_route(
    api: str, method: str, path: str, headers: dict[str, str]
) -> None:
    got = httpx.request(method, api + path, json=prompt("hello"), headers=headers, timeout=10)
    assert got.status_code == 401
    assert got.json() == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    # without it Claude Code retries for about 3 minutes before it says so
    assert got.headers["x-should-retry"] == "false"


def test_any_other_key_is_taken_as_before(api: str) -> None:
    got = ask(api, prompt("hello"))
    assert got.status_code == 200
    assert got.json()["content"] == [
        {"type": "text", "text": "Hello! This is the mock API. How can I help?"}
    ]
    assert not mockapi.rejects_key({"x-api-key": API_KEY})
    assert not mockapi.rejects_key({"Authorization": "Bearer sk-ant-oat01-fine"})
    assert mockapi.rejects_key({"Authorization": f"Bearer {REFUSED_KEY}"})


def test_the_session_title_request_gets_a_json_title(api: str) -> None:
    body = prompt("<session>\nPlease help me refactor the parser module\n</session>")
    body["system"] = [
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
        {"type": "text", "text": "You are naming a coding session so the user can pick it out."},
    ]
    body["tools"] = []
    (block,) = ask(api, body).json()["content"]
    assert json.loads(block["text"]) == {"title": "Mock session title"}


def test_tasks_plan_loads_the_task_tools_then_creates_three_tasks(api: str) -> None:
    first = ask(api, prompt("TASKS_PLAN please", ("ToolSearch", "Bash"))).json()
    (search,) = first["content"]
    assert search["name"] == "ToolSearch" and "TaskCreate" in search["input"]["query"]
    loaded = ask(api, prompt("TASKS_PLAN please", ("ToolSearch", "Bash", "TaskCreate"))).json()
    creates = [b["input"]["subject"] for b in loaded["content"] if b["type"] == "tool_use"]
    assert creates == ["Write the parser", "Add parser tests", "Update the docs"]


def test_big_context_reports_a_context_over_the_choosers_threshold(api: str) -> None:
    usage = ask(api, prompt("BIG_CONTEXT one")).json()["usage"]
    context = sum(usage[k] for k in ("input_tokens", "cache_creation_input_tokens",
                                     "cache_read_input_tokens"))  # fmt: skip
    assert context > 100_000  # CLAUDE_CODE_RESUME_TOKEN_THRESHOLD's default


def test_the_scenarios_file_is_what_the_fixtures_name() -> None:
    scenarios = json.loads((Path(mockapi.__file__).parent / "scenarios.json").read_text())
    names = {s["name"] for s in scenarios}
    assert {"tasks_plan", "todos_plan", "big_context"} <= names
