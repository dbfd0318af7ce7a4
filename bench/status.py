#!/usr/bin/env python3
"""bench/status.py — README's "what is reproduced today" block, derived from the results of record.

  python3 bench/status.py              print the block
  python3 bench/status.py --write      replace the block in README.md (between its markers)
  python3 bench/status.py --check      exit 1 when README.md's block differs from the derived one

Per paper (the list: bench/claims/*.toml, read by verdict.papers()), the block counts the rows of
bench/verdict.py on results/<paper>/record/: reproduction rows by verdict (agrees, inconclusive,
disagrees, not comparable, no results), and consistency, observation and beyond rows by kind;
SIMULATED rows counted apart. A paper with no record counts every registry row as no results.
The block itself is bench/record.py's status_block(); bench/reproduction.sh rewrites README and
docs/REPRODUCTION.md together, tests/t_docs.sh runs --check and tests/t_record.sh re-derives it.
Stdlib only."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record  # noqa: E402
import verdict  # noqa: E402


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("", "--write", "--check"):
        print("usage: bench/status.py [--write|--check]", file=sys.stderr)
        return 2
    try:
        new = record.status_block()
        if mode == "":
            sys.stdout.write(new)
            return 0
        text = open(os.path.join(record.ROOT, "README.md"), encoding="utf-8").read()
        old, _, _ = record.readme_block(text)
        if old is None:
            print("status: README.md has no status markers (%s ... %s)" % (record.STATUS_BEGIN, record.STATUS_END),
                  file=sys.stderr)
            return 1
        if mode == "--check":
            if old != new:
                print("status: README.md's status block differs from the results of record; run: python3 "
                      "bench/status.py --write", file=sys.stderr)
                return 1
            return 0
        record.write_status()
    except (record.RecordError, verdict.VerdictError) as e:
        print("status: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
