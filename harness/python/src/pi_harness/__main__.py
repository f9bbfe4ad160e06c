"""``python -m pi_harness ARGS``: runs the native ``pi-harness ARGS`` (exec: its exit status
is the command's)."""

import os
import sys

from ._bins import UnsupportedPlatform, pi_harness


def main() -> None:
    try:
        exe = str(pi_harness())
    except UnsupportedPlatform as e:
        print(e, file=sys.stderr)
        sys.exit(2)
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
