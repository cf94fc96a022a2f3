"""Score and surviving mutants of one cosmic-ray session (used by scripts/mutants.sh)."""

from __future__ import annotations

import sys

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome


def main(db_path, name, minimum):
    with use_db(db_path, WorkDB.Mode.open) as db:
        results = list(db.completed_work_items)
    killed = [item for item, result in results if result.test_outcome == TestOutcome.KILLED]
    survived = [(item, result) for item, result in results if result.test_outcome == TestOutcome.SURVIVED]
    incompetent = [item for item, result in results if result.test_outcome == TestOutcome.INCOMPETENT]
    total = len(killed) + len(survived)
    score = 100.0 * len(killed) / total if total else 0.0
    print(f"{name}: {score:.1f}% killed ({len(killed)}/{total}; {len(incompetent)} incompetent not counted)")
    for item, result in survived:
        for mutation in item.mutations:
            print(f"  SURVIVED {mutation.module_path}:{mutation.start_pos[0]} {mutation.operator_name} #{mutation.occurrence}")
        if result.diff:
            print("    " + "\n    ".join(line for line in result.diff.splitlines() if line.startswith(("+", "-"))
                                        and not line.startswith(("+++", "---"))))
    return 0 if score >= float(minimum) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
