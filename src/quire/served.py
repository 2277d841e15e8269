"""The server's app: the main site, its spaces under their names
(quire.sites), and the work on spaces that needs whole sites, which only
this level may reach (quire.forks): forks and merges asked for through the
API, run as jobs, and forks compared and merge plans made for it
(quire.spaces.tasks)."""

from __future__ import annotations

import logging
import os
from typing import Any

from quire import forks, tracing
from quire.app import Quire, build_app, hear_the_stop
from quire.asgi import App
from quire.auth.service import Identity
from quire.config import Settings, load_settings
from quire.errors import ApiError, BadRequest
from quire.jobs import GiveUp, Job
from quire.processes import lower_priority
from quire.requestid import configure_logging
from quire.sites import Sites
from quire.spaces import tasks
from quire.spaces.service import SpaceService, space_settings

log = logging.getLogger("quire.spaces")

ATTEMPT_SECONDS = 6 * 3600.0  # the longest fork or merge a runner waits out before another takes it over


def app_from_env() -> Any:
    """The factory granian's workers call: settings come from the environment
    that `quire serve` prepared (QUIRE_DATA, QUIRE_CONFIG)."""
    settings = load_settings(os.environ.get("QUIRE_DATA", "./data"), os.environ.get("QUIRE_CONFIG") or None)
    configure_logging(settings.server.log_format == "json")
    hear_the_stop()
    traces = settings.traces
    if traces.enabled:  # in the worker: the exporter's thread must not cross a fork
        tracing.configure(traces.endpoint, traces.service_name, traces.sample_percent / 100)
    return serve_sites(build_app(settings))


def serve_sites(main: App) -> Any:
    """The main site's app, and its spaces' under their names (quire.sites),
    with forks and merges through the API."""
    quire: Quire = main.state.quire
    if any(m.name == "spaces" for m in quire.modules):
        environments = SiteEnvironments(quire.settings)
        quire.get(SpaceService).environments = environments
        jobs = quire.jobs
        jobs.lane(tasks.LANE, 1)
        for kind, run in ((tasks.FORK_JOB, environments.run_fork), (tasks.MERGE_JOB, environments.run_merge)):
            jobs.handle(kind, run, max_attempts=2, retry_seconds=30, attempt_seconds=ATTEMPT_SECONDS,
                        lane=tasks.LANE)
    return Sites(main, lambda settings, modules: build_app(settings, modules=modules))


class SiteEnvironments:
    """quire.forks for the API, on the main site's settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def diff(self, name: str) -> dict[str, Any]:
        origin, models = _refused_as_400(forks.diff, self.settings, name)
        return {"space": name, "origin": origin, "models": [m.as_json() for m in models]}

    def plan(self, name: str, take: str) -> dict[str, Any]:
        return _refused_as_400(forks.merge_plan, self.settings, name, take).as_json()

    def keys(self, name: str) -> dict[str, Any]:
        """A space's keys (never their text) and the roles a new one may take."""
        with forks.open_site(space_settings(self.settings, name)) as site:
            return {"keys": sorted(site.auth.list_keys(), key=lambda k: (k.get("name") or "").lower()),
                    "roles": [r["name"] for r in site.auth.list_roles() if r["name"] != "public"]}

    def create_key(self, name: str, key_name: Any, role: Any, by: str) -> dict[str, Any]:
        """A new key of space `name`: its text answered once, only its hash kept."""
        made_by = Identity("admin", key_id=f"main:{by}", key_name=f"{by} (main site)", kind="system")
        with forks.open_site(space_settings(self.settings, name)) as site:
            return dict(site.auth.create_key(key_name, role, made_by))

    def run_fork(self, job: Job) -> None:
        asked = job.payload

        def step(text: str) -> None:
            tasks.update(job.store, asked["task"], state="running", step=text)

        def work() -> dict[str, Any]:
            return forks.fork(self.settings, asked["from"], asked["name"], asked.get("label"), step)

        self._run(job, work, lambda made: f"made space {made['name']}")

    def run_merge(self, job: Job) -> None:
        asked = job.payload

        def step(text: str) -> None:
            tasks.update(job.store, asked["task"], state="running", step=text)

        def work() -> dict[str, Any]:
            done = forks.merge(self.settings, asked["name"], asked["plan"], asked.get("take", "origin"),
                               str(asked.get("by") or "the API"), step)
            return done.as_json()

        self._run(job, work, lambda plan: f"merged {plan['writes']} changes into {plan['origin']}")

    def _run(self, job: Job, work: Any, summary: Any) -> None:
        task = job.payload["task"]
        lower_priority(self.settings.server.batch_niceness)  # this lane's thread: the worker's requests come first
        tasks.update(job.store, task, state="running", step="starting")
        try:
            result = work()
        except (ValueError, ApiError) as exc:  # refused: another attempt would be refused too
            tasks.update(job.store, task, state="failed", step="refused", error=_said(exc))
            raise GiveUp(_said(exc)) from exc
        except Exception as exc:
            last = job.attempts >= 2
            tasks.update(job.store, task, state="failed" if last else "pending",
                         step="failed" if last else "trying again shortly", error=f"{type(exc).__name__}: {exc}")
            raise
        tasks.update(job.store, task, state="done", step=summary(result), result=result, error=None)


def _said(exc: Exception) -> str:
    return exc.message if isinstance(exc, ApiError) else str(exc)


def _refused_as_400(call: Any, *args: Any) -> Any:
    """quire.forks says what it refuses with ValueError: a 400 here."""
    try:
        return call(*args)
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
