"""Machine translation (docs/ai.md#machine-translation): DeepL or
LibreTranslate fill in missing localized values of items and translation
projects, as jobs, marked unreviewed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.auth.service import AuthService
from quire.content.locales import LocaleService
from quire.content.service import ContentService
from quire.l10n.service import L10nService
from quire.modules import Module, NavEntry, Services
from quire.pages.service import PagesService
from quire.translate import openapi, routes, screens
from quire.translate.service import JOB, LANE, TranslateService

ATTEMPT_SECONDS = 3600.0  # a model of many items, at the provider's pace


def build(services: Services) -> None:
    def optional(kind: type[Any]) -> Any:
        try:
            return services.get(kind)
        except LookupError:  # a site built without that module
            return None

    translate = services.add("translate", TranslateService(
        services.store, services.settings.translate, services.get(ContentService), services.get(LocaleService),
        optional(L10nService), services.get(AuthService), services.jobs, optional(PagesService)))
    services.jobs.lane(LANE, 1)
    # A provider's refusal fails the task at once (GiveUp); a second attempt is
    # for a runner that stopped (its worker killed): what is still missing is
    # asked again, what was written stays. A task whose job fails is said failed.
    services.jobs.handle(JOB, translate.run, max_attempts=2, attempt_seconds=ATTEMPT_SECONDS, lane=LANE,
                         finished=translate.ended)


module = Module("translate", build=build, routes=[*routes.routes, *screens.routes], openapi=openapi.paths,
                templates=Path(__file__).parent / "templates",
                nav=[NavEntry("Machine translation", screens.PAGE, "Content", screens.may_use, order=35)])
