# Quire: two commands on a fresh clone, `make run` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA ?= ./data
HOST ?= 127.0.0.1
PORT ?= 8080

# Python keeps compiled modules in __pycache__ unless told not to, as some
# container images do: the tests start Quire in hundreds of processes (servers,
# workers, commands) and rewrite the assertions of every test module per
# worker, so compiling everything afresh each time costs minutes.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run login test test-backends lint bench install dev clean vendor

$(BIN)/quire: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -qq --upgrade pip
	$(BIN)/pip install -qq -e .
	touch $(BIN)/quire

# the example module package (examples/redirects) too: its tests install it
# as a site would, and Quire finds it through its entry point
$(VENV)/.dev: $(BIN)/quire examples/redirects/pyproject.toml
	$(BIN)/pip install -qq -e '.[dev]'
	$(BIN)/pip install -qq --no-deps -e examples/redirects
	touch $(VENV)/.dev

install: $(BIN)/quire

dev: $(VENV)/.dev

## make run: set up, create the demo data dir (once) and serve it
run: $(BIN)/quire
	@QUIRE_SERVER_HOST=$(HOST) QUIRE_SERVER_PORT=$(PORT) $(BIN)/quire demo --data $(DATA) --serve --make

## make login: the running demo's login again (user, password, API key, form token)
login:
	@$(BIN)/quire demo --login --data $(DATA)

tests/oidc/node_modules/.installed: tests/oidc/package-lock.json
	npm ci --prefix tests/oidc --no-audit --no-fund
	touch $@

## make test: install the dev dependencies, lint, run the whole suite on SQLite
## with files in the data folder, then every test that runs on the site's store
## again on PostgreSQL (a server the tests start), with the files of the asset
## and form suites on S3 (a local S3 server the tests start). `--dist
## loadgroup`: a module's servers and browser start on one worker, not on both.
test: $(VENV)/.dev tests/oidc/node_modules/.installed
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -n 2 --dist loadgroup
	$(MAKE) --no-print-directory test-backends

## make test-backends: only the PostgreSQL pass of `make test` (files on S3)
test-backends: $(VENV)/.dev tests/oidc/node_modules/.installed
	QUIRE_TEST_STORAGE=s3 $(BIN)/pytest -n 2 --dist loadgroup --backend postgresql

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy
	$(BIN)/lint-imports

## make bench: load 100k posts, serve with 2 workers, drive with wrk; the same
## on PostgreSQL (started by the benchmark), then several instances behind nginx
bench: $(VENV)/.dev
	$(BIN)/python bench/run.py --backends sqlite,postgresql
	$(BIN)/python bench/run.py --pictures 0.7
	$(BIN)/python bench/cursor_pages.py
	$(BIN)/python bench/gql.py
	$(BIN)/python bench/noindex.py
	$(BIN)/python bench/assets.py
	$(BIN)/python bench/pages.py
	$(BIN)/python bench/search.py
	$(BIN)/python bench/persona.py
	$(BIN)/python bench/studio_lists.py
	$(BIN)/python bench/studio_editor.py
	$(BIN)/python bench/studio_l10n.py
	$(BIN)/python bench/studio_inbox.py
	$(BIN)/python bench/studio_assets.py
	$(BIN)/python bench/revisions.py
	$(BIN)/python bench/schedule.py
	$(BIN)/python bench/webhooks.py
	$(BIN)/python bench/lanes.py
	$(BIN)/python bench/mixed.py
	$(BIN)/python bench/uncached_pages.py
	$(BIN)/python bench/import_under_load.py
	$(BIN)/python bench/assistants.py
	$(BIN)/python bench/cockpit_import.py
	$(BIN)/python bench/backup.py
	$(BIN)/python bench/aggregate_budget.py
	$(BIN)/python bench/instances.py
	$(BIN)/python bench/feed.py
	$(BIN)/python bench/limits.py
	$(BIN)/python bench/conditional.py

## make vendor: rebuild the studio's third-party browser code (htmx, Sortable,
## the TipTap/CodeMirror bundle) from vendor/package-lock.json into
## src/quire/ui/static/vendor/; the result is committed, so only changing
## a version needs node
vendor:
	npm ci --prefix vendor --no-audit --no-fund
	node vendor/build.mjs

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
