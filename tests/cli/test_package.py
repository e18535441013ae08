"""The package as a person installs it: the wheel built from this checkout, installed into a fresh
virtualenv outside it, and the installed ``claude-bridge up`` run with the fake claude.

Nothing here reads the checkout at run time: the page, the pairing page and the hook command must
come from the wheel. The dependencies come through pip's ordinary index and cache.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from relay.static import WebApp
from relay.webfiles import WebFilesMissing, web_root
from tests.support.bridge import FAKE as FAKE_CLAUDE
from tests.support.bridge import seed_home
from tests.support.cli import output_until_started
from tests.support.paths import REPO
from tests.support.relay import free_port
from tests.support.waits import wait_for
from wire import __version__


def wheel_test(test: Callable[..., None]) -> Callable[..., None]:
    """A test on the built and installed wheel: slow (building and installing it take a minute
    or more on a busy machine, counted in the first test's time)."""
    return pytest.mark.slow(pytest.mark.timeout(900)(test))


LEFT_OUT = ("tests/", "bench/")  # what a wheel never needs from the clone


@dataclass
class Installed:
    wheel: Path
    venv: Path
    root: Path  # the throw-away folder outside the checkout

    @property
    def command(self) -> Path:
        return self.venv / "bin" / "claude-bridge"


def tracked_files() -> list[str]:
    """The files a clone has (tracked, plus new ones not ignored), as paths from the root."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [name for name in out.splitlines() if (REPO / name).is_file()]


def repo_page_files() -> set[str]:
    """The page's files in the checkout, as the wheel must name them."""
    return {
        name
        for name in tracked_files()
        if name.startswith("web/") and not name.endswith(".py")  # the icon drawing script
    }


def run(argv: list[str], what: str, **kwargs: object) -> float:
    started = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{what} failed:\n{result.stdout}\n{result.stderr}"
    return time.monotonic() - started


def test_the_page_is_the_web_package_and_a_folder_without_it_is_refused(tmp_path: Path) -> None:
    assert web_root() == REPO / "web"  # this checkout, installed editable
    with pytest.raises(WebFilesMissing, match=r"has no index\.html and no pair\.html"):
        web_root(str(tmp_path))
    (tmp_path / "index.html").write_text("<!doctype html>")
    with pytest.raises(WebFilesMissing, match=r"has no pair\.html$"):
        web_root(str(tmp_path))
    (tmp_path / "pair.html").write_text("<!doctype html>")
    assert web_root(str(tmp_path)) == tmp_path


def test_a_relay_without_its_page_stops_at_start_and_says_why(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["CB_WEB_DIR"] = str(tmp_path)  # an install whose page went missing
    result = subprocess.run(
        [sys.executable, "-m", "cli", "relay", "--data", str(tmp_path / "relay"),
         "--port", str(free_port())],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result
    assert result.stderr.startswith(
        f"claude-bridge: the control page's folder {tmp_path} (setting web_dir, CB_WEB_DIR) "
        "has no index.html and no pair.html\n  → reinstall claude-bridge"
    ), result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("package")
    assert not root.resolve().is_relative_to(REPO)
    source = root / "src"  # a copy, so the build leaves no build/ or egg-info in the checkout
    for name in tracked_files():
        if not name.startswith(LEFT_OUT):
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    dist = root / "dist"
    took = run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(dist),
            str(source),
        ],
        "building the wheel",
    )
    (wheel,) = dist.glob("claude_bridge-*.whl")
    print(f"\nwheel {wheel.name}: {wheel.stat().st_size:,} bytes, built in {took:.1f} s")
    venv = root / "venv"
    run([sys.executable, "-m", "venv", str(venv)], "creating the virtualenv")
    took = run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        "installing the wheel",
        cwd=root,
    )
    print(f"installed with its dependencies in {took:.1f} s")
    yield Installed(wheel, venv, root)


@wheel_test
def test_the_wheel_carries_the_page_and_the_hook_command(
    installed: Installed, record_property: Callable[[str, object], None]
) -> None:
    size = installed.wheel.stat().st_size
    record_property("wheel_bytes", size)
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
        hook = wheel.getinfo("hooks/cb-hook")
        assert wheel.read("hooks/cb-hook") == (REPO / "hooks" / "cb-hook").read_bytes()
        assert wheel.read("web/index.html") == (REPO / "web" / "index.html").read_bytes()
    page = repo_page_files()
    assert {"web/index.html", "web/pair.html", "web/sw.js", "web/icons/icon-192.png"} <= page
    assert any(name.startswith("web/js/") for name in page)
    assert page - names == set(), "page files left out of the wheel"
    assert (hook.external_attr >> 16) & 0o111, "the hook command lost its execute bit"
    assert not any(name.startswith(("tests/", "bench/", ".venv/")) for name in names)
    assert size < 1_000_000, f"the wheel grew to {size:,} bytes"


@wheel_test
def test_installed_version_and_parts_come_from_the_venv(installed: Installed) -> None:
    version = subprocess.run(
        [str(installed.command), "--version"],
        capture_output=True, text=True, timeout=60, cwd=installed.root, check=True,
    )  # fmt: skip
    assert version.stdout.startswith(f"claude-bridge {__version__}\ntested with Claude Code ")
    where = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c",
         "from relay.webfiles import web_root; from agent.hooksettings import hook_command_path;"
         "print(web_root()); print(hook_command_path())"],
        capture_output=True, text=True, timeout=60, cwd=installed.root, check=True,
        env={k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "CB_WEB_DIR"}},
    )  # fmt: skip
    web, hook = (Path(line) for line in where.stdout.split())
    site = installed.venv / "lib"
    assert web.is_relative_to(site) and hook.is_relative_to(site), where.stdout
    assert not web.is_relative_to(REPO) and not hook.is_relative_to(REPO)


def claude_argv(session_id: str) -> list[str]:
    """The command line of the running (fake) claude of ``session_id``, read from /proc."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [w.decode(errors="replace") for w in argv if w]
        if "--settings" in words and session_id in words:
            return words
    return []


@wheel_test
def test_installed_up_serves_the_page_and_runs_the_packaged_hook(installed: Installed) -> None:
    root = installed.root / "up"
    home, tmux_dir, agent_dir, work = root / "home", root / "tmux", root / "agent", root / "work"
    for folder in (home, tmux_dir, work):
        folder.mkdir(parents=True)
    tmux_dir.chmod(0o700)
    seed_home(home, [os.path.realpath(work)])
    port, socket_name = free_port(), "cbpkg"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_") and k != "PYTHONPATH"}
    env.update(HOME=str(home), TMUX_TMPDIR=str(tmux_dir))
    up = subprocess.Popen(
        [str(installed.command), "up", "--data", str(root / "relay"), "--agent-data",
         str(agent_dir), "--port", str(port), "--claude", FAKE_CLAUDE, "--socket", socket_name],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=root,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        text = output_until_started(up, 90)
        assert "local agent:  running claude 2.1.328" in text, text
        code = re.search(rf"open {re.escape(base)}/pair\.html#(\S+)", text)
        assert code is not None, text

        checkout_page = WebApp(REPO / "web")
        for path, name in (("/", "index.html"), ("/pair.html", "pair.html"),
                           ("/js/api.js", "js/api.js"), ("/icons/icon-192.png", "icons/icon-192.png")):  # fmt: skip
            page = httpx.get(base + path)
            assert page.status_code == 200, (path, page.status_code)
            # The relay sends each file as relay/static.py makes it of the checkout's own (the
            # same version in every address, so the same bytes only if every file is the same).
            assert page.content == checkout_page.files[name].body, path

        paired = httpx.post(f"{base}/api/pair", json={"code": code.group(1)})
        assert paired.status_code == 200, paired.text
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {paired.json()['token']}"}, timeout=30
        ) as phone:
            (mac,) = phone.get("/api/devices").json()["devices"]
            # "allow all" is answered by the hook before Claude Code draws its dialog: the
            # "Allowed by PermissionRequest hook" marker shows the packaged hook reached the
            # agent and brought its answer back.
            created = phone.post(
                "/api/sessions",
                json={"device_id": mac["id"], "cwd": os.path.realpath(work),
                      "prompt": "RUN_BASH now", "permission_mode": "manual",
                      "policy": {"allow_all": True}},
            )  # fmt: skip
            assert created.status_code == 201, created.text
            session_id = created.json()["id"]
            argv = wait_for(lambda: claude_argv(session_id), 30, "the session's claude")
            settings_file = Path(argv[argv.index("--settings") + 1])
            assert settings_file == agent_dir / "hooks.json"
            wait_for(lambda: (work / "bash_made.txt").exists(), 60, "the Bash command allowed")
            wait_for(
                lambda: phone.get(f"/api/sessions/{session_id}").json()["state"] == "idle",
                30,
                "the turn's end",
            )
            snapshot = phone.get(f"/api/sessions/{session_id}").json()
            assert snapshot["card"] is None  # never asked: the hook answered
            listed = phone.get(f"/api/sessions/{session_id}/events", params={"after": 0}).json()
            assert any(e.get("marker") == "hook_allowed" for e in listed["events"]), listed

        hooks = json.loads(settings_file.read_text())["hooks"]
        commands = {shlex.split(entry[0]["hooks"][0]["command"])[1] for entry in hooks.values()}
        (hook,) = commands
        hook_path = Path(hook)
        assert hook_path.is_relative_to(installed.venv / "lib"), hook
        assert not hook_path.resolve().is_relative_to(REPO)
        assert hook_path.read_bytes() == (REPO / "hooks" / "cb-hook").read_bytes()

        up.send_signal(signal.SIGINT)
        assert up.wait(30) == 0
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if up.stdout is not None:
            up.stdout.close()
        subprocess.run(
            ["tmux", "-L", socket_name, "kill-server"],
            capture_output=True, check=False, env=env,
        )  # fmt: skip
