r"""Greedy returns of a trained D4PG policy: the learner's fp32 policy, the
int8 model actors run, and that model with a deliberately wrong scale.

The program test (tests/integration/test_d4pg_program.py) bounds how far the
int8 model's greedy return may sit from fp32's. This measures what a broken
quantizer does to that gap, so the bound can sit between a faithful model and
a broken one: a wrong scale multiplies the scale of every int8 activation a
hidden layer writes (policies.with_wrong_scale). All models meet the same
episode starts; the int8 model is calibrated as a publish is, on observations
of the policy exploring.

  python -m benchmarks.int8_returns --run_dir=RUN [--episodes=10]
"""
from absl import flags

from benchmarks import policies
from launch import cli

_RUN_DIR = flags.DEFINE_string('run_dir', None,
                               'A D4PG run directory (its last learner '
                               'checkpoint is measured).', required=True)
_EPISODES = flags.DEFINE_integer('episodes', 10, 'Greedy episodes per model.')
_SCALES = flags.DEFINE_list('wrong_scales', ['0.25', '0.5', '2', '8'],
                            'Factors of the wrong activation scales.')
cli.require_positive('episodes')


def main(argv):
  del argv
  try:
    scales = [float(value) for value in _SCALES.value]
    returns = policies.greedy_returns_by_model(_RUN_DIR.value,
                                               _EPISODES.value, scales)
  except (OSError, ValueError, KeyError) as error:
    cli.usage_exit('int8_returns', str(error))
  fp32 = returns['fp32'].mean()
  print(f'greedy returns of {_RUN_DIR.value}, {_EPISODES.value} episodes '
        'each, the same starts\n\n| model | mean return | min | max | '
        '|mean - fp32 mean| |\n|---|---|---|---|---|')
  for name, values in returns.items():
    print(f'| {name} | {values.mean():.1f} | {values.min():.1f} | '
          f'{values.max():.1f} | {abs(values.mean() - fp32):.1f} |')


if __name__ == '__main__':
  cli.run_main(main, 'int8_returns')
