"""What the environment layer raises on names it cannot serve: one line each,
which the CLIs print before exiting 2."""


class EnvironmentNameError(ValueError):
  """A name no scheme knows; the one-line message lists likely fixes."""


class EnvironmentBuildError(ValueError):
  """A known name this stack cannot build (e.g. gym's Hopper-v4 model file,
  which MuJoCo 3 rejects); one line saying why."""
