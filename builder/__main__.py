"""``python -m builder`` runs the CLI."""

from builder.cli import main

main()
