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

from launch import cli
from launch import compression_flags
from launch.runtime import handoff
from launch.runtime import network
from launch.runtime import resume
from launch.runtime import run_dir as run_dir_lib
from launch.runtime import runner
from launch import settings

FLAGS = settings.define_train(compression=compression_flags.FLAGS)
flags.adopt_module_key_flags(settings)  # The generated flags, in --help.


def main(argv):
  del argv  # run_main refuses positional arguments.
  try:
    # A sweep, or this launcher before it entered the network namespace,
    # hands the resolved config over as data: nothing is resolved twice.
    handed = handoff.received()
    if handed:
      config, sys.argv = handed  # argv: for config.json's record.
    else:
      config = cli.resolve(FLAGS.given())
    if config.resume and config.resume_point is None:
      # The same run, or nothing: before anything starts.
      config = resume.check(config.run_dir, config)
    if config.launch_type != 'ray':  # A cluster is a private network.
      network.enter(config.network, (config, sys.argv))
    # Locks run_dir for this process (the re-executed one, when isolating).
    run_dir_lib.prepare_run_dir(config.run_dir, config.overwrite,
                                config.resume)
  except (cli.UsageError, run_dir_lib.RunDirError, network.IsolationError,
          handoff.HandoffError) as error:
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
