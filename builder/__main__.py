"""``python -m builder`` and the ``metallib-builder`` console script.

``--version`` and the top-level ``--help`` alone are answered here, before click and the command
line are imported: start-up was 5.4 and 8.4 times a bare interpreter's (issue 34 item 13).
Everything else goes to :func:`builder.cli.group.main`.
"""

from __future__ import annotations

import sys


def main() -> int | None:
    """Run the command line; the return value is what the console script hands to sys.exit."""
    if sys.argv[1:] in (["--version"], ["-V"]):
        from builder.metallib.native import version_text

        print(version_text())
        return 0
    if sys.argv[1:] in (["--help"], ["-h"]):
        from builder.cli import print_help

        return print_help()
    from builder.cli.group import main as cli_main

    return cli_main()


if __name__ == "__main__":
    main()
