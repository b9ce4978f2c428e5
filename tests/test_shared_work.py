"""Work shared by tests (``tests/support/shared_work.py``): a folder is built once per
session, under a lock, whoever asks for it; a build that fails leaves nothing a later
test could take for the finished folder, and the next to ask builds it again."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from shared_work import shared_folder


class _Factory:
    """A stand-in for pytest's TempPathFactory, rooted in a test's own folder."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base


def test_a_shared_folder_is_built_once_for_every_asker(tmp_path: Path) -> None:
    built: list[Path] = []

    def build(folder: Path) -> None:
        built.append(folder)
        (folder / "made.txt").write_text("made")

    factory = _Factory(tmp_path)
    with ThreadPoolExecutor(4) as pool:
        folders = list(pool.map(lambda _: shared_folder(factory, "x", build), range(8)))  # type: ignore[arg-type]
    assert len(built) == 1 and len(set(folders)) == 1
    assert (folders[0] / "made.txt").read_text() == "made"
    assert not built[0].exists()  # built aside, then moved into place whole


def test_a_failed_build_is_not_taken_for_a_finished_one(tmp_path: Path) -> None:
    def broken(folder: Path) -> None:
        (folder / "half.txt").write_text("half")
        raise RuntimeError("the build failed")

    factory = _Factory(tmp_path)
    with pytest.raises(RuntimeError):
        shared_folder(factory, "y", broken)  # type: ignore[arg-type]
    folder = shared_folder(factory, "y", lambda f: (f / "whole.txt").write_text("whole"))  # type: ignore[arg-type]
    assert sorted(p.name for p in folder.iterdir()) == ["whole.txt"]
