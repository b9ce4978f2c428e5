"""Build hook: ship the top-level resource folders inside the wheel.

The design card keeps prompts/, prolog/, data/ and eval/ beside the package, where a
checkout (and an editable install) reads them in place.  A regular ``pip install .``
copies them into ``deonticbench/_share/`` so an installed package finds the same files;
``deonticbench._paths`` looks there first.  Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

RESOURCE_FOLDERS = ("prompts", "prolog", "data", "eval")


class BuildWithResources(build_py):  # type: ignore[misc]
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's folders in place
        root = Path(__file__).resolve().parent
        share = Path(self.build_lib) / "deonticbench" / "_share"
        for name in RESOURCE_FOLDERS:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, share / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithResources})
