"""The day-2 helpers shared by the k3s scenarios (molecule/shared/day2.py) on the import path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared"))
