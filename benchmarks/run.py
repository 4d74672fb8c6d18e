"""Run every benchmark script (``benchmarks/<area>_*.py``) or those matching an argument.

    python benchmarks/run.py            # all
    python benchmarks/run.py risk       # benchmarks/risk_*.py
    python benchmarks/run.py app        # benchmarks/app_remeasure.py: the workbench's re-measure after a step
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def main() -> int:
    prefix = sys.argv[1] if len(sys.argv) > 1 else ""
    scripts = sorted(p for p in HERE.glob(f"{prefix}*_*.py") if not p.name.startswith("_"))
    failed = 0
    for script in scripts:
        print(f"== {script.name}", flush=True)
        failed += subprocess.call([sys.executable, str(script)], cwd=HERE) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
