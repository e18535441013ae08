"""Search: how fast the relay answers GET /api/search over 10,000 sessions.

The relay's database is filled before the relay starts, in this process, through the store's
real ingest path with the real observers (relay/features/titles.py and
relay/features/search.py), so titles, summaries, files, tools, Macs, folders and dates are indexed
exactly as in use. The sessions are
generated to look like a person's year of work: 4 Macs, 40 projects, 1–5 turns each with tool
calls on project files, some Claude Code titles (custom-title / ai-title), some compactions, and
creation dates spread over the last 180 days.

Then the relay runs as its own process (``claude-bridge relay``) and one keep-alive HTTP client
sends 200 searches one after another, as a phone would: single words, two words, word prefixes,
file names, field terms (``tool:``, ``mac:``, ``folder:``, ``date:``), "this Mac / this folder"
splits, state and group filters, and a few browses (empty query). Each is timed from request to
parsed JSON.

    .venv/bin/python -m bench.search_speed [--sessions 10000] [--queries 200] [--quick]
        [--database-url postgresql://user@host:port/empty_db]   (on PostgreSQL)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    RelayProcess,
    Row,
    install_signal_cleanup,
    log,
    markdown_table,
    percentile,
)
from wire.protocol import LineRecord

GOAL_P95_SECONDS = 0.050
SEED = 20261129

MACS = ("Studio", "MacBook Air", "Mac mini", "Work MBP")
PROJECTS = [
    "billing-api",
    "ios-app",
    "web-shop",
    "infra",
    "data-pipeline",
    "claude-bridge",
    "auth-service",
    "search-ui",
    "mobile-sync",
    "notifications",
    "analytics",
    "admin-portal",
    "payments",
    "docs-site",
    "ml-ranker",
    "etl-jobs",
    "chat-widget",
    "feature-flags",
    "email-service",
    "crm-sync",
    "geo-service",
    "media-upload",
    "rate-limiter",
    "video-transcode",
    "pdf-export",
    "audit-log",
    "sso-gateway",
    "inventory",
    "pricing-engine",
    "recommender",
    "cli-tools",
    "design-system",
    "devops-scripts",
    "k8s-config",
    "terraform-modules",
    "observability",
    "load-tester",
    "fuzz-harness",
    "release-bot",
]
MODULES = [
    "api",
    "auth",
    "billing",
    "db",
    "jobs",
    "ui",
    "utils",
    "models",
    "views",
    "tests",
    "handlers",
    "workers",
    "cache",
]
NAMES = [
    "client",
    "server",
    "session",
    "store",
    "export",
    "import",
    "refund",
    "invoice",
    "webhook",
    "retry",
    "limiter",
    "parser",
    "router",
    "schema",
    "migration",
    "queue",
    "scheduler",
    "token",
    "user",
    "account",
    "report",
    "search",
    "index",
    "upload",
    "download",
    "config",
    "logger",
    "metrics",
    "cache_layer",
    "serializer",
    "validator",
]
VERBS = [
    "fix",
    "add",
    "refactor",
    "investigate",
    "write",
    "tests",
    "for",
    "document",
    "speed",
    "up",
    "migrate",
    "remove",
    "rename",
    "review",
    "debug",
    "simplify",
]
SUBJECTS = [
    "login flow",
    "rate limiter",
    "CSV export",
    "webhook retries",
    "search index",
    "dark mode",
    "push notifications",
    "payment refunds",
    "invoice PDFs",
    "session timeout",
    "password reset",
    "image uploads",
    "billing cycle",
    "feature flags",
    "audit trail",
    "SSO redirect",
    "cache invalidation",
    "flaky CI tests",
    "memory leak",
    "slow dashboard",
    "timezone bug",
    "email templates",
    "API pagination",
    "retry backoff",
    "database migration",
    "deploy script",
    "error reporting",
    "onboarding wizard",
    "currency rounding",
    "GraphQL schema",
]
TOOLS = ("Read", "Edit", "Write", "Bash", "Grep", "Glob", "WebFetch", "TodoWrite", "Task")
GREETINGS = ("hi", "hello there", "hey", "good morning", "thanks!", "ok continue", "yes")


# -- generated sessions --------------------------------------------------------------------------


@dataclass
class World:
    """What the generator made, for building realistic queries afterwards."""

    account_id: str = ""
    devices: dict[str, str] = field(default_factory=dict)  # name → id
    cwds: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    days: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)


class Lines:
    """One conversation's lines, shaped as Claude Code writes them."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.conversation = str(uuid.UUID(int=rng.getrandbits(128)))
        self.offset = 0
        self.out: list[Any] = []

    def add(self, body: dict[str, Any]) -> None:
        body.setdefault("sessionId", self.conversation)
        line_uuid = None
        if body["type"] in ("user", "assistant", "system"):
            line_uuid = body["uuid"] = str(uuid.UUID(int=self.rng.getrandbits(128)))
            body["timestamp"] = "2026-11-29T21:33:53.764Z"
        self.offset += len(json.dumps(body)) + 1
        self.out.append(LineRecord(offset=self.offset, text=json.dumps(body), uuid=line_uuid))

    def user(self, text: str, **extra: Any) -> None:
        self.add({"type": "user", "message": {"role": "user", "content": text}, **extra})

    def assistant(self, block: dict[str, Any]) -> None:
        message_id = f"msg_{self.rng.getrandbits(64):016x}"
        message = {"id": message_id, "role": "assistant", "model": "claude-sonnet-4-5"}
        self.add({"type": "assistant", "message": {**message, "content": [block]}})


def make_session(rng: random.Random, cwd: str) -> list[Any]:
    """1–5 turns of work on one project."""
    lines = Lines(rng)
    subject = rng.choice(SUBJECTS)
    files = [f"{cwd}/src/{rng.choice(MODULES)}/{rng.choice(NAMES)}.py" for _ in range(4)]
    if rng.random() < 0.3:
        lines.user(rng.choice(GREETINGS))
    roll = rng.random()
    if roll < 0.15:
        lines.add({"type": "custom-title", "customTitle": f"{subject} ({cwd.rsplit('/', 1)[-1]})"})
    elif roll < 0.40:
        lines.add({"type": "ai-title", "aiTitle": f"{rng.choice(VERBS).title()} {subject}"})
    for turn in range(rng.randint(1, 5)):
        if turn and rng.random() < 0.05:
            summary = (
                "Summary:\n1. Primary Request and Intent:\n   The user asked to "
                f"{rng.choice(VERBS)} the {subject}.\n2. Current Work:\n   Editing "
                f"{files[0].rsplit('/', 1)[-1]}.\n\nIf you need specific details from before "
                "compaction, read the transcript."
            )
            lines.add({"type": "system", "subtype": "compact_boundary", "content": "compacted"})
            lines.user(summary, isCompactSummary=True)
        verb = rng.choice(VERBS)
        target = rng.choice(files).rsplit("/", 1)[-1]
        prompt = f"{verb} the {subject} in {target}" if turn == 0 else f"now {verb} {target}"
        if rng.random() < 0.1:
            prompt += "\n2026-11-29 10:00:01 ERROR something failed\nTraceback (most recent call)"
        lines.user(prompt)
        for _ in range(rng.randint(1, 4)):
            tool = rng.choice(TOOLS)
            tool_input: dict[str, Any] = {"file_path": rng.choice(files)}
            if tool == "Bash":
                tool_input = {"command": "pytest -q", "description": "run the tests"}
            elif tool == "WebFetch":
                tool_input = {"url": "https://docs.example.com/api", "prompt": "read"}
            block = {"type": "tool_use", "id": f"toolu_{rng.getrandbits(64):016x}"}
            lines.assistant({**block, "name": tool, "input": tool_input})
        answer = f"I changed {target} so the {subject} works again. The tests pass."
        lines.assistant({"type": "text", "text": answer})
        lines.add({"type": "system", "subtype": "stop_hook_summary", "hookCount": 0})
        lines.add({"type": "system", "subtype": "turn_duration", "durationMs": 4200})
    return list(lines.out)


async def _fill(data_dir: Path, sessions: int, rng: random.Random, database_url: str = "") -> World:
    from relay.features import search, titles
    from relay.store import Store
    from wire import config as configmod

    settings = {"data_dir": str(data_dir), "database_url": database_url}
    store = Store(configmod.load(settings, environ={}))
    try:
        store.add_observer(titles.TitleObserver())
        store.add_observer(search.SearchIndex(store))
        world = World(account_id=store.ensure_account())
        for name in MACS:
            _, _, device_id = store.create_token(world.account_id, "device", name)
            world.devices[name] = device_id
        users = ("ada", "lin", "sam")
        world.cwds = [f"/Users/{rng.choice(users)}/code/{p}" for p in PROJECTS]
        world.groups = ["work", "side", "oss"]
        now = time.time()
        times: list[tuple[float, float, str]] = []

        async def one() -> None:
            cwd = rng.choice(world.cwds)
            if rng.random() < 0.2:
                cwd += f"/{rng.choice(MODULES)}"
            session_id = str(uuid.UUID(int=rng.getrandbits(128)))
            device_id = world.devices[rng.choice(MACS)]
            lines = make_session(rng, cwd)
            await store.ingest(world.account_id, device_id, session_id, "conv", lines, cwd=cwd)
            created = now - rng.uniform(0, 180) * 86400
            times.append((created, min(now, created + rng.uniform(0, 3) * 86400), session_id))

        started = time.perf_counter()
        for start in range(0, sessions, 200):
            await asyncio.gather(*(one() for _ in range(start, min(start + 200, sessions))))
            if start and start % 2000 == 0:
                log(f"[search] {start:,} sessions stored ({time.perf_counter() - started:.0f} s)")

        def spread(conn: Any) -> None:
            # Dates over the last 180 days, and their indexed text (as if stored back then).
            for created, updated, session_id in times:
                group = rng.choice([*world.groups, "", "", ""])
                conn.execute(
                    "UPDATE sessions SET created_at = ?, updated_at = ?, grp = ? WHERE id = ?",
                    (created, updated, group, session_id),
                )
                days = search.day_text(created)
                if search.day_text(updated) != days:
                    days += " " + search.day_text(updated)
                key = "doc_id" if conn.dialect.postgres else "rowid"
                conn.execute(
                    f"UPDATE session_fts SET date = ? WHERE {key} ="
                    " (SELECT doc_id FROM session_digest WHERE session_id = ?)",
                    (days, session_id),
                )

        await store.write(spread)
        world.days = sorted({search.day_text(c).split(" ")[0] for c, _, _ in times})
        world.files = [f"{n}.py" for n in NAMES]
        return world
    finally:
        store.close()


class FilledRelay(RelayProcess):
    """A relay whose database holds ``sessions`` generated sessions before it starts."""

    name = "relay-search"

    def __init__(self, sessions: int, database_url: str = "", **kw: Any) -> None:
        # On PostgreSQL: the relay, its tokens and the filling all use that (empty) database.
        super().__init__(env={"CB_DATABASE_URL": database_url} if database_url else None, **kw)
        self.sessions = sessions
        self.database_url = database_url
        self.world = World()
        self.fill_seconds = 0.0

    def prepare(self) -> None:
        super().prepare()  # device and phone tokens, in the default account
        log(f"[search] generating and storing {self.sessions:,} sessions")
        started = time.perf_counter()
        self.world = asyncio.run(
            _fill(self.data_dir, self.sessions, random.Random(SEED), self.database_url)
        )
        self.fill_seconds = time.perf_counter() - started


# -- queries ---------------------------------------------------------------------------------


def make_queries(world: World, count: int, rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    """(kind, query parameters) for ``count`` searches of the mix a person would type."""
    words = [w for s in SUBJECTS for w in s.lower().split() if len(w) > 3]
    macs = list(world.devices)
    out: list[tuple[str, dict[str, Any]]] = []
    kinds = (
        ["word"] * 30 + ["two words"] * 20 + ["prefix"] * 10 + ["file"] * 10 + ["field"] * 10
        + ["date"] * 5 + ["here"] * 10 + ["browse"] * 5
    )  # fmt: skip
    for _ in range(count):
        kind = rng.choice(kinds)
        params: dict[str, Any] = {"limit": 20}
        if kind == "word":
            params["q"] = rng.choice(words)
        elif kind == "two words":
            params["q"] = rng.choice(SUBJECTS)
        elif kind == "prefix":
            params["q"] = rng.choice(words)[:3]
        elif kind == "file":
            params["q"] = rng.choice(world.files)
        elif kind == "field":
            params["q"] = rng.choice(
                [f"tool:{rng.choice(TOOLS)}", f"mac:{rng.choice(macs).split()[0]}",
                 f"folder:{rng.choice(PROJECTS)}", f"file:{rng.choice(NAMES)} {rng.choice(words)}"]
            )  # fmt: skip
        elif kind == "date":
            params["q"] = f"date:{rng.choice(world.days)}"
        elif kind == "here":
            params["q"] = rng.choice(words)
            params["device_id"] = world.devices[rng.choice(macs)]
            params["cwd"] = rng.choice(world.cwds)
        else:
            params["q"] = ""
            params["cwd"] = rng.choice(world.cwds)
        if rng.random() < 0.1:
            params["state"] = "ended"
        if rng.random() < 0.1:
            params["group"] = rng.choice(world.groups)
        out.append((kind, params))
    return out


@dataclass
class SearchResult:
    sessions: int
    fill_seconds: float
    seconds: list[float]
    by_kind: dict[str, list[float]]
    hits: list[int]


def measure(sessions: int, queries: int, database_url: str = "") -> SearchResult:
    import httpx

    with FilledRelay(sessions, database_url, start_timeout=120) as relay:
        plan = make_queries(relay.world, queries, random.Random(SEED + 1))
        headers = {"Authorization": f"Bearer {relay.phone_token}"}
        seconds: list[float] = []
        by_kind: dict[str, list[float]] = {}
        hits: list[int] = []
        with httpx.Client(base_url=relay.url, headers=headers, timeout=30) as client:
            for _, params in plan[:10]:  # warm the connection and SQLite's page cache
                client.get("/api/search", params=params).raise_for_status()
            for kind, params in plan:
                started = time.perf_counter()
                response = client.get("/api/search", params=params)
                body = response.json()
                took = time.perf_counter() - started
                if response.status_code != 200:
                    raise RuntimeError(f"search {params} failed: {response.text[:300]}")
                seconds.append(took)
                by_kind.setdefault(kind, []).append(took)
                hits.append(len(body["here"]) + len(body["elsewhere"]))
    return SearchResult(sessions, relay.fill_seconds, seconds, by_kind, hits)


def report(result: SearchResult) -> list[Row]:
    p50 = percentile(result.seconds, 50)
    p95 = percentile(result.seconds, 95)
    p99 = percentile(result.seconds, 99)
    print(f"search over {result.sessions:,} sessions (stored and indexed in "
          f"{result.fill_seconds:.1f} s), {len(result.seconds)} queries over one HTTP/1.1 "
          f"keep-alive connection:")  # fmt: skip
    print(f"  p50 {p50 * 1000:.1f} ms   p95 {p95 * 1000:.1f} ms   p99 {p99 * 1000:.1f} ms   "
          f"max {max(result.seconds) * 1000:.1f} ms   (goal p95 <= {GOAL_P95_SECONDS * 1000:.0f} ms)")  # fmt: skip
    print(f"  results per query: median {statistics.median(result.hits):.0f} "
          f"(limit 20 per section), {sum(1 for h in result.hits if h == 0)} with none")  # fmt: skip
    counts = Counter({k: len(v) for k, v in result.by_kind.items()})
    for kind, _ in counts.most_common():
        values = result.by_kind[kind]
        print(f"  {kind:<10} x{len(values):<3} p50 {percentile(values, 50) * 1000:6.1f} ms   "
              f"p95 {percentile(values, 95) * 1000:6.1f} ms")  # fmt: skip
    return [
        Row(f"search over {result.sessions:,} sessions, p50", f"{p50 * 1000:.1f} ms"),
        Row(f"search over {result.sessions:,} sessions, p95", f"{p95 * 1000:.1f} ms",
            f"≤ {GOAL_P95_SECONDS * 1000:.0f} ms", p95 <= GOAL_P95_SECONDS),
    ]  # fmt: skip


def run(sessions: int = 10000, queries: int = 200, database_url: str = "") -> list[Row]:
    return report(measure(sessions, queries, database_url))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=10000, help="sessions indexed (10000)")
    parser.add_argument("--queries", type=int, default=200, help="timed searches (200)")
    parser.add_argument("--quick", action="store_true", help="1,000 sessions, 100 queries")
    parser.add_argument(
        "--database-url",
        default="",
        help="run on PostgreSQL: an empty database, postgresql://user@host:port/db (SQLite if unset)",
    )
    args = parser.parse_args(argv)
    install_signal_cleanup()
    sessions, queries = (1000, 100) if args.quick else (args.sessions, args.queries)
    rows = run(sessions, queries, args.database_url)
    print()
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
