#!/usr/bin/env bash
# Builds Google Research Football (gfootball 2.10.2, a PyPI source
# distribution) into a virtualenv on Debian's Python 3.11, whose
# Boost.Python the engine links: the project's 3.10 stack talks to it
# through quarl/envs/pipe_server.py.
#
#   tools/install_football.sh VENV_DIR      (make football)
set -euo pipefail
venv=${1:?usage: tools/install_football.sh VENV_DIR}

export DEBIAN_FRONTEND=noninteractive
sudo=$([ "$(id -u)" = 0 ] || echo sudo)
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends \
  cmake build-essential python3.11-venv python3.11-dev \
  libgl1-mesa-dev libsdl2-dev libsdl2-image-dev libsdl2-ttf-dev \
  libsdl2-gfx-dev libboost-python-dev libboost-system-dev \
  libboost-filesystem-dev libboost-thread-dev >/dev/null

/usr/bin/python3.11 -m venv --clear "$venv"
# The engine's build script runs a bare `python3 -c 'import psutil'`, and
# CMake finds Python through VIRTUAL_ENV: the venv goes first on PATH, and
# the build sees the venv (no build isolation).
export PATH="$(cd "$venv" && pwd)/bin:$PATH" VIRTUAL_ENV="$(cd "$venv" && pwd)"
python -m pip install -q pip==26.3 setuptools==84.2.1 wheel==0.48.0
# gym 0.23: 0.26's reset and step no longer fit gfootball's; gfootball
# imports six without declaring it.
pins=(psutil==7.2.2 six==1.17.0 gym==0.23.1 numpy==2.4.6
      opencv-python==5.1.0.95 pygame==2.6.1 scipy==1.17.1 absl-py==2.5.1)
python -m pip install -q "${pins[@]}"
python -m pip install -q --no-build-isolation gfootball==2.10.2 "${pins[@]}"
python -c 'import gfootball.env' 2>/dev/null
echo "Football installed in $venv"
