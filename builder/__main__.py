"""``python -m builder`` and the ``metallib-builder`` console script.

``--version`` alone is answered here, before click and the command line are imported: start-up
was 5.4 times a bare interpreter's (issue 34 item 13). Everything else goes to
:func:`builder.cli.main`.
"""

from __future__ import annotations

import sys


def main() -> int | None:
    """Run the command line; the return value is what the console script hands to sys.exit."""
    if sys.argv[1:] in (["--version"], ["-V"]):
        from builder.metallib.native import version_text

        print(version_text())
        return 0
    from builder.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    main()
