# Two commands: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/aas_review
TEST_REDIS_URL ?= redis://127.0.0.1:6379/1

.PHONY: run test install install-dev bench

# requirements.txt is what the servers run (`make run`); requirements-dev.txt adds the test libraries and
# tools (`make test`, `make bench`). Both are pinned with hashes, compiled by pip-tools from the .in files.
# Each has its own stamp, so either target reinstalls when its list changes, whichever ran before.
# Install noise (package-index warnings) goes to var/install.log; it is shown only when the install fails.
define venv
@mkdir -p var
@$(PYTHON) -m venv $(VENV) > var/install.log 2>&1 || (cat var/install.log; exit 1)
@$(PY) -m pip install --quiet --upgrade pip >> var/install.log 2>&1 || (tail -40 var/install.log; exit 1)
endef

$(VENV)/.installed-run: requirements.txt
	@echo "installing requirements.txt (log: var/install.log)"
	$(venv)
	@$(PY) -m pip install --quiet -r requirements.txt >> var/install.log 2>&1 || (tail -40 var/install.log; exit 1)
	@touch $@

$(VENV)/.installed-dev: requirements-dev.txt requirements.txt
	@echo "installing requirements-dev.txt (log: var/install.log)"
	$(venv)
	@$(PY) -m pip install --quiet -r requirements-dev.txt >> var/install.log 2>&1 || (tail -40 var/install.log; exit 1)
	@touch $@

install: $(VENV)/.installed-run

install-dev: $(VENV)/.installed-dev

# The app with the demo runs. With DATABASE_URL/REDIS_URL set: PostgreSQL, Redis and a
# worker process; without: SQLite under var/ and tasks run in process.
run: install
	DEBUG=$${DEBUG:-1} $(PY) manage.py ensure_database
	DEBUG=$${DEBUG:-1} $(PY) manage.py migrate --noinput
	@mkdir -p var
	@echo "loading the demo runs (log: var/load_demo.log)"
	@DEBUG=$${DEBUG:-1} $(PY) manage.py load_demo > var/load_demo.log 2>&1 || (cat var/load_demo.log; exit 1)
	DEBUG=$${DEBUG:-1} $(PY) manage.py signing_key ensure
	DEBUG=$${DEBUG:-1} PORT=$(PORT) $(PY) manage.py serve_demo

# The whole suite against PostgreSQL and Redis, with a real worker for the tests that need one.
test: install-dev
	DEBUG=1 DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} REDIS_URL=$${REDIS_URL:-$(TEST_REDIS_URL)} \
		$(PY) -m pytest $(PYTEST_ARGS)

# The benchmark of DESIGN.md §11 on a database of its own; BENCH_ARGS="ingest latency" runs only those parts.
bench: install-dev
	DEBUG=1 $(PY) bench/benchmark.py $(BENCH_ARGS)
	DEBUG=1 $(PY) bench/verify_bench.py
	DEBUG=1 $(PY) bench/delivery_bench.py
