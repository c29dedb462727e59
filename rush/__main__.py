"""``python -m rush`` runs the command line."""

from rush.cli.main import main

main()
