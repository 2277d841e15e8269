"""The shape of the code's imports (docs/architecture.md): no import circle
anywhere, and the bottom layers import nothing from the feature modules or
the app above them. Counts every import, also those inside functions and
under TYPE_CHECKING."""

from __future__ import annotations

import grimp
import pytest

from quire.app import MODULES

# Below every feature: the dispatcher, request helpers, store, settings, ...
BOTTOM = [
    "quire.asgi", "quire.bundleparts", "quire.cache", "quire.config", "quire.emails", "quire.errors", "quire.events", "quire.forwarded", "quire.hooks",
    "quire.http", "quire.ids", "quire.jobs", "quire.modules", "quire.numbers", "quire.openapi", "quire.ratelimit",
    "quire.responses", "quire.sections", "quire.slots", "quire.store", "quire.trees",
]
ABOVE = ["quire.app", "quire.cli", "quire.bundle", "quire.demo", "quire.migrate"]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("quire", include_external_packages=False)


def test_no_module_imports_one_that_imports_it_back(graph: grimp.ImportGraph) -> None:
    circles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                circles.append(" -> ".join([importer, *back]))
    assert circles == []


@pytest.mark.parametrize("bottom", BOTTOM)
def test_a_bottom_layer_imports_no_feature_and_not_the_app(graph: grimp.ImportGraph, bottom: str) -> None:
    features = [f"quire.{module.name}" for module in MODULES]
    for above in features + ABOVE:
        chain = graph.find_shortest_chains(importer=bottom, imported=above, as_packages=True)
        assert not chain, f"{bottom} imports {above}: {chain}"


def test_a_feature_imports_only_features_before_it_in_the_module_list(graph: grimp.ImportGraph) -> None:
    """Dependencies point down for every module, a new one too: the list in
    app.py is the order of the layers."""
    names = [module.name for module in MODULES]
    for i, name in enumerate(names):
        for later in names[i + 1:]:
            chain = graph.find_shortest_chains(importer=f"quire.{name}", imported=f"quire.{later}", as_packages=True)
            assert not chain, f"quire.{name} imports quire.{later}, which comes after it in MODULES: {chain}"


def test_features_do_not_import_the_app_or_the_command_line(graph: grimp.ImportGraph) -> None:
    for module in MODULES:
        for above in ABOVE:
            chain = graph.find_shortest_chains(importer=f"quire.{module.name}", imported=above, as_packages=True)
            assert not chain, f"quire.{module.name} imports {above}: {chain}"


def test_every_feature_package_exposes_its_module_object() -> None:
    names = [module.name for module in MODULES]
    assert len(names) == len(set(names))
    for module in MODULES:
        package = __import__(f"quire.{module.name}", fromlist=["module"])
        assert package.module is module
