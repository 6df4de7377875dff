"""``python -m tpdisc.cli``: the command line without the installed script."""

from tpdisc.cli import main

# Guarded: a process pool's workers import the main module again, and one that ran the
# command there would make every command simulate in this process only (it did).
if __name__ == "__main__":
    main()
