"""Each command of the link has one typed args model (wire/protocol.py), and its JSON on the link
is what docs/protocol.md §9 shows: the models change how the code reads args, not the wire."""

from __future__ import annotations

import json
import re
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from tests.support.paths import REPO
from wire.protocol import (
    COMMAND_ARGS,
    AnswerCardArgs,
    CancelHeldArgs,
    ChangePolicyArgs,
    Command,
    CommandArgs,
    CommandName,
    CreateSessionArgs,
    DeleteHistoryArgs,
    EndArgs,
    GitDiffArgs,
    GitStatusArgs,
    InterruptArgs,
    ListConversationsArgs,
    ListFilesArgs,
    MoveAcceptArgs,
    MoveExportArgs,
    MoveFinishArgs,
    MovePlaceArgs,
    MoveProbeArgs,
    MoveReadArgs,
    MoveWriteArgs,
    ReadConversationArgs,
    ReadFileArgs,
    ReopenArgs,
    RestArgs,
    RevokeGrantArgs,
    SaveAttachmentArgs,
    SendArgs,
    SetModeArgs,
    SetModelArgs,
    SetPolicyArgs,
    SetResumeArgs,
    TranscriptLineArgs,
    WriteMemoryArgs,
    relay_message,
)

DOCS = REPO / "docs" / "protocol.md"

# One example of each command's args as the relay builds them, and the JSON object it sent
# before the models (its own hand-built dicts), key order included.
EXAMPLES: list[tuple[CommandArgs, dict[str, Any]]] = [
    (MoveProbeArgs(move_id="mv-12345678", cwd="/src"), {"move_id": "mv-12345678", "cwd": "/src"}),
    (
        MoveExportArgs(move_id="mv-12345678", when="now"),
        {"move_id": "mv-12345678", "when": "now"},
    ),
    (
        MoveAcceptArgs(move_id="mv-12345678", cwd="/src", manifest={}, files=[]),
        {"move_id": "mv-12345678", "cwd": "/src", "manifest": {}, "files": []},
    ),
    (
        MoveReadArgs(move_id="mv-12345678", file="folder.tar", offset=0, length=512),
        {"move_id": "mv-12345678", "file": "folder.tar", "offset": 0, "length": 512},
    ),
    (
        MoveWriteArgs(move_id="mv-12345678", file="folder.tar", offset=512, data="AA=="),
        {"move_id": "mv-12345678", "file": "folder.tar", "offset": 512, "data": "AA=="},
    ),
    (MovePlaceArgs(move_id="mv-12345678"), {"move_id": "mv-12345678"}),
    (
        MoveFinishArgs(move_id="mv-12345678", outcome="abort"),
        {"move_id": "mv-12345678", "outcome": "abort"},
    ),
    (
        CreateSessionArgs(cwd="/src", prompt="fix it", permission_mode="plan", model="opus"),
        {"cwd": "/src", "prompt": "fix it", "permission_mode": "plan", "model": "opus"},
    ),
    (
        CreateSessionArgs(cwd="/src", prompt=None, permission_mode=None, model=None, policy=None),
        {"cwd": "/src"},
    ),
    (
        CreateSessionArgs(cwd="/src", policy={"allow_all": True, "allow_all_for": 3600}),
        {"cwd": "/src", "policy": {"allow_all": True, "allow_all_for": 3600}},
    ),
    (SendArgs(text="hi", now=False, message_id=None), {"text": "hi", "now": False}),
    (
        SendArgs(text="hi", now=True, message_id="m-12345678"),
        {"text": "hi", "now": True, "message_id": "m-12345678"},
    ),
    (
        AnswerCardArgs(key="1", keys=None, text=None, always=True, card_id="card-17"),
        {"key": "1", "always": True, "card_id": "card-17"},
    ),
    (
        AnswerCardArgs(key=None, keys=["1", "3"], text=None, always=False, card_id="c"),
        {"keys": ["1", "3"], "always": False, "card_id": "c"},
    ),
    (
        SendArgs(text="hi", when="after_turn", attachments=["a" + "0" * 24]),
        {"text": "hi", "when": "after_turn", "attachments": ["a" + "0" * 24]},
    ),
    (SetModeArgs(mode="acceptEdits"), {"mode": "acceptEdits"}),
    (SetModelArgs(model="claude-sonnet-4-5"), {"model": "claude-sonnet-4-5"}),
    (
        SaveAttachmentArgs(filename="shot.png", media_type="image/png", data="iVBORw0KGgo="),
        {"filename": "shot.png", "media_type": "image/png", "data": "iVBORw0KGgo="},
    ),
    (InterruptArgs(), {}),
    (EndArgs(), {}),
    (RestArgs(), {}),
    (ReopenArgs(), {}),
    (
        ReopenArgs(scope="fresh", handoff="## Decisions", decisions=2),
        {"scope": "fresh", "handoff": "## Decisions", "decisions": 2},
    ),
    (ListConversationsArgs(limit=50), {"limit": 50}),
    (
        ReadConversationArgs(conversation_id="79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e"),
        {"conversation_id": "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e"},
    ),
    (
        SetResumeArgs(scope="summary", handoff=None, decisions=0),
        {"scope": "summary", "decisions": 0},
    ),
    (CancelHeldArgs(message_id="abc_1"), {"message_id": "abc_1"}),
    (
        WriteMemoryArgs(cwd="/w", file="CLAUDE.md", facts=["Use uv"], dry_run=True),
        {"cwd": "/w", "file": "CLAUDE.md", "facts": ["Use uv"], "dry_run": True},
    ),
    (
        SetPolicyArgs(policy={"allow_all": False, "categories": {"read": "allow"}, "tools": {}}),
        {"policy": {"allow_all": False, "categories": {"read": "allow"}, "tools": {}}},
    ),
    (
        ChangePolicyArgs(changes={"tools": {"Bash": None}}),
        {"changes": {"tools": {"Bash": None}}},
    ),
    (DeleteHistoryArgs(), {}),
    (ListFilesArgs(), {}),
    (ListFilesArgs(path="src"), {"path": "src"}),
    (ReadFileArgs(path="src/main.py"), {"path": "src/main.py"}),
    (GitStatusArgs(), {}),
    (GitDiffArgs(path="README.md"), {"path": "README.md"}),
    (TranscriptLineArgs(uuid="3f1c2a9e-0b7d"), {"uuid": "3f1c2a9e-0b7d"}),
    (RevokeGrantArgs(grant_id="g_0123456789ab"), {"grant_id": "g_0123456789ab"}),
]


def test_every_command_name_has_exactly_one_args_model() -> None:
    models = get_args(CommandArgs)
    assert sorted(m.name for m in models) == sorted(get_args(CommandName))
    assert set(COMMAND_ARGS) == set(get_args(CommandName))
    assert all(COMMAND_ARGS[m.name] is m for m in models)
    assert {type(args).name for args, _ in EXAMPLES} == set(get_args(CommandName))


@pytest.mark.parametrize(("args", "sent"), EXAMPLES, ids=lambda v: type(v).__name__)
def test_a_command_goes_on_the_link_as_before_and_reads_back_the_same(
    args: CommandArgs, sent: dict[str, Any]
) -> None:
    command = Command.of("c1", "s1", args)
    before = Command(command_id="c1", name=type(args).name, session_id="s1", args=sent)
    assert command.model_dump_json() == before.model_dump_json()  # byte for byte
    read = relay_message.validate_json(command.model_dump_json())
    assert isinstance(read, Command) and read.name == type(args).name
    assert read.parsed_args() == args
    assert Command.of("c1", "s1", read.parsed_args()).model_dump_json() == command.model_dump_json()


def _documented_commands() -> list[dict[str, Any]]:
    blocks = re.findall(r"<!-- example: relay -->\n```json\n(.*?)```", DOCS.read_text(), re.S)
    messages = [json.loads(block) for block in blocks]
    return [m for m in messages if m.get("type") == "command"]


def test_the_documented_commands_read_and_rebuild_key_for_key() -> None:
    documented = _documented_commands()
    assert {m["name"] for m in documented} >= {"create_session", "send", "answer_card"}
    for message in documented:
        command = Command.model_validate(message)
        rebuilt = Command.of(command.command_id, command.session_id, command.parsed_args())
        assert list(rebuilt.args.items()) == list(message["args"].items()), message


@pytest.mark.parametrize(
    ("name", "args", "field"),
    [
        ("send", {"text": ""}, "text"),
        ("send", {"text": "x" * 100_001}, "text"),
        ("send", {"text": "hi", "message_id": "not an id"}, "message_id"),
        ("answer_card", {"key": "1" * 33, "card_id": "c"}, "key"),
        ("answer_card", {"keys": ["1"] * 65, "card_id": "c"}, "keys"),
        ("answer_card", {"key": "1"}, "card_id"),
        ("create_session", {"cwd": "/src", "permission_mode": "yolo"}, "permission_mode"),
        ("create_session", {}, "cwd"),
        ("cancel_held", {"message_id": "../x"}, "message_id"),
        ("set_policy", {}, "policy"),
        ("change_policy", {"changes": "all"}, "changes"),
        ("send", {"text": "hi", "when": "later"}, "when"),
        ("send", {"text": "hi", "attachments": ["../../etc/passwd"]}, "attachments"),
        ("send", {"text": "hi", "attachments": ["a" + "0" * 24] * 11}, "attachments"),
        ("set_mode", {"mode": "yolo"}, "mode"),
        ("set_model", {"model": "sonnet\n/exit"}, "model"),
        ("set_model", {"model": ""}, "model"),
        (
            "save_attachment",
            {"filename": "x", "media_type": "text/html", "data": "AA=="},
            "media_type",
        ),
        (
            "save_attachment",
            {"filename": "", "media_type": "image/png", "data": "AA=="},
            "filename",
        ),
        ("revoke_grant", {"grant_id": "g_../../x"}, "grant_id"),
        ("revoke_grant", {}, "grant_id"),
    ],
)
def test_args_outside_the_documented_limits_do_not_read(
    name: CommandName, args: dict[str, Any], field: str
) -> None:
    command = Command(command_id="c1", name=name, session_id="s1", args=args)
    with pytest.raises(ValidationError) as caught:
        command.parsed_args()
    assert [e["loc"][0] for e in caught.value.errors()] == [field]
