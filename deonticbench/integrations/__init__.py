"""Front doors into other people's tools: inspect_ai (``integrations.inspect``) and Harbor
(``integrations.harbor``).

Each integration is a subpackage that only calls the library (prompting, the runner's
attempt, the agents' judging, the scorer) and hands back what the other tool expects:
inspect's tasks, solver steps, scorer and metric, and a log imported back into a run
folder; Harbor's tasks with their shipped verifier, a jobs folder imported back, DAR's
scoring rules and a Harbor environment on bubblewrap.  Nothing in the package below the
command line and the public API depends on these modules.  A tool finds its integration
by the subpackage's import path, so the names live there, not here; each subpackage
needs its own extra (``inspect``, ``harbor``) only for the parts that import the tool.
"""

__all__: list[str] = []
