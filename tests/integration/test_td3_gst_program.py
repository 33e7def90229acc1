"""A short real TD3 + GST program: compression.csv from the first row."""
import csv

import pytest

from conftest import load_json
from conftest import run_module


@pytest.mark.parametrize('block_size', [4])
def test_td3_gst_writes_compression_csv(tmp_path, block_size):
    run_dir = tmp_path / 'run'
    result = run_module(
        'launch.train', '--agent=td3', '--env=gym:Pendulum-v1',
        '--actor_precision=int8', '--num_actors=1', '--max_seconds=45',
        '--compression=gst', f'--gst_block_size={block_size}',
        '--gst_s_shift=0.25', '--sparsity_final=0.9', '--prune_begin_step=0',
        '--prune_end_step=1500', '--min_replay_size=500',
        f'--run_dir={run_dir}')
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with open(run_dir / 'compression.csv') as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) >= 3
    circulant_cr = 1 - 1 / block_size
    first = rows[0]
    assert first['phase'] == 'circulant'
    assert float(first['compressed_cr']) >= circulant_cr - 1e-9
    layer_columns = [k for k in first if k.startswith('cr/')]
    assert len(layer_columns) == 3  # Policy hidden layer + two critics.
    steps = [int(r['learner_step']) for r in rows]
    assert steps == sorted(steps)
    # The average CR never dips below circulant before the hand-over.
    for row in rows:
        if row['phase'] == 'circulant':
            assert float(row['compressed_cr']) >= circulant_cr - 1e-9
    summary = load_json(run_dir / 'summary.json')
    assert summary['compression'] == 'gst'
    assert summary['average_cr'] >= 0.25 * circulant_cr
    assert summary['publishes'] >= 1
