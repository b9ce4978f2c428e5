"""Upstream's own program outputs (``swipl/*.txt``), read as executions for
``import-upstream``.

Upstream runs a program mode's programs with ``run_swipl.sh`` and keeps its stdout, one
file per domain, mode and model, where ``bootstrap_outputs.py`` finds it
(``discover_runs``):

    OUTPUTS_DIR/<domain>/swipl/few_shot/<model>-fewshot.txt
    OUTPUTS_DIR/<domain>/swipl/zero_shot/<model>-zeroshot.txt

Each program's block is its path line (``<prefix>_case_<i>_<j>.pl``: the i-th row of the
mode's output file, 1-based, and its j-th answer) followed by what it printed, cut where
the next line reads as a path, as ``parse_swipl_txt`` cuts it.  A block becomes an
``Execution`` of sandbox ``upstream`` whose stdout is the block's lines: the paper reader
then reads exactly what upstream's reader read, whatever this machine's sandbox would
make of the program.  Its status says only whether the block holds any text (upstream
keeps no exit status, no stderr and no timing).

Which file is the model's: the one whose name, without upstream's ``-fewshot`` or
``-zeroshot``, is the model's folder path (its ``/`` written as ``_``, ``-`` or kept)
or its last part; else the folder's only file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..reading.paper import is_pl_path
from ..solver.execution import Execution
from ..vocabulary.modes import Mode

SWIPL_FOLDER = "swipl"
MODE_FOLDERS: dict[Mode, str] = {"few-shot": "few_shot", "zero-shot": "zero_shot"}
"""Our program mode -> upstream's folder below ``<domain>/swipl/``."""
_MODEL_SUFFIX = re.compile(r"-(fewshot|zeroshot)$")
_CASE_FILE = re.compile(r"_case_(\d+)_(\d+)$")

BlockKey = tuple[int, int]
"""(the case's 1-based row in the mode's output file, the answer's index)."""


@dataclass(frozen=True)
class SwiplOutput:
    """One ``swipl/*.txt`` file of upstream's, split into its programs' blocks."""

    path: Path
    blocks: dict[BlockKey, list[str]]

    def execution(self, row: int, sample: int) -> Execution | None:
        """The recorded run of the ``sample``-th answer of the 1-based ``row``, if the
        file holds it."""
        lines = self.blocks.get((row, sample))
        if lines is None:
            return None
        stdout = "".join(f"{line}\n" for line in lines)
        return Execution(
            status="ok" if stdout.strip() else "no_output",
            stdout=stdout,
            stderr="",
            exit_code=None,
            wall_s=0.0,
            warnings=0,
            sandbox="upstream",
        )


def _names(model: str) -> set[str]:
    path = model.strip("/")
    return {path, path.replace("/", "_"), path.replace("/", "-"), path.rsplit("/", 1)[-1]}


def find_swipl_output(domain_dir: Path, mode: Mode, model: str) -> Path | None:
    """The model's ``swipl/*.txt`` for ``mode`` below ``domain_dir``, if there is one."""
    folder = MODE_FOLDERS.get(mode)
    if folder is None:
        return None
    files = sorted((domain_dir / SWIPL_FOLDER / folder).glob("*.txt"))
    wanted = _names(model)
    named = [f for f in files if _MODEL_SUFFIX.sub("", f.stem) in wanted]
    if named:
        return named[0]
    return files[0] if len(files) == 1 else None


def read_swipl_output(path: Path) -> SwiplOutput:
    """The blocks of one file, as ``parse_swipl_txt`` groups its lines (universal
    newlines; a path line of a file that names no case is skipped with its block)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = [line.rstrip("\n") for line in fh]
    blocks: dict[BlockKey, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if is_pl_path(line):
            match = _CASE_FILE.search(Path(line.strip()).stem)
            current = None
            if match:
                current = blocks.setdefault((int(match.group(1)), int(match.group(2))), [])
        elif current is not None:
            current.append(line)
    return SwiplOutput(path=path, blocks=blocks)
