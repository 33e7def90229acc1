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

.PHONY: demo demo-multihost test test-unit test-integration test-football football bazel-test benchmark docs results clean-venv

# The editable install goes through pyproject.toml's build backend (PEP 660),
# not the deprecated `setup.py develop`; editable_mode=compat puts the
# repository root on sys.path, as the legacy install did (so `benchmarks`
# and `tools` import from any directory too). setuptools>=64 has PEP 660; the
# one Python 3.10 bundles (65.5) is kept, not upgraded.
$(VENV)/.installed: requirements/lock.txt setup.py pyproject.toml
	@test -n "$(PYTHON310)" || { echo "Python 3.10 not found (dm-launchpad has no wheels past 3.10); install it with pyenv: pyenv install 3.10.13"; exit 2; }
	$(PYTHON310) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade 'pip<25' wheel
	$(PY) -m pip install -q 'setuptools>=64'
	$(PY) -m pip install -q --no-deps -r requirements/lock.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation \
	  --config-settings editable_mode=compat -e .
	touch $@

demo: $(VENV)/.installed
	$(PY) -m launch.train --agent=d4pg --env=gym:Pendulum-v1 \
	  --actor_precision=int8 --num_actors=2 --max_seconds=180 \
	  --run_dir=runs/demo --overwrite

# A three-machine Ray cluster on this machine: three network namespaces, Ray's
# head on h1 (replay, counter, learner, quantizer, evaluator: its Ray
# resources say so) and an actor machine each on h2 and h3. The driver runs
# on h1: the host namespace cannot reach the cluster's private range.
demo-multihost: $(VENV)/.installed
	mkdir -p runs
	ray_tmp=$$(mktemp -d /tmp/quarl-ray-XXXX); \
	trap 'tools/netns_cluster.sh down; rm -rf "$$ray_tmp"' EXIT; \
	tools/netns_cluster.sh up 3 --ray "$$ray_tmp" && \
	ip netns exec quarl-h1 $(PY) -m launch.train --agent=d4pg \
	  --env=gym:Pendulum-v1 --actor_precision=int8 --num_actors=2 \
	  --max_seconds=180 --launch_type=ray --ray_address=10.213.0.1:6379 \
	  --run_dir=runs/demo_multihost --overwrite

test: $(VENV)/.installed
	$(PY) -m pytest -q tests --ignore=tests/football

test-unit: $(VENV)/.installed
	$(PY) -m pytest -q tests/unit

test-integration: $(VENV)/.installed
	$(PY) -m pytest -q -m integration tests/integration

# Google Research Football (football:SCENARIO) runs under its own Python
# (Debian's 3.11, for its Boost.Python), built from source (C++);
# its tests train on the real engine, so they have their own target.
FOOTBALL_VENV := .cache/football/venv
football: $(FOOTBALL_VENV)/.installed

$(FOOTBALL_VENV)/.installed: tools/install_football.sh
	tools/install_football.sh $(FOOTBALL_VENV)
	touch $@

test-football: $(VENV)/.installed $(FOOTBALL_VENV)/.installed
	$(PY) -m pytest -q tests/football

bazel-test: $(VENV)/.installed
	tools/bazel_test.sh

benchmark: $(VENV)/.installed
	$(PY) -m benchmarks.actor_inference

# The docs site (mkdocs.yml; MkDocs + Material, pinned in the lock) into site/.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# Rewrites the committed result tables and plots from the committed run files
# (nothing is trained): `git diff docs/results` stays empty when they are in
# step. ActorQ's commands are the ones each results.md records on its
# 'Command:' line, plus --tables_only (which that line leaves out).
RESULTS_ACTORQ := authors authors_long authors_packed others unpinned paper_tasks
results: $(VENV)/.installed
	$(PY) -m launch.reproduce_gst --tables_only --results_dir=docs/results/gst_td3paper >/dev/null
	$(PY) -m launch.reproduce_gst --tables_only --results_dir=docs/results/gst >/dev/null
	$(PY) -m launch.reproduce_gst --tables_only --agent=a2c --results_dir=docs/results/gst_a2c_standard >/dev/null
	$(PY) -m launch.reproduce_gst --tables_only --agent=ppo --results_dir=docs/results/gst_ppo_football >/dev/null
	$(PY) -m launch.reproduce_gst --tables_only --agent=ppo --results_dir=docs/results/gst_ppo_breakout >/dev/null
	$(PY) -m benchmarks.ppo_reference --tables_only --results_dir=docs/results/ppo_reference >/dev/null
	@set -e; for d in $(RESULTS_ACTORQ); do \
	  md=docs/results/actorq_regimes/$$d/results.md; \
	  args=$$(sed -n 's/^Command: `python -m launch.reproduce_actorq \(.*\)`$$/\1/p' $$md); \
	  test -n "$$args" || { echo "no Command: line in $$md"; exit 2; }; \
	  echo "$(PY) -m launch.reproduce_actorq $$args --tables_only"; \
	  $(PY) -m launch.reproduce_actorq $$args --tables_only >/dev/null; \
	done
	git status --short docs/results

clean-venv:
	rm -rf $(VENV)
