"""``python -m idmap_lib.book set-url URL`` | ``check [--expect URL]``: the repository URL setting
(repository.py)."""
import argparse
import sys

from .page.repository import ROOT, check, repository_url, set_url


def main(argv=None) -> int:
    """``python -m idmap_lib.book set-url URL`` | ``check [--expect URL]``."""
    parser = argparse.ArgumentParser(prog="python -m idmap_lib.book", description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("set-url",
                   help="write the repository URL everywhere it is used").add_argument("url")
    chk = sub.add_parser("check",
                         help="fail if the setup cells, README or intro disagree with _config.yml")
    chk.add_argument("--expect",
                     help="also fail unless repository.url is this URL (CI: the repository it runs "
                          "in)")
    args = parser.parse_args(argv)
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
