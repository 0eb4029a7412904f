# mutexlab: common tasks. `make help` lists them.
CARGO ?= cargo
ARGS ?=

.PHONY: help build run elect compare compare-table test bench bench-check check-table lint fmt clean gradescope-selftest protocol-doc schemas

help:
	@echo "make run    # a small run on defaults (add ARGS='--algo flock -n 8')"
	@echo "make elect  # an election on defaults (add ARGS=\"--algo chang-roberts --faults 'kill leader at 200ms'\")"
	@echo "make compare # the notes' comparison table, measured (add ARGS='--markdown' or ARGS='--algos centralized,lamport')"
	@echo "make test   # the whole test suite"
	@echo "make bench  # message latency and throughput on this machine, beside a bare baseline program (release build; ARGS=--json)"
	@echo "make bench-check # mutexlab's checker against Stateright on the same models (QUICK=1: n=3 k=1 only)"
	@echo "make check-table  # the README's table of check counts (release build; MAX_SECONDS=60 per check)"
	@echo "make compare-table  # write the README's comparison table afresh from compare --markdown (release build; ARGS='--repeat 5')"
	@echo "make lint   # rustfmt check and clippy with warnings as errors"
	@echo "make gradescope-03-election  # the lab's Gradescope autograder bundle, target/gradescope/03-election.zip (labs/README.md)"
	@echo "make protocol-doc # write labs/PROTOCOL.md's messages and rules afresh from the code"
	@echo "make schemas # write schemas/*.schema.json, the JSON Schemas of every --json output, afresh from the types"
	@echo "make lab-01-ricart-agrawala  # grade your node in labs/01-ricart-agrawala (SOLUTION=1: the reference; GRADESCOPE=results.json: Gradescope's file too; also lab-02-token, lab-03-election, lab-04-failover, lab-05-fifo)"

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

# The baseline program (bench/baseline/) is a binary of this package: `mutexlab bench`
# runs it from beside itself.
bench:
	$(CARGO) build --release --bin mutexlab-baseline
	$(CARGO) run --release -- bench $(ARGS)

# A crate of its own (bench/check, its own workspace and lock file): the library and
# the root's tests never build Stateright.
bench-check:
	cd bench/check && $(CARGO) run --release -q -- $(if $(QUICK),--quick) $(ARGS)

check-table: build
	sh scripts/check-table.sh

# The README's comparison table: what `compare --markdown` prints, between its markers.
compare-table: build
	ARGS='$(ARGS)' sh scripts/compare-table.sh

# The table of every algorithm's messages in labs/PROTOCOL.md, from the message types, and
# every algorithm's rules, from its module's doc comment
# (the test that checks it writes it when asked).
protocol-doc:
	UPDATE_PROTOCOL_DOC=1 $(CARGO) test -q --lib -- --exact registry::tests::protocol_doc_lists_every_message_as_the_code_has_it

# The JSON Schemas of every --json output, from the types that print them (the test
# that checks the files writes them when asked).
schemas:
	UPDATE_SCHEMAS=1 $(CARGO) test -q --lib -- --exact schemas::tests::the_published_schemas_are_what_the_types_generate

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

fmt:
	$(CARGO) fmt

clean:
	$(CARGO) clean

# Grade a lab's crate: `make lab-01-ricart-agrawala` grades the node in its src/node.rs,
# SOLUTION=1 the reference; ARGS='2.1 --n 3 --seed 46' narrows to one test and seed;
# GRADESCOPE=results.json also writes Gradescope's results file there.
# make exits 2 on any failure, so the grader's own code (1: a test failed) is printed.
# Each lab is a crate of its own (not part of this package's build) sharing target/.
lab-%:
	@if [ ! -d labs/$* ]; then echo "make: there is no lab labs/$* (see labs/README.md)" >&2; exit 2; fi
	@if [ ! -f labs/$*/Cargo.toml ]; then echo "make: labs/$* has nothing to grade; read labs/$*/README.md" >&2; exit 2; fi
	@cd labs/$* && $(CARGO) run -q -- grade $(if $(SOLUTION),--solution) $(if $(GRADESCOPE),--gradescope '$(abspath $(GRADESCOPE))') $(ARGS); \
	code=$$?; if [ $$code -ne 0 ]; then \
	  echo "make: the grader exited $$code (the README's exit table); make itself reports any failure as 2" >&2; \
	  exit $$code; fi

# A lab's Gradescope autograder bundle (labs/README.md, "A course at scale"), and its
# test: run_autograder on lab 03's reference, skeleton and a planted bug.
gradescope-%:
	sh scripts/gradescope/bundle.sh $*

gradescope-selftest:
	bash scripts/gradescope/selftest.sh
