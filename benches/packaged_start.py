#!/usr/bin/env python3
"""fake-pi's start as the packages ship it against the cargo-installed one, in one interleaved run.

    python3 benches/packaged_start.py PACKAGED_FAKE_PI CARGO_FAKE_PI [--runs N] [--max-ratio R]

Each binary is reached as the fixtures reach it: a link named ``pi`` first on a private PATH,
``FAKE_PI_CASSETTE`` at a tiny cassette (recorded/text_only.pi87: 16 stdout lines),
``FAKE_PI_SPEED=0``, an empty agent dir; the wrapper's call is ``pi --mode json --provider fake
--model fake-model "Say hello."``, stdout read to its end. The two alternate (A B B A ...), so
both see the same machine; the medians of the wall times, and their ratio (packaged / cargo), are
printed. With ``--max-ratio``, a ratio above it is exit 1. Standard library only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASSETTE = Path(__file__).resolve().parent.parent / "cassettes/recorded/text_only.pi87.cassette.jsonl"
ARGS = ["--mode", "json", "--provider", "fake", "--model", "fake-model", "Say hello."]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("packaged", type=Path, help="fake-pi from the wheel or the npm package")
    ap.add_argument("cargo", type=Path, help="fake-pi from cargo install (the release profile)")
    ap.add_argument("--runs", type=int, default=300, help="starts of each (default 300)")
    ap.add_argument("--max-ratio", type=float, default=None, help="fail above this ratio")
    ap.add_argument("--cassette", type=Path, default=CASSETTE)
    a = ap.parse_args()
    for p in (a.packaged, a.cargo, a.cassette):
        if not p.is_file():
            print(f"packaged_start.py: {p}: no such file", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="pih-bench-start-") as tmp:
        envs = {}
        for name, exe in (("packaged", a.packaged), ("cargo", a.cargo)):
            bin_dir = Path(tmp, name, "bin")
            bin_dir.mkdir(parents=True)
            os.symlink(exe.resolve(), bin_dir / "pi")
            agent = Path(tmp, name, "agent")
            agent.mkdir()
            envs[name] = {
                **os.environ,
                "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                "FAKE_PI_CASSETTE": str(a.cassette),
                "FAKE_PI_SPEED": "0",
                "PI_CODING_AGENT_DIR": str(agent),
            }
        times = {"packaged": [], "cargo": []}
        for i in range(a.runs):
            order = ("packaged", "cargo") if i % 2 == 0 else ("cargo", "packaged")
            for name in order:
                start = time.perf_counter()
                p = subprocess.run(["pi", *ARGS], env=envs[name], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                times[name].append(time.perf_counter() - start)
                if p.returncode != 0:
                    print(f"packaged_start.py: {name} exited {p.returncode}: {p.stderr.decode()[:500]}", file=sys.stderr)
                    return 2
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["packaged"] / med["cargo"]
    for k in ("packaged", "cargo"):
        print(f"{k:9} {med[k] * 1000:7.3f} ms median of {a.runs} starts ({Path(getattr(a, k)).resolve()})")
    print(f"ratio packaged/cargo: {ratio:.3f}")
    if a.max_ratio is not None and ratio > a.max_ratio:
        print(f"packaged_start.py: the packaged start is {ratio:.3f} x the cargo-installed one (above {a.max_ratio})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
