"""Keep known third-party noise out of program output.

Every actor, evaluator and test process builds environments, so one stray
banner or log file per construction multiplies into a lot of noise.
"""
import contextlib
import io
import threading
import warnings

from absl import logging

# MuJoCo deprecation warnings raised by model files bundled inside gym and
# dm_control; we cannot edit those files and the models still load correctly.
_HARMLESS_MUJOCO_WARNINGS = ("compiler attribute 'settotalmass' is deprecated",)

_mujoco_handler_lock = threading.Lock()


def import_gym():
  """Imports gym 0.26 without its 'Gym has been unmaintained' banner.

  The banner is printed to stderr on first import and says nothing a run
  can act on.
  """
  with contextlib.redirect_stderr(io.StringIO()), \
      contextlib.redirect_stdout(io.StringIO()), \
      warnings.catch_warnings():
    warnings.simplefilter('ignore')
    import gym  # pylint: disable=g-import-not-at-top
  return gym


def import_gymnasium():
  """Imports gymnasium 1.x (it prints nothing, but is imported on demand:
  processes that build no gymnasium env do not pay for it)."""
  import gymnasium  # pylint: disable=g-import-not-at-top
  return gymnasium


def _log_mujoco_warning(message: str) -> None:
  if not any(known in message for known in _HARMLESS_MUJOCO_WARNINGS):
    logging.warning('MuJoCo: %s', message)


@contextlib.contextmanager
def quiet_mujoco_compile():
  """Routes MuJoCo warnings to absl logging while a model is compiled.

  MuJoCo's default handler prints each warning to stderr *and* appends it to
  MUJOCO_LOG.TXT in the working directory, so every HalfCheetah built would
  drop a file next to the caller. Known-harmless asset deprecations are
  dropped; anything else is still logged. The previous handler (dm_control
  installs its own) is restored afterwards.
  """
  import mujoco  # pylint: disable=g-import-not-at-top
  with _mujoco_handler_lock:
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(_log_mujoco_warning)
    try:
      yield
    finally:
      mujoco.set_mju_user_warning(previous)
