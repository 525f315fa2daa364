"""Puts the engine stand-ins (tests/standins) on the import path, ahead of any real engine install."""

import sys
from pathlib import Path

STANDINS = str(Path(__file__).resolve().parent / "standins")
if STANDINS not in sys.path:
    sys.path.insert(0, STANDINS)
