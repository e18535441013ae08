"""agent/registry.py: the agent's record of its sessions (held messages kept, a damaged file put aside
with a clear error) and which sessions a reboot revives."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent import held
from agent.registry import Registry, RegistryDamaged, SessionRecord, revive_candidates


def test_registry_round_trip_keeps_held_messages(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "sessions.json")
    record = SessionRecord(id="s1", cwd="/w", created_at=1.0)
    record.held.append(held.new_message("later please", now=2.0))
    record.acked["conv"] = 120
    registry.add(record)
    loaded = Registry(tmp_path / "sessions.json").load()
    again = loaded.sessions["s1"]
    assert again.held[0].text == "later please" and again.acked == {"conv": 120}


def test_a_damaged_registry_is_kept_aside_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text("{not json")
    with pytest.raises(RegistryDamaged, match="kept as"):
        Registry(path).load()
    assert any(p.name.startswith("sessions.broken-") for p in tmp_path.iterdir())


def test_revive_picks_the_newest_five_alive_within_twelve_hours() -> None:
    now = time.time()
    records = [
        SessionRecord(id=f"s{i}", cwd="/w", created_at=0, last_alive_at=now - i * 600)
        for i in range(8)
    ]
    records.append(SessionRecord(id="old", cwd="/w", created_at=0, last_alive_at=now - 13 * 3600))
    records.append(
        SessionRecord(id="ended", cwd="/w", created_at=0, last_alive_at=now, ended_by_person=True)
    )
    chosen = revive_candidates(records, now, window_hours=12, limit=5)
    assert [r.id for r in chosen] == ["s0", "s1", "s2", "s3", "s4"]


def test_revive_breaks_a_tie_of_last_alive_by_creation() -> None:
    now = time.time()  # all six alive until the reboot: saved alive at the same moment
    records = [
        SessionRecord(id=f"c{i}", cwd="/w", created_at=now - 3600 + i * 60, last_alive_at=now)
        for i in (3, 0, 5, 1, 4, 2)
    ]
    chosen = revive_candidates(records, now, window_hours=12, limit=5)
    assert [r.id for r in chosen] == ["c5", "c4", "c3", "c2", "c1"]
