"""Offline stand-in for ansible-test's get-pip bootstrap download.

ansible-test downloads get-pip.py to bootstrap pip inside the virtual
environments it creates for sanity tests. That host is not reachable from an
air-gapped CI, so scripts/sanity.sh places this file in ansible-test's cache
instead: it installs pip with ensurepip, then hands the remaining arguments
(the pinned pip version) to pip itself.
"""

import subprocess
import sys

DROP = {"--no-setuptools", "--no-wheel"}


def main() -> int:
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
    args = [a for a in sys.argv[1:] if a not in DROP]
    if args:
        return subprocess.call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *args])
    return 0


if __name__ == "__main__":
    sys.exit(main())
