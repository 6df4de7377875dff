"""``python -m tpdisc.cli``: the command line without the installed script."""

from tpdisc.cli import main

main()
