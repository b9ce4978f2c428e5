"""Data, where the pipeline starts: the five domains and their cases.

Each domain is one declarative spec (``domains``: the only place domain facts live); a
split's cases are read from a data source (``sources``: a local folder in the upstream
layout, or the Hugging Face hub pinned to a commit, ``hub``), with the shared statutes
fetched and checksummed (``statutes``), and narrowed by ``--limit``/``--ids``
(``selection``).  Hands ``Case`` objects (statutes, facts, question, gold label,
reference program) to prompting.
"""

from __future__ import annotations

from .cases import (
    Case,
    Gold,
    cases_from_rows,
    describe_source,
    load_cases,
    local_rows,
    normalise_gold,
    original_case_id,
    pin_source,
    variant_case_id,
)
from .dar_files import dar_origin, dar_root, dar_text
from .domains import (
    AIRLINE,
    DAR_DOMAINS,
    DISPLAY_ORDER,
    DOMAINS,
    HOUSING,
    NUMERIC_TOLERANCE,
    SARA_BINARY,
    SARA_NUMERIC,
    USCIS,
    Domain,
    LabelKind,
    UnknownDomainError,
    default_domains,
    get_domain,
    names_every_domain,
    parse_domains,
    read_from_marker,
)
from .selection import CaseLimit, check_ids_found, parse_ids, parse_limit, select_cases
from .sources import DATA_ENV, HUB_REPO, SPLITS, DataSource, resolve_source
from .statutes import fetch_statute, shared_statutes, statute_files, statute_paths
from .upstream import (
    CASE_EXEMPLARS,
    DATASET_PROMPTS,
    GENERATE_SCRIPT,
    MODEL_CONFIG,
    UPSTREAM_FILES,
    UpstreamFiles,
    upstream_files,
)

__all__ = [
    "AIRLINE",
    "CASE_EXEMPLARS",
    "DAR_DOMAINS",
    "DATASET_PROMPTS",
    "DATA_ENV",
    "DISPLAY_ORDER",
    "DOMAINS",
    "GENERATE_SCRIPT",
    "HOUSING",
    "HUB_REPO",
    "MODEL_CONFIG",
    "NUMERIC_TOLERANCE",
    "SARA_BINARY",
    "SARA_NUMERIC",
    "SPLITS",
    "UPSTREAM_FILES",
    "USCIS",
    "Case",
    "CaseLimit",
    "DataSource",
    "Domain",
    "Gold",
    "LabelKind",
    "UnknownDomainError",
    "UpstreamFiles",
    "cases_from_rows",
    "check_ids_found",
    "dar_origin",
    "dar_root",
    "dar_text",
    "default_domains",
    "describe_source",
    "fetch_statute",
    "get_domain",
    "load_cases",
    "local_rows",
    "names_every_domain",
    "normalise_gold",
    "original_case_id",
    "parse_domains",
    "parse_ids",
    "parse_limit",
    "pin_source",
    "read_from_marker",
    "resolve_source",
    "select_cases",
    "shared_statutes",
    "statute_files",
    "statute_paths",
    "upstream_files",
    "variant_case_id",
]
