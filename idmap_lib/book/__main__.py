"""``python -m idmap_lib.book set-url URL`` | ``check [--expect URL]``: the repository URL setting."""
import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
