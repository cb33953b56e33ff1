"""``python -m calibdash``: the command line (see :mod:`calibdash.cli`)."""

from calibdash.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
