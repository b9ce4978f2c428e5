"""The install lock, constraints.txt, is current: a fresh machine installs what CI tested.

``make install`` and ``make local-model`` install with ``pip install -c constraints.txt``,
and ``make lock`` (scripts/lock.py) rewrites the file from a fresh resolution.  "Current"
means two things, both checked offline, from the files and the venv's installed metadata:

- **The lock covers pyproject.toml**, for each Python ``make`` may build the venv with
  (3.12, and 3.11 where there is none): every distribution that the core dependencies,
  the extras ``dev`` reaches and the ``local`` extra name is pinned there, at a version
  its specifier accepts.  A dependency added, or a bound moved past its pin, since the
  last ``make lock`` fails here.  (The ``vllm`` extra, which needs a GPU and which no
  ``make`` target installs, is not locked.)
- **The venv is the lock**: every distribution this venv's install needs (the walk from
  pip and the project's dev requirements, and the local extra's when ``make
  local-model`` ran, through each installed distribution's own requirements) is
  installed at the version pinned for this Python.  A lock moved without a reinstall, a
  distribution pulled in that the lock does not pin, or one upgraded by hand fails here.
  What was installed by hand beside the install is not part of it and is not judged.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "constraints.txt"
PROJECT = "deonticbench"
LOCKED_EXTRAS = ("dev", "local")
"""The extras some ``make`` target installs: ``dev`` (``make install``) and ``local``."""
FIX = "run `make lock` to move the lock forward, then `make install`"


def environment(python: str | None = None) -> dict[str, str]:
    """Marker variables of this interpreter, or of this one with another Python version."""
    env = dict(default_environment())
    if python is not None:
        env.update(python_version=python, python_full_version=f"{python}.0")
    return env


def applies(requirement: Requirement, env: Mapping[str, str], extra: str = "") -> bool:
    return requirement.marker is None or requirement.marker.evaluate({**env, "extra": extra})


def pins(env: Mapping[str, str]) -> dict[str, Version]:
    """The lock's pins that hold under ``env``."""
    found: dict[str, Version] = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        (spec,) = requirement.specifier  # the lock holds nothing but name==version pins
        assert spec.operator == "==", line
        if applies(requirement, env):
            name = canonicalize_name(requirement.name)
            assert name not in found, f"{name} is pinned twice for one Python"
            found[name] = Version(spec.version)
    return found


def project_requirements(extras: tuple[str, ...], env: Mapping[str, str]) -> list[Requirement]:
    """What pyproject.toml asks for: the core dependencies and ``extras``, with the
    extras they name of the project itself (``deonticbench[hub,...]``) followed."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    wanted = [Requirement(text) for text in project["dependencies"]]
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in optional[extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == PROJECT:
                todo.extend(requirement.extras)
            else:
                wanted.append(requirement)
    return [r for r in wanted if applies(r, env)]


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_the_lock_pins_everything_pyproject_names_within_its_bounds(python: str) -> None:
    env = environment(python)
    pinned = pins(env)
    unpinned, outside = [], []
    for requirement in project_requirements(LOCKED_EXTRAS, env):
        version = pinned.get(canonicalize_name(requirement.name))
        if version is None:
            unpinned.append(str(requirement))
        elif not requirement.specifier.contains(version, prereleases=True):
            outside.append(f"{requirement} (pinned {version})")
    assert not unpinned, f"Python {python}: not in constraints.txt: {unpinned}; {FIX}."
    assert not outside, f"Python {python}: pins outside pyproject's bounds: {outside}; {FIX}."


def installed_closure(roots: list[Requirement]) -> Iterator[tuple[str, str]]:
    """(name, who asked) for every distribution the requirements ``roots`` reach through
    the installed distributions' own requirements (with the extras each is asked for)."""
    env = environment()
    todo = [(r, PROJECT) for r in roots]
    seen: set[tuple[str, str]] = set()
    while todo:
        requirement, asker = todo.pop()
        name = canonicalize_name(requirement.name)
        extras = sorted(requirement.extras)
        if all((name, e) in seen for e in ["", *extras]):
            continue
        seen.update((name, e) for e in ["", *extras])
        yield name, asker
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # said by the caller, which finds it missing
        for text in requires:
            child = Requirement(text)
            if any(applies(child, env, extra) for extra in ["", *extras]):
                todo.append((child, name))


def test_the_venv_holds_exactly_the_pinned_versions_of_what_it_installed() -> None:
    env = environment()
    extras = ("dev", "local") if installed("llama-cpp-python") else ("dev",)
    roots = [Requirement("pip"), *project_requirements(extras, env)]
    pinned = pins(env)
    missing, unpinned, differing = [], [], []
    for name, asker in installed_closure(roots):
        version = installed(name)
        if version is None:
            missing.append(f"{name} (for {asker})")
        elif name not in pinned:
            unpinned.append(f"{name} {version} (for {asker})")
        elif version != pinned[name]:
            differing.append(f"{name} {version}, pinned {pinned[name]}")
    assert not missing, f"required but not installed: {missing}; run `make install`."
    assert not unpinned, f"installed but not in constraints.txt: {unpinned}; {FIX}."
    assert not differing, f"the venv is not the lock: {differing}; run `make install`."


def installed(name: str) -> Version | None:
    try:
        return Version(metadata.version(name))
    except metadata.PackageNotFoundError:
        return None
