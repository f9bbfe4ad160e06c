"""Where the native binaries this package installed are (``fake-pi``, ``pi-harness``: the
wheel's scripts), the bundled corpus they carry, and the one line said on a platform the
packages have no binary for."""

from __future__ import annotations

import atexit
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Optional

DIST = "pi-harness"
SUPPORTED = "linux-x64"


class UnsupportedPlatform(RuntimeError):
    """This machine has no fake-pi binary in the package (linux x86_64 only today)."""


def platform_name() -> str:
    """This machine as the packages name platforms: ``linux-x64``, ``darwin-arm64``, ..."""
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform, sys.platform)
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"{system}-{arch}"


def check_platform() -> None:
    """Raise :class:`UnsupportedPlatform` (one line) unless the binaries can run here."""
    here = platform_name()
    if here != SUPPORTED:
        raise UnsupportedPlatform(
            f"pi-harness: no fake-pi binary for {here} (the package carries {SUPPORTED} only);"
            " build it from source: cargo install --locked --git <pi-harness repo> fake-pi pi-harness"
        )


def _installed(name: str) -> Optional[Path]:
    """``name`` among the files this distribution installed (its RECORD), else in the
    interpreter's scripts directories."""
    try:
        from importlib import metadata

        for f in metadata.files(DIST) or []:
            if f.name == name and f.parent.name in ("bin", "scripts", "Scripts"):
                p = Path(f.locate()).resolve()
                if p.is_file():
                    return p
    except Exception:  # noqa: BLE001 - no metadata (a source checkout): look further
        pass
    schemes = [sysconfig.get_default_scheme() if hasattr(sysconfig, "get_default_scheme") else None]
    schemes.append(f"{os.name}_user")
    for scheme in schemes:
        try:
            d = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if d and (Path(d) / name).is_file():
            return (Path(d) / name).resolve()
    return None


def binary(name: str) -> Path:
    """The installed native binary ``name`` (``fake-pi`` or ``pi-harness``): a real path, so
    a link to it execs the binary itself."""
    check_platform()
    found = _installed(name)
    if found is None:
        raise UnsupportedPlatform(
            f"pi-harness: the {name} binary is not installed beside this package"
            f" (pip install pi-harness puts it in {sysconfig.get_path('scripts')})"
        )
    return found


def fake_pi() -> Path:
    """The native fake-pi binary."""
    return binary("fake-pi")


def pi_harness() -> Path:
    """The native pi-harness binary."""
    return binary("pi-harness")


_corpus: Optional[Path] = None


def corpus() -> Path:
    """The corpus the pi-harness binary embeds (cassettes/, expected/), exported once per
    process into a temp dir removed at exit: always the binary's own."""
    global _corpus
    if _corpus is None:
        d = Path(tempfile.mkdtemp(prefix="pi-harness-corpus-"))
        atexit.register(shutil.rmtree, str(d), True)
        p = subprocess.run(
            [str(pi_harness()), "corpus", "export", str(d)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if p.returncode != 0:
            raise RuntimeError(f"pi-harness corpus export failed ({p.returncode}): {p.stderr.strip()}")
        _corpus = d
    return _corpus


def version() -> str:
    """The version of this package (the workspace's, as ``pi-harness --version`` says)."""
    try:
        from importlib import metadata

        return metadata.version(DIST)
    except Exception:  # noqa: BLE001 - not installed (a source checkout)
        return "0+unknown"
