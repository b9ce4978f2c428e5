"""What a reader of the docs already has, made for the docs tests (tests/test_docs.py):

    python -m doc_fixtures program DOMAIN CASE_INDEX FILE   a program to run: the reference
                                                           of the hard split's case
    python -m doc_fixtures tokenizer FILE                  a local tokenizer.json (a
                                                           word-level one, never a download)

A doc's ``<!-- doctest setup: ... -->`` line calls these before its commands."""

from __future__ import annotations

import sys
from pathlib import Path

from deonticbench.data.cases import load_cases
from deonticbench.data.domains import get_domain
from deonticbench.evaluation.validate import reference_program


def write_program(domain_name: str, index: int, out: Path) -> None:
    domain = get_domain(domain_name)
    case = load_cases(domain, "hard")[index]
    out.write_text(reference_program(domain, case).text, encoding="utf-8")
    print(case.id)


def write_tokenizer(out: Path) -> None:
    # import here: the tokenizers package is the train extra's, needed by this command only
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    words = ["tax", "amount", "print", "format", "true", "false", "is", ":-", "(", ")", "."]
    tokenizer.train_from_iterator(
        [" ".join(words)], trainers.WordLevelTrainer(special_tokens=["[UNK]"])
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out))


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "program":
        write_program(argv[1], int(argv[2]), Path(argv[3]))
        return 0
    if len(argv) == 2 and argv[0] == "tokenizer":
        write_tokenizer(Path(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
