from __future__ import annotations

import pytest

from deonticbench.data.domains import DOMAINS, UnknownDomainError, get_domain, parse_domains
from deonticbench.errors import ConfigError


def test_aliases_name_the_same_domain() -> None:
    assert get_domain("uscis-aao") is get_domain("uscis") is DOMAINS["uscis"]
    assert get_domain(" Airline ") is DOMAINS["airline"]


def test_a_domain_named_twice_is_run_once() -> None:
    chosen = parse_domains("housing,housing,uscis-aao,uscis")
    assert [d.name for d in chosen] == ["housing", "uscis"]
    assert [d.name for d in parse_domains("all")] == list(DOMAINS)


def test_unknown_domain_is_a_user_error() -> None:
    with pytest.raises(UnknownDomainError, match="unknown domain 'tax'") as info:
        parse_domains("airline,tax")
    assert isinstance(info.value, ConfigError)


def test_label_conventions() -> None:
    assert DOMAINS["sara_binary"].canonical_label(1) == "Entailment"
    assert DOMAINS["sara_binary"].canonical_label("0") == "Contradiction"
    assert DOMAINS["housing"].positive == "yes"
    assert DOMAINS["uscis"].positive == "Accepted"
    assert DOMAINS["airline"].metric == "accuracy" and DOMAINS["housing"].metric == "macro_f1"
    assert {d.default_k for d in DOMAINS.values()} == {3, 4}
