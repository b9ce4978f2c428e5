"""Front doors into other people's tools: inspect_ai today (``integrations.inspect``).

Each integration is a subpackage that only calls the library (prompting, the runner's
attempt, the scorer) and hands back what the other tool expects; nothing in the package
depends on these modules.  A tool finds its integration by the subpackage's import path,
so the names live there, not here.
"""

__all__: list[str] = []
