"""Settings: one table, every setting documented, environment overrides, clear errors."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import REPO
from wire import config

README = REPO / "README.md"


def test_every_setting_is_in_the_readme_table() -> None:
    text = README.read_text()
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", text, flags=re.M))
    missing = [s.name for s in config.SETTINGS if s.name not in documented]
    assert not missing, f"settings missing from README's configuration table: {missing}"


def test_spec_timings_have_their_defaults() -> None:
    cfg = config.load(environ={})
    assert (cfg.float("transcript_read_interval"), cfg.float("screen_read_interval")) == (0.7, 1.5)
    assert (cfg.float("preview_read_interval"), cfg.float("missed_hook_close")) == (0.7, 15.0)
    assert (cfg.float("revive_window_hours"), cfg.int("revive_max")) == (12.0, 5)
    assert cfg.float("held_after_revive") == 2.5
    assert (cfg.float("model_switch_window"), cfg.int("events_kept")) == (30.0, 1000)
    assert cfg.int("catchup_page") == 500
    assert cfg.str("host") == "127.0.0.1"


def test_every_setting_has_help_and_a_single_declaration() -> None:
    names = [s.name for s in config.SETTINGS]
    assert len(names) == len(set(names))
    assert all(s.help.strip() and s.part in {"relay", "agent", "both"} for s in config.SETTINGS)


def test_environment_then_overrides_win() -> None:
    cfg = config.load({"port": 9001}, environ={"CB_PORT": "9000", "CB_EVENTS_KEPT": "20"})
    assert cfg.int("port") == 9001
    assert cfg.int("events_kept") == 20
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
        cfg.port = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", "1e999"])
def test_a_non_finite_number_is_refused_with_the_setting_named(raw: str) -> None:
    with pytest.raises(config.ConfigError, match=r"CB_PUSH_TIMEOUT\) wants a finite number"):
        config.load(environ={"CB_PUSH_TIMEOUT": raw})
    with pytest.raises(config.ConfigError, match="push_timeout"):
        config.load({"push_timeout": float(raw)}, environ={})


def test_typed_reads_check_the_declared_type() -> None:
    cfg = config.load({"port": 9001}, environ={})
    assert cfg.int("port") == 9001 and cfg.float("pair_code_ttl") == 600.0
    assert cfg.str("host") == "127.0.0.1"
    with pytest.raises(config.ConfigError, match="setting port is a whole number, not text"):
        cfg.str("port")
    with pytest.raises(config.ConfigError, match="unknown setting 'colour'"):
        cfg.int("colour")


def test_every_typed_read_in_the_code_names_a_setting_of_that_type() -> None:
    kinds = {"int": int, "float": float, "str": str, "bool": bool}
    declared = {s.name: type(s.default) for s in config.SETTINGS}
    read = re.compile(
        r"""(?:config|cfg|_config\(args\))\.(int|float|str|bool)\(\s*["']([a-z_]+)["']"""
    )
    root = README.parent
    wrong = []
    for path in sorted(
        p
        for part in ("agent", "cli", "relay", "wire", "bench")
        for p in (root / part).rglob("*.py")
    ):
        for kind, name in read.findall(path.read_text()):
            if declared.get(name) is not kinds[kind]:
                wrong.append(f"{path.relative_to(root)}: config.{kind}({name!r})")
    assert not wrong, wrong


def test_the_version_is_written_once() -> None:
    import wire

    root = README.parent
    pyproject = (root / "pyproject.toml").read_text()
    declared = re.search(r'^version = "([^"]+)"', pyproject, flags=re.M)
    assert declared is not None
    assert wire.__version__ == declared.group(1)
    again = [
        str(path.relative_to(root))
        for part in ("agent", "cli", "relay", "wire")
        for path in (root / part).rglob("*.py")
        if f'"{declared.group(1)}"' in path.read_text()
    ]
    assert not again, f"the version is written again in {again}: use wire.__version__"
