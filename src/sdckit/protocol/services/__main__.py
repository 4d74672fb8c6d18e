"""``python -m sdckit.protocol.services ROLE --config FILE``: run one service in the foreground."""

from __future__ import annotations

import argparse
import sys

from sdckit.errors import SdcError
from sdckit.protocol.services._config import ROLES, load_config
from sdckit.protocol.services._serve import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sdckit.protocol.services")
    parser.add_argument("role", choices=ROLES)
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.config, role=args.role)
        serve(cfg)
    except SdcError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
