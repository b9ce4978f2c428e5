"""The package's public face: a regular package with a version and a curated API."""

from __future__ import annotations

import importlib.resources
import subprocess
import sys
from importlib import metadata

import deonticbench


def test_the_package_is_a_regular_package_with_resources() -> None:
    # An implicit namespace package has no __file__ and importlib.resources refuses it.
    assert deonticbench.__file__ is not None
    assert importlib.resources.files("deonticbench").joinpath("py.typed").is_file()


def test_version_is_the_installed_distributions() -> None:
    assert deonticbench.__version__ == metadata.version("deonticbench")


def test_every_public_name_resolves() -> None:
    for name in deonticbench.__all__:
        assert getattr(deonticbench, name) is not None, name
    assert set(dir(deonticbench)) == set(deonticbench.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        deonticbench.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown public name resolved")


def test_importing_the_package_stays_cheap() -> None:
    # The CLI imports the package first: it must not pull in numpy or the backends.
    heavy = ("numpy", "deonticbench.models", "deonticbench.scoring.scores")
    probe = f"import sys, deonticbench; print(sorted(m for m in sys.modules if m in {heavy}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_all_lists_every_lazily_exported_name() -> None:
    assert set(deonticbench.__all__) == {"__version__", *deonticbench._PUBLIC}
