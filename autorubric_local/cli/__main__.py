"""``python -m autorubric_local.cli``."""

from autorubric_local.cli import main

main()
