# Aliases of the README's two set-up commands (./setup.sh needs no make: stock Debian 12 has none).
#   make demo : ./setup.sh demo  (install rush into .venv/, compare policies on the synthetic Lublin workload)
#   make test : ./setup.sh test  (Debian packages, rush with every extra into .venv/, the whole suite)
VENV ?= .venv
TRACES ?= $(abspath ../shared/traces)
LINTED = rush tests benchmarks sim collectors

.PHONY: demo test lint bench warmup

demo:
	./setup.sh demo

test:
	./setup.sh test

warmup:
	./setup.sh install

lint:
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

bench:
	RUSH_TRACE_MIRROR=$${RUSH_TRACE_MIRROR:-$(TRACES)} $(VENV)/bin/python benchmarks/bench_replay.py
	RUSH_TRACE_MIRROR=$${RUSH_TRACE_MIRROR:-$(TRACES)} $(VENV)/bin/python benchmarks/bench_startup.py
