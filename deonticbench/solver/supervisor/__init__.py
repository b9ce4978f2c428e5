"""The warm worker that runs inside the sandbox (``main``): see ``main``'s docstring."""

from .main import kill_everything, main, run_job

__all__ = ["kill_everything", "main", "run_job"]
