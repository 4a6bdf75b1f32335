# One command per job. `make test` and `make demo` install what they need on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SHARED ?= ../shared
PYTEST_ARGS ?=

.PHONY: all test check lint types contracts unit demo bench clean system-deps generate check-generated kafka-jars

all: test

# Debian packages the tests use: kcat (a real librdkafka client), a JDK for Spark, ZooKeeper, pipx (the install test),
# headless Chromium and its driver (the console's browser tests).
system-deps:
	@missing=""; \
	command -v kcat >/dev/null 2>&1 || missing="$$missing kcat"; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	test -f /usr/share/java/zookeeper.jar || missing="$$missing zookeeper"; \
	command -v pipx >/dev/null 2>&1 || missing="$$missing pipx"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null 2>&1 || missing="$$missing chromium-driver"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,fast,spark]'
	@# bytecode for our sources, as pip writes it for installed packages (an editable install does not)
	$(PY) -m compileall -q src
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/ruff check src tests bench

types: $(STAMP)
	$(VENV)/bin/mypy

contracts: $(STAMP)
	$(VENV)/bin/lint-imports

# Apache Kafka's jars (broker, tools, Java client) for tests/apache_kafka/, fetched once into .cache/kafka/<version>/.
kafka-jars: system-deps
	tools/kafka/fetch.sh

# --dist loadfile: each test module on one worker, its tests in file order (modules that share one cluster or
# JVM need it). The xdist_group markers the conftests add (loadgroup) take no effect with pytest 9 and
# pytest-xdist 3.8: xdist renames item._nodeid, which pytest 9 no longer reads.
# Spark's tests run in workers of their own: py4j's callback server (foreachBatch calls back into Python through
# it) waits on select(), which fails for descriptors numbered 1024 and up, and a worker that has run the other
# modules holds that many; the streaming query then hung until the test's timeout (CI, 2026-11-28). Exit code 5 of
# the second run: PYTEST_ARGS selected none of them.
unit: $(STAMP) system-deps kafka-jars
	$(PY) -m pytest -n 2 --dist loadfile --ignore=tests/spark $(PYTEST_ARGS)
	$(PY) -m pytest -n 2 --dist loadfile tests/spark $(PYTEST_ARGS) || [ $$? -eq 5 ]

KAFKA_MESSAGES := $(SHARED)/kafka-messages
# Generated-code freshness is checked only where the descriptors sit beside the project.
CHECK_GENERATED := $(if $(wildcard $(KAFKA_MESSAGES)),check-generated,)

generate: $(STAMP)
	$(PY) tools/generate_protocol.py $(KAFKA_MESSAGES)

check-generated: $(STAMP)
	$(PY) tools/generate_protocol.py $(KAFKA_MESSAGES) --check

check: lint types contracts unit $(CHECK_GENERATED)

test: check

demo: $(STAMP) system-deps
	$(VENV)/bin/samsa demo

bench: $(STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
