# relaybay: `make run` starts it on the embedded default, `make test` runs every test.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
HOST ?= $(or $(RELAYBAY_HOST),127.0.0.1)
PORT ?= $(or $(RELAYBAY_PORT),8000)
# Django 6.1 needs Python >= 3.12: the first such python3.13/python3.12 on PATH, then pyenv's.
FIND_PYTHON := for p in python3.13 python3.12 /root/.pyenv/versions/3.13*/bin/python3.13 /root/.pyenv/versions/3.12*/bin/python3.12 python3; do \
	  c=$$(command -v $$p 2>/dev/null) || continue; \
	  $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo $$c; break; }; \
	done

help:
	@echo "make run    start relaybay on the embedded default (SQLite + in-memory channel layer)"
	@echo "make test   install what the tests need and run the whole suite, embedded and on PostgreSQL + Redis"

$(VENV)/.installed: requirements.txt
	@py=$$($(FIND_PYTHON)); \
	if [ -z "$$py" ]; then echo "relaybay needs Python >= 3.12 (Django 6.1). Install python3.12 or python3.13 and run make again." >&2; exit 1; fi; \
	[ -x $(PY) ] || $$py -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-test.txt
	@touch $@

node_modules/.installed: package.json
	@command -v npm >/dev/null || { echo "make test needs npm (Node.js) to install the pinned Claude Code, Codex and Gemini CLIs." >&2; exit 1; }
	npm install --no-audit --no-fund --loglevel=error
	@test -x node_modules/@anthropic-ai/claude-code-linux-x64/claude || { echo "The Claude Code CLI binary did not install (node_modules/@anthropic-ai/claude-code-linux-x64/claude)." >&2; exit 1; }
	@test -x node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex || { echo "The Codex CLI binary did not install (node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex)." >&2; exit 1; }
	@node_modules/.bin/codex --version | grep -qx 'codex-cli 0.171.0' || { echo "node_modules/.bin/codex does not run as Codex CLI 0.171.0 (package.json pins it)." >&2; exit 1; }
	@node_modules/.bin/gemini --version | grep -qx '0.61.0' || { echo "node_modules/.bin/gemini does not run as Gemini CLI 0.61.0 (package.json pins it; it needs Node.js >= 20)." >&2; exit 1; }
	@touch $@

# Chromium (Debian's package, driven by Playwright with no browser download) and tmux.
system-tools:
	@missing=""; command -v chromium >/dev/null || missing="$$missing chromium"; command -v tmux >/dev/null || missing="$$missing tmux"; \
	if [ -n "$$missing" ]; then \
	  echo "Installing$$missing from Debian's packages"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "make test needs:$$missing (apt-get install -y$$missing)" >&2; exit 1; fi; \
	fi

migrate: $(VENV)/.installed
	$(PY) manage.py migrate --noinput -v 0

# setup_owner records the address (data/address): every command reaches this port without RELAYBAY_URL.
# relaybay.serve is daphne with a 10 s header timeout (docs/scale-out.md).
run: migrate
	@RELAYBAY_HOST=$(HOST) RELAYBAY_PORT=$(PORT) $(PY) manage.py setup_owner
	@echo "To have relaybay start at login and restart if it stops: $(PY) manage.py service install"
	RELAYBAY_HOST=$(HOST) RELAYBAY_PORT=$(PORT) $(PY) -m relaybay.serve -b $(HOST) -p $(PORT) relaybay.asgi:application

# `make test` runs the suite on the embedded default, then on the scale-out configuration
# (PostgreSQL + Redis, which this machine kind runs on 127.0.0.1 before each session and in CI).
# The scale-out pass runs what the database or the channel layer can change: every unit test
# whose path reaches them (their SQL runs on each database) and the end-to-end tests whose path
# crosses them (delivery, wake-ups, live pages, native rows). A test neither reaches (pytest mark
# embedded_only: a client's or a page's own behaviour, the hook client against its stub server,
# each way of connecting a CLI (Codex's and Gemini's dialects, the Claude Code plugin: their
# paths into relaybay run on both passes under claude_config and in the mixed fleet), an install
# of its own on the embedded default) runs once, on the embedded pass; one that starts
# relaybay processes on PostgreSQL + Redis whatever the pass (mark scale_out) runs once, on the
# scale-out pass. A service that does not answer fails the run; nothing is skipped.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_REDIS_URL ?= redis://127.0.0.1:6379/1
PYTEST := $(PY) -m pytest -n 2 --dist loadfile -q

test: $(VENV)/.installed-test node_modules/.installed system-tools
	@$(PY) -m tests.services "$(TEST_DATABASE_URL)" "$(TEST_REDIS_URL)"
	@echo "== make test 1/2: embedded default (SQLite + in-memory channel layer)"
	@embedded=0; env -u DATABASE_URL -u REDIS_URL $(PYTEST) -m "not scale_out" || embedded=$$?; \
	echo "== make test 2/2: scale-out (PostgreSQL $(TEST_DATABASE_URL) + Redis $(TEST_REDIS_URL))"; \
	scaled=0; DATABASE_URL="$(TEST_DATABASE_URL)" REDIS_URL="$(TEST_REDIS_URL)" $(PYTEST) -m "not embedded_only" || scaled=$$?; \
	if [ $$embedded != 0 ]; then echo "make test: the embedded pass failed (pytest exit $$embedded)" >&2; fi; \
	if [ $$scaled != 0 ]; then echo "make test: the scale-out pass failed (pytest exit $$scaled)" >&2; fi; \
	[ $$embedded = 0 ] && [ $$scaled = 0 ]

.PHONY: help run test migrate system-tools

# Benchmarks (figures, never assertions): every script under bench/, written up in docs/benchmarks.md.
# Needs wrk (Debian package) and PostgreSQL + Redis on 127.0.0.1 as on this machine kind; ~10 minutes (+ up to 3 waiting for a quiet machine).
bench: $(VENV)/.installed-test system-tools
	@command -v wrk >/dev/null || { if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; \
	  else echo "make bench needs wrk (apt-get install -y wrk)" >&2; exit 1; fi; }
	$(PY) -m pip install -q --disable-pip-version-check -r bench/requirements.txt
	$(PY) bench/run_all.py

.PHONY: bench
