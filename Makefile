# mutexlab: common tasks. `make help` lists them.
CARGO ?= cargo
ARGS ?=

.PHONY: help build run elect compare test bench lint fmt clean

help:
	@echo "make run    # a small run on defaults (add ARGS='--algo flock -n 8')"
	@echo "make elect  # an election on defaults (add ARGS=\"--algo chang-roberts --faults 'kill leader at 200ms'\")"
	@echo "make compare # the notes' comparison table, measured (add ARGS='--markdown' or ARGS='--algos centralized,lamport')"
	@echo "make test   # the whole test suite"
	@echo "make bench  # message latency and throughput on this machine (release build; ARGS=--json)"
	@echo "make lint   # rustfmt check and clippy with warnings as errors"

build:
	$(CARGO) build --release

run:
	$(CARGO) run --release -- run $(ARGS)

elect:
	$(CARGO) run --release -- elect $(ARGS)

compare:
	$(CARGO) run --release -- compare $(ARGS)

test:
	$(CARGO) test

bench:
	$(CARGO) run --release -- bench $(ARGS)

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

fmt:
	$(CARGO) fmt

clean:
	$(CARGO) clean
