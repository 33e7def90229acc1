# Two commands: `make demo` (a ~3 minute ActorQ run) and `make test`.
# Both create .venv on first use from the exact pins in requirements/lock.txt
# (installed with --no-deps: the lock is the whole environment, nothing else
# is resolved, so a fresh machine gets the stack that was verified here).
SHELL := /bin/bash
PYTHON310 ?= $(shell command -v $$HOME/.pyenv/versions/3.10.13/bin/python || command -v python3.10)
VENV := .venv
PY := $(VENV)/bin/python
export MUJOCO_GL := disable
export TF_CPP_MIN_LOG_LEVEL := 2

.PHONY: demo demo-multihost test test-unit test-integration bazel-test benchmark clean-venv

$(VENV)/.installed: requirements/lock.txt setup.py
	@test -n "$(PYTHON310)" || { echo "Python 3.10 not found (dm-launchpad has no wheels past 3.10); install it with pyenv: pyenv install 3.10.13"; exit 2; }
	$(PYTHON310) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade 'pip<25' wheel
	$(PY) -m pip install -q --no-deps -r requirements/lock.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

demo: $(VENV)/.installed
	$(PY) -m launch.train --agent=d4pg --env=gym:Pendulum-v1 \
	  --actor_precision=int8 --num_actors=2 --max_seconds=180 \
	  --run_dir=runs/demo --overwrite

# Three network namespaces on this machine stand in for three hosts: learner,
# replay, counter, quantizer and evaluator on h1, one actor each on h2 and h3.
demo-multihost: $(VENV)/.installed
	mkdir -p runs
	tools/netns_cluster.sh up 3 --hosts-file runs/demo_multihost_hosts.yaml
	trap 'tools/netns_cluster.sh down' EXIT; \
	$(PY) -m launch.train --agent=d4pg --env=gym:Pendulum-v1 \
	  --actor_precision=int8 --num_actors=2 --max_seconds=180 \
	  --launch_type=hosts --hosts_file=runs/demo_multihost_hosts.yaml \
	  --run_dir=runs/demo_multihost --overwrite

test: $(VENV)/.installed
	$(PY) -m pytest -q tests

test-unit: $(VENV)/.installed
	$(PY) -m pytest -q tests/unit

test-integration: $(VENV)/.installed
	$(PY) -m pytest -q -m integration tests/integration

bazel-test: $(VENV)/.installed
	tools/bazel_test.sh

benchmark: $(VENV)/.installed
	$(PY) -m benchmarks.actor_inference

clean-venv:
	rm -rf $(VENV)
