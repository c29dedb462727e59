# The two set-up commands of the README.
#   make demo : install rush and compare policies on the embedded synthetic Lublin workload
#   make test : install everything the tests need (Slurm, munge, Prometheus, OpenMPI, ...) and run them all
PYTHON ?= python3
TRACES ?= $(abspath ../shared/traces)

.PHONY: demo test lint bench

demo:
	$(PYTHON) -m pip install -q .
	rush compare lublin --policies FCFS,SPF,SAF,WFP3,F1 --out runs/demo
	rush report runs/demo --out runs/demo/plots

test:
	bash .ci/install-deps.sh
	RUSH_TRACE_MIRROR=$${RUSH_TRACE_MIRROR:-$(TRACES)} $(PYTHON) -m pytest -q -ra

lint:
	ruff check rush tests benchmarks sim collectors
	ruff format --check rush tests benchmarks sim collectors

bench:
	RUSH_TRACE_MIRROR=$${RUSH_TRACE_MIRROR:-$(TRACES)} $(PYTHON) benchmarks/bench_replay.py
