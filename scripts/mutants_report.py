"""Scores and surviving mutants of one mutmut run (used by scripts/mutants.sh; run in its work tree).

Killed: a selected test failed, or the mutant ran past its time limit. Not killed: it survived, or
no test calls the function it changed ("no tests"), or mutmut found it suspicious. Skipped and
unchecked mutants are listed but not counted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mutmut.mutation.diff_apply import get_diff_for_mutant

KILLED = {1: "killed", 3: "killed", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout",
          255: "timeout", 37: "caught by type check"}
NOT_KILLED = {0: "survived", 5: "no tests", 33: "no tests"}
NOT_COUNTED = {34: "skipped", None: "not checked", 2: "interrupted"}


def status(code):
    for table in (KILLED, NOT_KILLED, NOT_COUNTED):
        if code in table:
            return table[code]
    return "suspicious"


def diff(name, path):
    """The mutant's changed lines, from mutmut's own index (mutmut's show)."""
    try:
        text = get_diff_for_mutant(name, path=path)
    except Exception as exc:  # pylint: disable=broad-exception-caught
        return [f"(no diff: {exc})"]
    return [line for line in text.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def main(minimum, *source_dirs):
    totals = {"killed": 0, "counted": 0}
    lines, survivors = [], []
    metas = [(source_dir, meta) for source_dir in source_dirs
             for meta in sorted(Path("mutants", source_dir).glob("*.py.meta"))]
    for source_dir, meta in metas:
        source = str(Path(source_dir, meta.name[: -len(".meta")]))
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        killed = sum(1 for code in codes.values() if code in KILLED)
        counted = sum(1 for code in codes.values() if code not in NOT_COUNTED)
        other = len(codes) - counted
        totals["killed"] += killed
        totals["counted"] += counted
        score = 100.0 * killed / counted if counted else 100.0
        lines.append(f"  {Path(source_dir).name + '/' + Path(source).name:40} {score:5.1f}%  {killed}/{counted} killed"
                     + (f" ({other} not run)" if other else ""))
        survivors += [(name, source, status(code)) for name, code in codes.items()
                      if code not in KILLED and code not in NOT_COUNTED]
    for name, source, why in survivors:
        print(f"{why.upper()} {name.rsplit('.', 1)[-1]} ({Path(source).name})")
        print("    " + "\n    ".join(diff(name, source)))
    score = 100.0 * totals["killed"] / totals["counted"] if totals["counted"] else 0.0
    print("\nmutants: score per module")
    print("\n".join(lines))
    print(f"mutants: all of them: {score:.1f}% ({totals['killed']}/{totals['counted']} killed; minimum {minimum}%)")
    return 0 if score >= float(minimum) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], *sys.argv[2:]))
