"""Stage 2, prompting: a case becomes chat messages (split into modules in the next commit)."""

from .render import *  # noqa: F403
