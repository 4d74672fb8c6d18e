"""The exit codes of ``sdckit``, in one place (stdlib only: ``sdckit --help`` imports it).

A script can tell them apart::

    sdckit run pipeline.yaml; case $? in 0) publish;; 3) review out/report.html;; *) alert;; esac
"""

from __future__ import annotations

import os
import sys
from enum import IntEnum


class ExitCode(IntEnum):
    """What ``sdckit`` returns to the shell."""

    OK = 0
    """Done; for ``run``, the release was within its budget and the data file written."""
    INPUT_ERROR = 1
    """An error in the data, the pipeline file or a parameter (one red line naming the fix)."""
    USAGE_ERROR = 2
    """A usage error: unknown command or option, a bad value for an option (click's code)."""
    REFUSED = 3
    """Refused, as designed: the release is over its budget; the report is written, the data file is not."""
    INTERNAL_ERROR = 70
    """A bug in sdckit (EX_SOFTWARE): a short message; the traceback with ``SDCKIT_DEBUG=1``."""


EXIT_CODES_HELP = (
    "Exit codes: 0 done (released); 1 error in the input or parameters; 2 usage error; "
    "3 refused: the release is over its budget (the report is written, no data file); "
    "70 internal error (a bug: rerun with SDCKIT_DEBUG=1 for the traceback)."
)
"""The exit codes as ``sdckit --help`` and the README state them."""


def internal_error(err: BaseException) -> int:
    """Print a short note about an unexpected exception (never its locals: they can hold
    microdata) and return :attr:`ExitCode.INTERNAL_ERROR`; the traceback only with ``SDCKIT_DEBUG=1``."""
    if os.environ.get("SDCKIT_DEBUG", "") not in ("", "0"):
        # lazy: sdckit --help stays fast
        import traceback

        traceback.print_exception(err)
    else:
        what = type(err).__name__
        if isinstance(err, ImportError) and err.name:  # a module name holds no data: say which
            what += f": no module named {err.name!r}"
        print(
            f"sdckit: internal error ({what}); this is a bug in sdckit, not in your data.\n"
            "Rerun with SDCKIT_DEBUG=1 for the traceback and report it to the sdckit maintainers with the "
            "command line and `sdckit --version` (never the data).",
            file=sys.stderr,
        )
    return int(ExitCode.INTERNAL_ERROR)
