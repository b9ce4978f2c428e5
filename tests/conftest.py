"""Shared by every test folder: the helpers in ``tests/support/`` (loopback fake providers
and hub, the browser driver, hostile programs, inspect's scripted model) import by name."""

import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))
