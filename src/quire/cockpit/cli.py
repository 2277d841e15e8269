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
from quire.cockpit.verify import VerifyFailed
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
    if args.verify and not args.key:
        print("error: --verify needs --key, a Cockpit API key of the site", file=sys.stderr)
        return 2
    if args.verify and args.dry_run:
        print("error: --verify compares the imported site: it cannot go with --dry-run", file=sys.stderr)
        return 2
    if args.verify and not args.verify.startswith(("http://", "https://")):
        print(f"error: --verify takes the Cockpit site's address, like https://cms.example.com (not {args.verify})",
              file=sys.stderr)
        return 2
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
        if args.verify:  # before anything is stored: a Cockpit that cannot be asked stops here
            _ask_cockpit(args, plan)
        counts = asyncio.run(run_plan(plan, quire, progress))
        progress.done()
        head["imported"] = counts
        if args.verify:
            found = _verify(plan, args, quire.settings)
            head["verify"] = found
        plan.report.write(report_path, head)
    except (NotCockpit, VerifyFailed) as exc:
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
    if args.verify:
        verified = head["verify"]
        print(f"Verified against {args.verify}: {verified['requests']} requests, "
              f"{len(verified['differences'])} differences")
        for line in verified["differences"][:SHOWN]:
            print(f"  {line}")
        if len(verified["differences"]) > SHOWN:
            print(f"  ... and {len(verified['differences']) - SHOWN} more in the report")
        return 3 if verified["differences"] else 0
    return 0


SHOWN = 20  # differences printed; all are in the report


def _ask_cockpit(args: argparse.Namespace, plan: Any) -> None:
    """One request to the Cockpit site with the key (VerifyFailed when it
    does not answer, or refuses the key)."""
    import httpx2

    from quire.cockpit.verify import VerifyFailed

    model = next((m.mapped.source for m in plan.models if m.mapped.kind != "singleton"), None)
    path = f"/api/content/items/{model}" if model else "/api/system/healthcheck"
    try:
        answer = httpx2.get(args.verify.rstrip("/") + path, params={"limit": "1"} if model else None,
                            headers={"api-key": args.key}, timeout=30.0, follow_redirects=False)
    except httpx2.HTTPError as exc:
        raise VerifyFailed(f"Cockpit did not answer at {args.verify} ({exc}): nothing was imported") from None
    if answer.status_code in (401, 403, 412):
        raise VerifyFailed(f"Cockpit refuses the key ({answer.status_code}): give an API key of the site "
                           "(--key); nothing was imported")


def _verify(plan: Any, args: argparse.Namespace, settings: Any) -> dict[str, Any]:
    """The verification's requests and differences (VerifyFailed when
    Cockpit does not answer)."""
    import httpx2

    from quire.app import build_app
    from quire.cockpit.verify import verify

    app = build_app(settings)
    headers = {"api-key": args.key}

    async def run() -> Any:
        async with httpx2.AsyncClient(base_url=args.verify.rstrip("/"), headers=headers, timeout=30.0,
                                      follow_redirects=False) as cockpit, \
                httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://quire",
                                   headers=headers) as quire:
            return await verify(plan, cockpit, quire)

    try:
        verifier = asyncio.run(run())
    finally:
        app.state.quire.close()
    return {"url": args.verify, "requests": verifier.compared, "differences": verifier.found}
