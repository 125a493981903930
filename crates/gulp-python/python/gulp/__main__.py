"""``python -m gulp``: the ``gulp`` command."""

from ._cli import main

main()
