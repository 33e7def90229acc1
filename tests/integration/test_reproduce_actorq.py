"""The ActorQ reproduction script end to end on a tiny budget."""
import csv
import json

from conftest import NETWORK_FLAGS
from conftest import run_module


def test_reproduce_actorq_tiny(tmp_path):
    out = tmp_path / 'actorq'
    result = run_module(
        'launch.reproduce_actorq', f'--out_dir={out}',
        '--tasks=d4pg:gym:Pendulum-v1', '--precisions=fp32_tf,int8',
        '--max_seconds=30', '--num_actors=1',
        *[f'--train_args={flag}' for flag in NETWORK_FLAGS], timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert '[sweep] run 2/2' in result.stdout
    for name in ('results.md', 'results.csv', 'plots/speedup.png',
                 'plots/co2.png',
                 'plots/return_acme_d4pg_gym_Pendulum-v1_seed0.png'):
        assert (out / name).exists(), name
    with open(out / 'results.csv') as handle:
        rows = list(csv.DictReader(handle))
    assert {r['precision'] for r in rows} == {'fp32_tf', 'int8'}
    for row in rows:
        assert float(row['energy_kwh']) > 0 and float(row['co2_kg']) > 0
    for precision in ('fp32_tf', 'int8'):
        run = (out / 'runs' / 'acme' / 'd4pg_gym_Pendulum-v1' / 'seed0' /
               precision)
        assert (run / 'emissions.csv').exists()
        summary = json.loads((run / 'summary.json').read_text())
        # The nodes mark their first steps; the replay regime is reported.
        assert 0 < summary['time_to_first_actor_step_s'] < summary['wall_s']
        assert summary['replay']['regime'] == 'samples_per_insert'
        assert summary['pipeline']['bound'] in ('actor', 'learner')
