"""Settings: one table, every setting documented, environment overrides, clear errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wire import config

README = Path(__file__).resolve().parent.parent / "README.md"


def test_every_setting_is_in_the_readme_table() -> None:
    text = README.read_text()
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.M))
    missing = [s.name for s in config.SETTINGS if s.name not in documented]
    assert not missing, f"settings missing from README's configuration table: {missing}"


def test_spec_timings_have_their_defaults() -> None:
    cfg = config.load(environ={})
    assert (cfg.transcript_read_interval, cfg.screen_read_interval) == (0.7, 1.5)
    assert (cfg.preview_read_interval, cfg.missed_hook_close) == (0.7, 15.0)
    assert (cfg.revive_window_hours, cfg.revive_max, cfg.held_after_revive) == (12.0, 5, 2.5)
    assert (cfg.model_switch_window, cfg.events_kept, cfg.catchup_page) == (30.0, 1000, 500)
    assert cfg.host == "127.0.0.1"


def test_every_setting_has_help_and_a_single_declaration() -> None:
    names = [s.name for s in config.SETTINGS]
    assert len(names) == len(set(names))
    assert all(s.help.strip() and s.part in {"relay", "agent", "both"} for s in config.SETTINGS)


def test_environment_then_overrides_win() -> None:
    cfg = config.load({"port": 9001}, environ={"CB_PORT": "9000", "CB_EVENTS_KEPT": "20"})
    assert cfg.port == 9001
    assert cfg.events_kept == 20
    assert cfg.base_url == "http://127.0.0.1:9001"
    assert cfg.replace(public_url="https://relay.example/").base_url == "https://relay.example"


def test_bad_values_and_unknown_names_are_clear_errors() -> None:
    with pytest.raises(
        config.ConfigError, match=r"events_kept \(CB_EVENTS_KEPT\) wants a whole number"
    ):
        config.load(environ={"CB_EVENTS_KEPT": "lots"})
    with pytest.raises(config.ConfigError, match="unknown setting 'colour'"):
        config.load({"colour": "blue"}, environ={})


def test_a_loaded_config_cannot_be_changed() -> None:
    cfg = config.load(environ={})
    with pytest.raises(AttributeError):
        cfg.port = 1  # type: ignore[misc]


@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", "1e999"])
def test_a_non_finite_number_is_refused_with_the_setting_named(raw: str) -> None:
    with pytest.raises(config.ConfigError, match=r"CB_PUSH_TIMEOUT\) wants a finite number"):
        config.load(environ={"CB_PUSH_TIMEOUT": raw})
    with pytest.raises(config.ConfigError, match="push_timeout"):
        config.load({"push_timeout": float(raw)}, environ={})
