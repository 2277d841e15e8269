"""`quire import --from-cockpit FOLDER`: plan, print, store, report."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quire.cockpit.folder import CockpitFolder, NotCockpit
from quire.cockpit.migrate import make_plan, run_plan
from quire.errors import ApiError


class ProgressLine:
    """One line on the terminal that follows the import (a line per stage
    and every few seconds when stderr is not a terminal)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.stage = ""
        self.shown = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        changed = stage != self.stage
        if not self.tty and not changed and now - self.shown < 5 and done < total:
            return
        if self.tty and not changed and now - self.shown < 0.1 and done < total:
            return
        width = 30
        filled = width * done // total if total else width
        line = f"{stage:<16} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
        if self.tty:
            end = "\n" if done >= total else ""
            sys.stderr.write(("\n" if changed and self.stage else "") + "\r" + line + end)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.stage, self.shown = stage, now

    def done(self) -> None:
        if self.tty and self.stage:
            sys.stderr.write("\n")
            sys.stderr.flush()
        self.stage = ""


def import_cockpit(args: argparse.Namespace, make_quire: Callable[[argparse.Namespace], Any]) -> int:
    try:
        folder = CockpitFolder(args.from_cockpit, args.mongo_export)
    except NotCockpit as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    quire = make_quire(args)
    progress = ProgressLine()
    report_path = Path(args.report) if args.report else quire.settings.data_dir / "cockpit-import-report.json"
    try:
        plan = make_plan(folder, quire, progress)
        progress.done()
        print(plan.describe())
        head: dict[str, Any] = {"from": str(folder.storage), "planned": plan.counts(), "dry_run": args.dry_run}
        if args.dry_run:
            plan.report.write(report_path, head)
            print(f"Dry run: nothing stored. The report is in {report_path}")
            return 0
        counts = asyncio.run(run_plan(plan, quire, progress))
        progress.done()
        plan.report.write(report_path, {**head, "imported": counts})
    except NotCockpit as exc:
        progress.done()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ApiError as exc:
        progress.done()
        print(f"error: {exc.message}", file=sys.stderr)
        print("Nothing before the failing step was lost; run the same import again once it is fixed: "
              "what is stored is matched by id and replaced in place.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        progress.done()
        print("interrupted: run the same import again to complete it (what is stored is matched by id)",
              file=sys.stderr)
        return 130
    finally:
        folder.close()
        quire.close()
    print("Imported " + ", ".join(f"{n} {what}" for what, n in counts.items()))
    print(f"Report: {plan.report.summary()}; written to {report_path}")
    return 0
