"""Why programs fail: static analysis, the proof of the answer, the comparison with the
reference program, the failure taxonomy and the derivation axis (docs/analysis.md).

Reads records; never imports the runner or the CLI.  The Prolog side is ``prolog/``.
"""

from .static import (
    Defined,
    LoadWarning,
    Signature,
    StaticReport,
    SyntaxErrorAt,
    Undefined,
    analyse_static,
    signature_jaccard,
)

__all__ = [
    "Defined",
    "LoadWarning",
    "Signature",
    "StaticReport",
    "SyntaxErrorAt",
    "Undefined",
    "analyse_static",
    "signature_jaccard",
]
