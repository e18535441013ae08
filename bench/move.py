"""Moving a session between two Macs: the time a move takes with a ~50 MB git repository, and the
bytes it carries through the relay.

Two agents on this machine, each with its own HOME, data folder and tmux socket (two Macs), one
relay, the real Claude Code against the tests' fake API. The repository is the one
bench/foldersync.py makes (text and incompressible files over several commits, staged, unstaged
and untracked changes, a ``node_modules`` that never travels). A session is started on the first
Mac in it and answered; then it is moved to the second Mac (``when: idle``) into a new folder, and
timed from the ``POST …/move`` to the move's ``done``, with the time of each step from its
progress. Printed: the repository's size, the bytes carried, the time in all and per step, and
the throughput.

    .venv/bin/python -m bench.move [--mb 50] [--chunk-kb 512]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from bench._common import log
from bench.foldersync import make_repository
from tests.support.bridge import Bridge, claude_binary, fake_api, seed_home
from tests.support.journeys import start_session, wait_answered
from tests.support.relay import RelayServer

E2E = Path(__file__).resolve().parent.parent / "tests" / "e2e"
MB = 1_000_000


def du(path: Path, skip: str = "") -> int:
    return sum(
        p.stat().st_size
        for p in path.rglob("*")
        if p.is_file() and not p.is_symlink() and (not skip or skip not in p.parts)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=50, help="size of the repository (MB)")
    parser.add_argument("--chunk-kb", type=int, default=512, help="move_chunk_bytes, in KiB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cb-bench-move-") as tmp:
        root = Path(tmp)
        relay = RelayServer(root / "relay", move_chunk_bytes=args.chunk_kb * 1024).start()
        macs: list[Bridge] = []
        try:
            with fake_api(root / "api.log") as api:
                account = relay.account()
                token, _, device_id = relay.state.store.create_token(
                    account.account_id, "device", "Laptop"
                )
                other = replace(account, device_token=token, device_id=device_id)
                claude = claude_binary()
                a = Bridge(relay, account, root / "a", claude, api)
                b = Bridge(relay, other, root / "b", claude, api)
                macs += [a, b]
                for mac in macs:
                    seed_home(mac.home, [])
                    mac.start_agent()
                log(f"making a git repository of about {args.mb} MB")
                made = make_repository(a.root / "repo", args.mb)
                cwd = a.folder("repo")  # and trusted by that Mac's Claude Code
                size = du(Path(cwd))
                travels = size - du(Path(cwd) / "node_modules")
                with a.phone() as phone:
                    session_id = start_session(phone, a, cwd, prompt="hello from the studio")
                    wait_answered(phone, session_id)
                    target = str(Path(b.root, "repo-here"))
                    log("moving the session to the other Mac")
                    started = time.perf_counter()
                    answer = phone.post(
                        f"/api/sessions/{session_id}/move",
                        json={"device_id": device_id, "cwd": target},
                    )
                    answer.raise_for_status()
                    steps: dict[str, float] = {}
                    last_step, since = "", started
                    while True:
                        move = phone.get(f"/api/sessions/{session_id}/move").json()["move"]
                        now = time.perf_counter()
                        if move["step"] != last_step:
                            if last_step:
                                steps[last_step] = steps.get(last_step, 0) + now - since
                            last_step, since = move["step"], now
                        if move["phase"] in ("done", "failed"):
                            break
                        if now - started > 600:
                            raise SystemExit("the move did not end within 10 minutes")
                        time.sleep(0.05)
                    took = time.perf_counter() - started
                if move["phase"] != "done":
                    raise SystemExit(f"the move failed: {move['error']}")
                carried = int(move["total"])
                print(f"\nrepository: {size / MB:.1f} MB on disk ({travels / MB:.1f} MB without "
                      f"node_modules; {made['tree bytes'] / MB:.1f} MB tree, "
                      f"{made['git objects bytes'] / MB:.1f} MB of git objects)")  # fmt: skip
                print(f"moved in {took:.2f} s, {carried / MB:.1f} MB carried through the relay "
                      f"({carried / MB / took:.1f} MB/s overall, chunks of {args.chunk_kb} KiB)")  # fmt: skip
                for step, seconds in steps.items():
                    print(f"  {step:<10} {seconds:6.2f} s")
        finally:
            for mac in macs:
                mac.stop_agent()
                mac.kill_tmux()
            relay.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
