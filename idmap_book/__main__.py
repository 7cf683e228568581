"""The book's command line: ``python -m idmap_book sweep|mnist ...`` (the runs the claims need,
Paper B's MNIST grid: plan/commands.py) and ``set-url URL | check [--expect URL]`` (the repository
URL setting: page/repository.py)."""
import argparse
import logging
import sys

from .plan import commands
from .page.repository import ROOT, check, repository_url, set_url


def main(argv=None) -> int:
    """``python -m idmap_book sweep|mnist|set-url|check ...``."""
    parser = argparse.ArgumentParser(prog="python -m idmap_book", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    commands.add_parsers(sub)
    sub.add_parser("set-url",
                   help="write the repository URL everywhere it is used").add_argument("url")
    chk = sub.add_parser("check",
                         help="fail if the setup cells, README or intro disagree with _config.yml")
    chk.add_argument("--expect",
                     help="also fail unless repository.url is this URL (CI: the repository it runs "
                          "in)")
    args = parser.parse_args(argv)
    if args.command in ("sweep", "mnist"):
        logging.basicConfig(level=logging.INFO, format="%(message)s")  # a dataset decoded
        return getattr(commands, args.command)(args)
    if args.command == "set-url":
        for path in set_url(args.url.rstrip("/")):
            print("updated", path.relative_to(ROOT))
        return 0
    problems = check(expect=args.expect and args.expect.rstrip("/"))
    print("\n".join(problems)
          or f"repository URL {repository_url()}: setup cells, README and intro agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
