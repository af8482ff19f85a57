# funsor-core developer tasks. `make demo` and `make test` set everything up on a fresh machine.
#
# The virtual environment lives in .venv; .venv/.installed is a stamp so that a second
# `make test` does not reinstall. It is redone when pyproject.toml or constraints.txt change.
# torch must always be installed with `-c constraints.txt`: any torch other than the pinned
# CPU wheel pulls gigabytes of CUDA packages.

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
PIP := $(VPY) -m pip
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.bench-installed
PIP_FLAGS := --disable-pip-version-check --no-input

# One thread everywhere: the machines have 2 cores, and timings must be comparable.
SINGLE_THREAD := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
	XLA_FLAGS="--xla_cpu_multi_thread_eigen=false"

# Extra arguments for pytest, e.g. `make test PYTEST_ARGS="-x -k gaussian"`.
PYTEST_ARGS ?=
# The suite runs in two processes (pytest-xdist), one per core of the 2-core machines, each
# single-threaded: 3-4 minutes for 8,800 tests (conftest.py compiles the suite's jax programs
# without LLVM's expensive passes); a worker that runs dry steals the other's queued tests, so
# a long test near the end does not leave one core idle. `make test PYTEST_WORKERS=` runs it in one.
PYTEST_WORKERS ?= -n 2 --dist worksteal

.PHONY: venv test lint demo bench clean distclean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@if [ ! -x $(VPY) ]; then \
		echo "creating $(VENV) with $$($(PYTHON) --version 2>&1)"; \
		$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
			|| { echo "funsor-core needs Python >= 3.10"; exit 1; }; \
		$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
			echo "'$(PYTHON) -m venv' failed: install the venv module (e.g. python3-venv)"; \
			exit 1; }; \
	fi
	$(PIP) install $(PIP_FLAGS) -c constraints.txt -e ".[torch,jax,test,demo]"
	@touch $@

# pytest exits 5 when it collects nothing (only while the skeleton has no tests); say so
# loudly instead of failing.
test: venv
	@set +e; $(SINGLE_THREAD) $(VPY) -m pytest $(PYTEST_WORKERS) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests were collected (exit 5)"; rc=0; fi; \
	exit $$rc

lint: venv
	$(VENV)/bin/ruff check .

demo: venv
	$(SINGLE_THREAD) $(VPY) examples/demo.py
	$(SINGLE_THREAD) $(VPY) examples/conjugate_models.py
	$(SINGLE_THREAD) $(VPY) examples/bayesian_network.py
	$(SINGLE_THREAD) $(VPY) examples/hmm.py
	$(SINGLE_THREAD) $(VPY) examples/kalman_bias.py
	$(SINGLE_THREAD) $(VPY) examples/gaussian_mixture.py
	$(SINGLE_THREAD) $(VPY) examples/slds.py
	$(SINGLE_THREAD) $(VPY) examples/loopy_grid.py
	$(SINGLE_THREAD) $(VPY) examples/cluster_bp.py --iters 8
	$(SINGLE_THREAD) $(VPY) examples/cluster_messages.py
	$(SINGLE_THREAD) $(VPY) examples/variational.py
	$(SINGLE_THREAD) $(VPY) examples/allocation.py
	$(SINGLE_THREAD) $(VPY) examples/compiled_rectangle.py
	$(SINGLE_THREAD) $(VPY) examples/compiled_digits.py --sizes 8 10 --batch 50
	$(SINGLE_THREAD) $(VPY) examples/compiled_learning.py --train 25 50 --steps 15
	$(SINGLE_THREAD) $(VPY) examples/sharded.py

# Peers (funsor 0.4.8, dynamax, pgmpy) are optional: if one will not install, the benchmarks
# still run and report the peer as missing. The installed numpy/jax/torch are frozen while
# the peers install, so a peer can never change the versions the tests ran with.
$(BENCH_STAMP): $(STAMP)
	$(PIP) freeze | grep -iE '^(numpy|jax|jaxlib|torch)==' > $(VENV)/bench-constraints.txt || true
	$(PIP) install $(PIP_FLAGS) -c constraints.txt -c $(VENV)/bench-constraints.txt -e ".[bench]" \
	|| { echo "bench extra did not install as a whole; trying the peers one by one"; \
	     $(PIP) install $(PIP_FLAGS) -c constraints.txt -c $(VENV)/bench-constraints.txt \
	       "funsor==0.4.8" \
	       || echo "WARNING: funsor 0.4.8 did not install; benchmarks run without it"; \
	     $(PIP) install $(PIP_FLAGS) -c constraints.txt -c $(VENV)/bench-constraints.txt \
	       dynamax \
	       || echo "WARNING: dynamax did not install; benchmarks run without it"; \
	     $(PIP) install $(PIP_FLAGS) -c constraints.txt -c $(VENV)/bench-constraints.txt \
	       pgmpy \
	       || echo "WARNING: pgmpy did not install; benchmarks run without it"; \
	     $(PIP) install $(PIP_FLAGS) -c constraints.txt -c $(VENV)/bench-constraints.txt \
	       numpyro \
	       || echo "WARNING: numpyro did not install; funsor 0.4.8 runs without jax"; }
	@touch $@

bench: $(BENCH_STAMP)
	$(SINGLE_THREAD) $(VPY) benchmarks/overhead.py
	$(SINGLE_THREAD) $(VPY) benchmarks/gaussian.py
	$(SINGLE_THREAD) $(VPY) benchmarks/kalman.py
	$(SINGLE_THREAD) $(VPY) benchmarks/distributions.py
	$(SINGLE_THREAD) $(VPY) benchmarks/contraction.py
	$(SINGLE_THREAD) $(VPY) benchmarks/adjoint.py
	$(SINGLE_THREAD) $(VPY) benchmarks/markov.py
	$(SINGLE_THREAD) $(VPY) benchmarks/approx.py

clean:
	rm -rf build dist *.egg-info .pytest_cache .hypothesis .ruff_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

# Also removes the virtual environment; the next `make test` rebuilds it.
distclean: clean
	rm -rf $(VENV)
