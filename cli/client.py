"""The relay's phone API over HTTP, typed: the one client every session command uses.

Each method is one route the commands call and returns the shape the README's HTTP API table
documents, as a TypedDict: the JSON the relay sent, unchanged (``--json`` prints it as it came), with
its fields named for the type checker. Every failure becomes one ``CommandError`` (``ApiError``
when the relay answered ``{"error": {"code", "message"}}``), said for a person with what to do.
:func:`every_page` reads a paged history (a session's events, a subagent's) whole.

A library, not a command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypedDict
from urllib.parse import quote

import httpx

# relay.routes.READ_ONLY_HEADER, repeated here: importing the API would cost the CLI 0.5 s.
READ_ONLY_HEADER = "X-CB-Read-Only"
PAIR_HINT = (
    "pair again: make a phone token with `claude-bridge token create --kind phone --name cli` "
    "and pass it with --token or CB_TOKEN"
)
# What to do about an error, by the relay's error code.
_HINTS = {
    "wrong_token_kind": "this command needs a phone token, not a Mac's; " + PAIR_HINT,
    "device_offline": "start the agent on that Mac (claude-bridge agent), then run this again",
    "session_archived": "archived sessions are read-only; `claude-bridge pin SESSION` makes it active",
    "unknown_subagent": "`claude-bridge subagents SESSION` lists them",
}


class CommandError(Exception):
    """What went wrong, said for a person, and what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ApiError(CommandError):
    """The relay answered with an error (``{"error": {"code", "message"}}``)."""

    def __init__(
        self, status: int, code: str, message: str, hint: str = "", **details: Any
    ) -> None:
        super().__init__(message, hint)
        self.status = status
        self.code = code
        self.details = details  # the error's other fields (e.g. oldest_seq): free-form JSON


# -- the response shapes -----------------------------------------------------------------------


class Device(TypedDict, total=False):
    id: str
    name: str
    online: bool
    last_seen: str | None


class CostSummary(TypedDict, total=False):
    usd: float | None


class StartFailure(TypedDict, total=False):
    """Why a session's claude ended before it was ever live (wire's ``StartFailureInfo``)."""

    code: str
    reason: str
    action: str
    last_lines: list[str]
    status: int | None  # claude's exit status, when known


class SessionSnapshot(TypedDict, total=False):
    """``GET /api/sessions`` (each) and ``GET /api/sessions/{id}``."""

    id: str
    title: str | None
    device_id: str | None
    cwd: str | None
    state: str | None
    mark: str | None
    created_at: str | None
    updated_at: str | None
    position: int | None
    last_seq: int | None
    epoch: str | None
    cost: CostSummary | None
    conversation_id: str | None
    parent_id: str | None  # a fork's parent session
    branch: str | None  # the branch of its own git worktree
    error: str | None  # what went wrong, in one line
    failure: StartFailure | None  # claude ended before the session was live


class Deleted(TypedDict, total=False):
    """``DELETE /api/sessions/{id}``: ``mac`` is "deleted", or "waiting" for an offline Mac."""

    ok: bool
    session_id: str
    mac: str


class MoveError(TypedDict):
    code: str | None
    message: str


class Move(TypedDict, total=False):
    """A session's move (``POST``/``GET /api/sessions/{id}/move``): ``state`` is moving, done or
    failed; ``bytes`` of ``total`` carried so far; ``error`` when it failed."""

    id: str
    state: str
    phase: str
    step: str
    to: str
    cwd: str
    when: str
    bytes: int
    total: int
    error: MoveError | None


class Event(TypedDict, total=False):
    seq: int
    kind: str
    text: str | None
    tool: str | None
    summary: str | None
    is_error: bool
    agent_id: str | None


class EventsPage(TypedDict):
    events: list[Event]
    has_more: bool
    epoch: str


class SubagentSummary(TypedDict, total=False):
    agent_id: str | None
    agent_type: str | None
    description: str | None
    line: str
    events: int
    first_seq: int | None
    last_seq: int | None
    call_seq: int | None
    tool: str | None


class SearchQuery(TypedDict, total=False):
    q: str
    device_id: str
    cwd: str
    state: str
    group: str
    stage: str
    since: str
    until: str
    limit: int


class SearchItem(TypedDict, total=False):
    id: str
    title: str | None
    stage: str | None
    mac: str | None
    device_id: str | None
    cwd: str | None
    state: str | None
    mark: str | None
    updated_at: str | None
    summary: str | None


class SearchMore(TypedDict, total=False):
    here: bool
    elsewhere: bool


class SearchResults(TypedDict, total=False):
    query: str
    note: str | None
    here: list[SearchItem]
    elsewhere: list[SearchItem]
    has_more: SearchMore


class CostLine(TypedDict, total=False):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    usd: float | None


class CostReport(CostLine, total=False):
    source: str
    unknown_models: list[str]
    by_model: dict[str, CostLine]
    by_agent: dict[str, CostLine]


class Policy(TypedDict, total=False):
    allow_all: bool
    allow_all_until: float | None
    categories: dict[str, str | None]
    tools: dict[str, str]


class PolicyView(TypedDict, total=False):
    policy: Policy
    known: bool
    device_online: bool
    updated_at: str | None
    categories: dict[str, list[str]]  # category → the tools in it


class PolicyChanges(TypedDict, total=False):
    """``PATCH /api/sessions/{id}/policy``: only the rules named change (``None`` drops one)."""

    reset: Literal[True]
    allow_all: bool
    allow_all_for: float | str
    categories: dict[str, str | None]
    tools: dict[str, str | None]


class RetentionStage(TypedDict, total=False):
    stage: str
    archive_at: str | None
    delete_at: str | None


class RetentionSettings(TypedDict, total=False):
    archive_after_days: float
    delete_after_days: float
    retention_interval: float


class RunItem(TypedDict, total=False):
    session_id: str
    title: str | None
    idle_days: float
    mac: str
    error: str


class RetentionCounts(TypedDict, total=False):
    active: int
    archived: int
    pinned: int


class RetentionReport(TypedDict, total=False):
    summary: str
    archived: list[RunItem]
    restored: list[RunItem]
    deleted: list[RunItem]
    failed: list[RunItem]
    counts: RetentionCounts
    kept_pinned: int
    kept_working: list[str]


class LastRun(TypedDict, total=False):
    ran_at: str | None
    trigger: str
    summary: str


class Archived(TypedDict, total=False):
    session_id: str
    archived_at: str | None
    delete_at: str | None


class WaitingDeletion(TypedDict, total=False):
    session_id: str
    device_id: str | None
    deleted_at: str | None


class RetentionView(TypedDict, total=False):
    """``GET /api/retention`` and ``POST /api/retention/run`` (which adds ``report``)."""

    settings: RetentionSettings
    next_run_at: str | None
    last_run: LastRun | None
    archived: list[Archived]
    pinned: list[str]
    waiting_for_mac: list[WaitingDeletion]
    report: RetentionReport | None


class AuditQuery(TypedDict, total=False):
    session_id: str
    since: str
    until: str
    before: int | str
    limit: int


class AuditWho(TypedDict, total=False):
    phone_id: str
    name: str | None
    token_id: str
    address: str | None


class AuditCard(TypedDict, total=False):
    id: str
    kind: str
    tool: str | None
    title: str | None
    input_digest: str | None
    summary: str | None


class AuditAnswer(TypedDict, total=False):
    decision: str
    keys: list[str]
    labels: list[str | None]
    text: str | None
    always: bool


class AuditEntry(TypedDict, total=False):
    source: str
    rule: str | None
    who: AuditWho | None
    device_id: str | None
    session_id: str
    card: AuditCard
    answer: AuditAnswer
    at: str | None


class AuditPage(TypedDict, total=False):
    entries: list[AuditEntry]
    next_before: int | str | None


# -- the client ----------------------------------------------------------------------------------


class RelayClient:
    """The relay's phone API with a phone token; every error becomes an ApiError or CommandError."""

    def __init__(self, url: str, token: str, *, read_only: bool, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"}
        if read_only:
            headers[READ_ONLY_HEADER] = "1"
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The decoded JSON answer (its shape is the route's), or the error as a CommandError."""
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise CommandError(
                f"cannot reach the relay at {self.url}: {exc}",
                "is it running? Pass --relay URL or set CB_RELAY",
            ) from None
        if response.status_code < 400:
            return response.json()
        try:
            error = dict(response.json()["error"])
            code, message = str(error.pop("code")), str(error.pop("message"))
        except (ValueError, KeyError, TypeError):
            error, code = {}, "http_error"
            message = f"HTTP {response.status_code} from the relay"
        hint = PAIR_HINT if response.status_code == 401 else _HINTS.get(code, "")
        raise ApiError(response.status_code, code, f"{message} ({code})", hint, **error)

    # sessions

    def sessions(self) -> list[SessionSnapshot]:
        listed: list[SessionSnapshot] = self._call("GET", "/api/sessions")["sessions"]
        return listed

    def session(self, session_id: str) -> SessionSnapshot | None:
        """The session's snapshot, or None when the relay has no session with that id."""
        try:
            found: SessionSnapshot = self._call("GET", _session_path(session_id))
        except ApiError as exc:
            if exc.status == 404 and exc.code == "unknown_session":
                return None
            raise
        return found

    def create_session(
        self,
        device_id: str,
        cwd: str,
        session_id: str | None = None,
        *,
        prompt: str | None = None,
        permission_mode: str | None = None,
        model: str | None = None,
        worktree: bool | str | None = None,
    ) -> SessionSnapshot:
        """``POST /api/sessions``: the new session's snapshot (its ``id`` first)."""
        asked = {
            "device_id": device_id,
            "cwd": cwd,
            "session_id": session_id,
            "prompt": prompt,
            "permission_mode": permission_mode,
            "model": model,
            "worktree": worktree,
        }
        body = {key: value for key, value in asked.items() if value is not None}
        created = self._call("POST", "/api/sessions", json=body)
        session: SessionSnapshot = created.get("session") or SessionSnapshot()
        session["id"] = str(created["id"])
        return session

    def fork(
        self,
        session_id: str,
        *,
        prompt: str | None = None,
        permission_mode: str | None = None,
        model: str | None = None,
    ) -> SessionSnapshot:
        """``POST /api/sessions/{id}/fork``: the fork's snapshot (a new id, the same history)."""
        asked = {"prompt": prompt, "permission_mode": permission_mode, "model": model}
        body = {key: value for key, value in asked.items() if value is not None}
        created = self._call("POST", f"{_session_path(session_id)}/fork", json=body)
        session: SessionSnapshot = created["session"]
        return session

    def delete(self, session_id: str) -> Deleted:
        """``DELETE /api/sessions/{id}``: ended and deleted on the relay and its Mac."""
        done: Deleted = self._call("DELETE", _session_path(session_id))
        return done

    def move(self, session_id: str, device_id: str, *, cwd: str | None, when: str) -> Move:
        """``POST /api/sessions/{id}/move``: the move, begun (its progress: ``move_status``)."""
        body = {"device_id": device_id, "when": when} | ({"cwd": cwd} if cwd else {})
        begun: Move = self._call("POST", f"{_session_path(session_id)}/move", json=body)["move"]
        return begun

    def move_status(self, session_id: str) -> Move:
        """``GET /api/sessions/{id}/move``: the session's latest move."""
        found: Move = self._call("GET", f"{_session_path(session_id)}/move")["move"]
        return found

    def send(self, session_id: str, text: str) -> None:
        self._call("POST", f"{_session_path(session_id)}/messages", json={"text": text})

    def reopen(self, session_id: str, scope: str | None = None) -> str:
        """Start a stopped session again (``scope``: this once); the scope it used."""
        body = {"scope": scope} if scope else None
        answer = self._call("POST", f"{_session_path(session_id)}/reopen", json=body)
        return str(answer.get("scope") or "full") if isinstance(answer, dict) else "full"

    def rename(self, session_id: str, title: str) -> SessionSnapshot:
        renamed: SessionSnapshot = self._call(
            "PATCH", _session_path(session_id), json={"title": title}
        )
        return renamed

    def automatic_title(self, session_id: str) -> SessionSnapshot:
        """Forget a person's title: the automatic one shows again."""
        renamed: SessionSnapshot = self._call("DELETE", f"{_session_path(session_id)}/title")
        return renamed

    def devices(self) -> list[Device]:
        listed: list[Device] = self._call("GET", "/api/devices")["devices"]
        return listed

    # events

    def events(
        self,
        session_id: str,
        *,
        after: int | None = None,
        before: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> EventsPage:
        return self._page(f"{_session_path(session_id)}/events", after, before, limit, epoch)

    def subagent_events(
        self, session_id: str, agent_id: str, *, after: int, epoch: str | None = None
    ) -> EventsPage:
        path = f"{_session_path(session_id)}/subagents/{quote(agent_id, safe='')}/events"
        return self._page(path, after, None, None, epoch)

    def _page(
        self, path: str, after: int | None, before: int | None, limit: int | None, epoch: str | None
    ) -> EventsPage:
        asked = {"after": after, "before": before, "limit": limit, "epoch": epoch}
        params = {name: value for name, value in asked.items() if value is not None}
        page: EventsPage = self._call("GET", path, params=params)
        return page

    def subagents(self, session_id: str) -> list[SubagentSummary]:
        listed: list[SubagentSummary] = self._call("GET", f"{_session_path(session_id)}/subagents")[
            "subagents"
        ]
        return listed

    # features

    def search(self, query: SearchQuery) -> SearchResults:
        found: SearchResults = self._call("GET", "/api/search", params=dict(query))
        return found

    def cost(self, session_id: str) -> CostReport:
        report: CostReport = self._call("GET", f"{_session_path(session_id)}/cost")
        return report

    def decisions(self, session_id: str) -> dict[str, Any]:
        """The session's decisions ledger (GET /api/sessions/{id}/decisions)."""
        found: dict[str, Any] = self._call("GET", f"{_session_path(session_id)}/decisions")
        return found

    def add_constraint(self, session_id: str, text: str) -> dict[str, Any]:
        made: dict[str, Any] = self._call(
            "POST", f"{_session_path(session_id)}/constraints", json={"text": text}
        )
        return made

    def remove_constraint(self, session_id: str, constraint_id: str) -> None:
        self._call("DELETE", f"{_session_path(session_id)}/constraints/{constraint_id}")

    def policy(self, session_id: str) -> PolicyView:
        view: PolicyView = self._call("GET", f"{_session_path(session_id)}/policy")
        return view

    def change_policy(self, session_id: str, changes: PolicyChanges) -> PolicyView:
        view: PolicyView = self._call("PATCH", f"{_session_path(session_id)}/policy", json=changes)
        return view

    def pin(self, session_id: str, *, pinned: bool) -> RetentionStage:
        action = "pin" if pinned else "unpin"
        view: RetentionStage = self._call("POST", f"{_session_path(session_id)}/{action}")
        return view

    def retention(self) -> RetentionView:
        view: RetentionView = self._call("GET", "/api/retention")
        return view

    def run_retention(self) -> RetentionView:
        view: RetentionView = self._call("POST", "/api/retention/run")
        return view

    def audit(self, query: AuditQuery) -> AuditPage:
        page: AuditPage = self._call("GET", "/api/audit", params=dict(query))
        return page

    def report(self, since: str | None, until: str | None) -> dict[str, Any]:
        """The usage report (relay/features/report.py): its JSON as the relay sent it."""
        params = {k: v for k, v in (("since", since), ("until", until)) if v}
        body: dict[str, Any] = self._call("GET", "/api/report", params=params)
        return body

    def page_link(self, session_id: str, *, read_only: bool = False) -> str:
        return f"{self.url}/#/s/{quote(session_id, safe='')}" + ("/read" if read_only else "")


def _session_path(session_id: str) -> str:
    return f"/api/sessions/{quote(session_id, safe='')}"


# -- paged histories ---------------------------------------------------------------------------


def every_page(
    fetch: Callable[[int, str | None], EventsPage], note: Callable[[str], None]
) -> list[Event]:
    """Every event of a paged history (a session's or a subagent's), forwards from the start:
    ``fetch(after, epoch)`` reads one page (as large as the relay gives)."""
    events: list[Event] = []
    after = 0
    epoch: str | None = None
    while True:
        try:
            page = fetch(after, epoch)
        except ApiError as exc:
            oldest = exc.details.get("oldest_seq")
            if exc.code != "history_unavailable" or not isinstance(oldest, int) or after >= oldest:
                raise
            note(
                f"(events before #{oldest} are kept only on the Mac, which is offline; "
                "showing what the relay keeps)"
            )
            after = int(oldest) - 1
            continue
        epoch = page["epoch"]
        events.extend(page["events"])
        if not page["has_more"] or not page["events"]:
            return events
        after = page["events"][-1]["seq"]


def whole_conversation(
    relay: RelayClient, session_id: str, note: Callable[[str], None]
) -> list[Event]:
    """Every event of the session, a page at a time; older parts the relay cannot reach (the Mac
    is offline) are skipped with a note instead of failing the whole read."""
    return every_page(lambda after, epoch: relay.events(session_id, after=after, epoch=epoch), note)
