r"""Train one agent with quantized (ActorQ) actors on Launchpad.

Example (3-minute D4PG with int8 LiteRT actors on Pendulum):

  python -m launch.train --agent=d4pg --env=gym:Pendulum-v1 \
      --actor_precision=int8 --num_actors=2 --max_seconds=180 \
      --run_dir=runs/pendulum_int8

Exit codes: 0 budget reached; 1 a node failed; 2 bad input (nothing started);
130 interrupted (Ctrl-C). summary.json is written in every case but 2.
"""
import sys

from absl import flags

import agents
from launch import cli
from launch import compression_flags
from launch.runtime import network
from launch.runtime import resume
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import runner
from launch import settings
from launch.config import LaunchOptions
from launch.config import RunConfig

RUN_FLAGS = settings.define(RunConfig)
LAUNCH_FLAGS = settings.define(LaunchOptions)
COMPRESSION_FLAGS = compression_flags.FLAGS
# Each agent's hyper-parameters as --AGENT.FIELD (e.g. --td3.batch_size).
AGENT_FLAGS = {name: settings.define(agents.config_class(name),
                                     prefix=f'{name}.', unset_defaults=True)
               for name in agents.AGENT_NAMES}
flags.adopt_module_key_flags(settings)  # The generated flags, in --help.


def config_from_flags():
  run = RUN_FLAGS.given()
  agent = run.get('agent', RunConfig.agent)
  for other, group in AGENT_FLAGS.items():
    given = group.given()
    if other != agent and given:
      raise cli.UsageError(
          f'--{other}.{sorted(given)[0]} is a {other} setting, but '
          f'--agent={agent}')
  return cli.make_run_config(
      **run, agent_overrides=AGENT_FLAGS[agent].given()
      if agent in AGENT_FLAGS else {},
      compression=compression_flags.compression_config(),
      preset=LAUNCH_FLAGS.holders['preset'].value)


def main(argv):
  del argv  # run_main refuses positional arguments.
  try:
    handed = network.handed_over()  # Resolved by the launcher that re-executed.
    if handed:
      config, overwrite, sys.argv = handed  # argv: for config.json's record.
    else:
      config = config_from_flags()
      overwrite = LAUNCH_FLAGS.holders['overwrite'].value
      if config.resume:  # The same run, or nothing: before anything starts.
        config = resume.check(config.run_dir, config)
      if config.launch_type != 'ray':  # A cluster is a private network.
        network.enter(config.network, (config, overwrite, sys.argv))
    # Locks run_dir for this process (the re-executed one, when isolating).
    run_dir_lib.prepare_run_dir(config.run_dir, overwrite, config.resume)
  except (cli.UsageError, run_dir_lib.RunDirError,
          network.IsolationError) as error:
    _usage_error(str(error))
  if network.current() == 'isolated':
    network.bring_up_loopback()
  summary, code = runner.run(config)
  print(runner.format_summary(summary), flush=True)
  print(f'run directory: {config.run_dir}', flush=True)
  sys.exit(code)


def _usage_error(message: str):
  cli.usage_exit('train', message)


def run_main():
  cli.run_main(main, 'train')


if __name__ == '__main__':
  run_main()
