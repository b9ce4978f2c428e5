"""The verifier as one self-contained zip (``tests/verifier.pyz``): its own module and
the harness modules it imports (answer readers, judging, the solver's supervisor),
found by importing it in a bare interpreter, so the zip holds exactly what it runs and
the rules inside a task are the harness's own, never a copy kept by hand."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from functools import cache
from pathlib import Path

_ENTRY = "deonticbench.integrations.harbor.verifier"
_MAIN = "import sys\nfrom deonticbench.integrations.harbor.verifier import main\nsys.exit(main())\n"


def _package_root() -> Path:
    return Path(__file__).resolve().parents[3]


@cache
def verifier_zip() -> bytes:
    """The zipapp's bytes (built once per process; same input, same bytes)."""
    root = _package_root()
    probe = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import " + _ENTRY + "; "
        "print(json.dumps(sorted(m.__file__ for n, m in sys.modules.items() "
        "if n.split('.')[0] == 'deonticbench' and getattr(m, '__file__', None))))"
    )
    found = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe, str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in json.loads(found.stdout):
            path = Path(name)
            info = zipfile.ZipInfo(path.relative_to(root).as_posix(), (2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
        main = zipfile.ZipInfo("__main__.py", (2020, 1, 1, 0, 0, 0))
        main.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(main, _MAIN)
    return buffer.getvalue()
