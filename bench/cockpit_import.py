#!/usr/bin/env python3
"""Benchmark of `quire import --from-cockpit`: the fixture site made by a
real Cockpit (tests/fixtures/cockpit-site) scaled to `--items` posts and
`--assets` assets, taken into an empty data folder. Reports the time of the
whole command, items per second, and the command's peak memory at two
sizes (memory must stay flat: nothing loads the whole site).

    .venv/bin/python bench/cockpit_import.py                 # 10,000 and 100,000 items
    .venv/bin/python bench/cockpit_import.py --sizes 100000
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from tests.cockpit.conftest import copy_site  # noqa: E402
from tests.cockpit.scale import scale_site  # noqa: E402

from run import DEFAULT_DOCS, machine_paragraph, update_doc  # noqa: E402  (a sibling script)

SECTION_TITLE = "Import from Cockpit"
STANDARD_SIZES = "10000,100000"


def run_import(site: Path, data: Path) -> tuple[float, int, str]:
    """(seconds, peak resident memory in MB, last line of output)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIRE_")}
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "quire", "import", "--data", str(data), "--from-cockpit",
                                str(site)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert process.stdout is not None
    out = process.stdout.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    took = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"import failed ({process.returncode}): {out}")
    imported = next(line for line in out.splitlines() if line.startswith("Imported"))
    return took, usage.ru_maxrss // 1024, imported


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="posts added to the site, comma-separated")
    parser.add_argument("--assets-per-100", type=int, default=1, help="assets added per 100 posts")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = parser.parse_args()
    rows = ["| posts added | assets added | time | items/s | peak memory | load (1 min) |", "|---|---|---|---|---|---|"]
    print(f"load before: {os.getloadavg()[0]:.2f}")
    print("\n".join(rows))
    for size in (int(s) for s in args.sizes.split(",")):
        work = Path(tempfile.mkdtemp(prefix="quire-cockpit-bench-"))
        try:
            site = copy_site(work / "cockpit")
            assets = size * args.assets_per_100 // 100
            scale_site(site, size, assets)
            took, peak, imported = run_import(site, work / "data")
            items = size + 21
            rows.append(f"| {size:,} | {assets:,} | {took:.1f} s | {items / took:,.0f} | {peak} MB | "
                        f"{os.getloadavg()[0]:.2f} |")
            print(rows[-1], flush=True)
            print(imported, flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if args.sizes == STANDARD_SIZES and args.assets_per_100 == 1 and not args.no_docs:
        section = (f"## {SECTION_TITLE}\n\n"
                   "`bench/cockpit_import.py`: the site a real Cockpit 2.13.2 made (tests/fixtures/cockpit-site: "
                   "5 models, 21 items, 5 assets) with posts and pictures added (copies of its own, new ids), "
                   "taken into an empty data folder by `quire import --from-cockpit` (SQLite); the whole "
                   "command is timed, planning (every item converted and checked) and storing (items in batches "
                   "with their events: revisions, asset references) included; peak memory is the command's "
                   "resident set.\n\n" + "\n".join(rows) + "\n\nMemory stays flat with the site's size: "
                   "the plan reads the source a batch at a time and keeps only ids of what it leaves out.\n")
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)


if __name__ == "__main__":
    main()
