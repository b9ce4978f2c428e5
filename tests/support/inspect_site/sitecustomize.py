"""Loaded by the ``inspect`` subprocess of test_inspect.py (PYTHONPATH points here):
no network, and mockllm takes a scripted output file.  See inspect_script.py."""

import os
import sys

_script = os.environ.get("DEONTICBENCH_TEST_SCRIPT")
if _script:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from inspect_script import install_for_cli

    install_for_cli(_script, os.environ.get("DEONTICBENCH_TEST_NETWORK_JOURNAL"))
