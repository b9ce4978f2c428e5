"""One vocabulary across the command line: walks every click command there is (so an
option added later is held to it too) and fails on an option without help, a default
written other than ``[default: ...]``, one name with two types or two helps, one help
under two names, and a command that prints JSON without ``--json``."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

import click
import pytest

from deonticbench.cli import cli
from deonticbench.cli._options import PER_COMMAND_OPTIONS

_DEFAULT = re.compile(r"\s*\[default: [^\]]*\]")
_JSON = re.compile(r"(?<![.\w])json\b", re.IGNORECASE)  # not a file name (tokenizer.json)


def _commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from _commands(command, f"{path} ")
        else:
            yield path, command


def _options() -> list[tuple[str, click.Option]]:
    return [
        (path, p)
        for path, command in _commands(cli)
        for p in command.params
        if isinstance(p, click.Option) and not p.hidden
    ]


def _name(option: click.Option) -> str:
    longs = [o for o in option.opts if o.startswith("--")]
    return longs[0] if longs else option.opts[0]


def _kind(option: click.Option) -> str:
    """What an option takes: its type's class (a Path also its file/folder rule), flag or
    not, and its metavar."""
    kind = type(option.type).__name__
    if isinstance(option.type, click.Path):
        kind += f"(file_okay={option.type.file_okay}, dir_okay={option.type.dir_okay})"
    return f"{kind} flag={option.is_flag} metavar={option.metavar}"


def _meaning(option: click.Option) -> str:
    return _DEFAULT.sub("", option.help or "").strip()


def test_there_are_commands_to_walk() -> None:
    assert {"eval", "score", "report", "export", "perturb"} <= {p for p, _ in _commands(cli)}


def test_every_option_has_help_with_its_default_written_one_way() -> None:
    bare = [f"{path} {_name(o)}" for path, o in _options() if not (o.help or "").strip()]
    assert bare == []
    other_form = [f"{path} {_name(o)}" for path, o in _options() if "(default" in (o.help or "")]
    assert other_form == []


def test_one_name_has_one_type_and_one_help() -> None:
    kinds: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    helps: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path, option in _options():
        kinds[_name(option)][_kind(option)].append(path)
        helps[_name(option)][_meaning(option)].append(path)
    two_types = {
        n: dict(k) for n, k in kinds.items() if len(k) > 1 and n not in PER_COMMAND_OPTIONS
    }
    assert two_types == {}
    two_helps = {
        n: dict(h) for n, h in helps.items() if len(h) > 1 and n not in PER_COMMAND_OPTIONS
    }
    assert two_helps == {}
    # An exemption names an option that several commands have, each in its own words.
    assert all(sum(len(v) for v in helps[n].values()) > 1 for n in PER_COMMAND_OPTIONS)


def test_one_help_has_one_name() -> None:
    names: dict[str, set[str]] = defaultdict(set)
    for _path, option in _options():
        names[_meaning(option)].add(_name(option))
    assert {h: n for h, n in names.items() if len(n) > 1} == {}


def test_a_command_that_can_print_json_has_json() -> None:
    """JSON named in an option's help or choices means the command can print it: then
    ``--json`` is how it is asked for."""
    lacking = []
    for path, command in _commands(cli):
        options = [p for p in command.params if isinstance(p, click.Option)]
        if "--json" in {o for p in options for o in p.opts}:
            continue
        for p in options:
            choices = list(p.type.choices) if isinstance(p.type, click.Choice) else []
            if _JSON.search(p.help or "") or "json" in choices:
                lacking.append(f"{path} {_name(p)}")
    assert lacking == []


def test_each_seed_option_is_named_for_the_draws_it_seeds() -> None:
    """``--exemplar-seed`` (eval, export) and ``--bootstrap-seed`` (score, report,
    cascade); a bare ``--seed`` would say neither, so no command takes it."""
    named = {
        "eval": "--exemplar-seed",
        "export": "--exemplar-seed",
        "score": "--bootstrap-seed",
        "report": "--bootstrap-seed",
        "cascade": "--bootstrap-seed",
    }
    commands = dict(_commands(cli))
    for name, seed in named.items():
        command = commands[name]
        opts = {o for p in command.params for o in p.opts}
        assert seed in opts and "--seed" not in opts, name
        with pytest.raises(click.NoSuchOption, match="--seed"):
            command.make_context(name, ["--seed", "3"])
