"""Policy -> TFLite conversion: fidelity per precision, real int8, NaN refusal."""
import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf

from quarl import envs
from quarl import quantization
from quarl.quantization import calibration as calibration_lib
from quarl.quantization.calibration import rollout_observations

# Max |quantized - fp32| on held observations for a tanh policy with outputs
# in [-1, 1]. fp16 and dynamic-range keep activations in float; full int8
# quantizes activations too, so it gets the loosest bound.
TOLERANCE = {'fp32': 1e-5, 'fp16': 5e-3, 'dynamic_int8': 5e-2, 'int8': 0.15}


@pytest.fixture(scope='module')
def policy_and_data():
    tf.random.set_seed(0)
    policy = snt.Sequential([
        snt.nets.MLP([64, 64], activate_final=True), snt.Linear(1), tf.tanh])
    observations = rollout_observations(
        envs.make_environment('gym:Pendulum-v1', 0), 320,
        np.random.default_rng(0))
    policy(tf.constant(observations[:1]))
    return policy, observations[:256], observations[256:]


@pytest.mark.parametrize('precision', quantization.PRECISIONS)
def test_output_within_tolerance_of_fp32(policy_and_data, precision):
    policy, calibration, held = policy_and_data
    model = quantization.convert_policy(policy, policy.variables, 3, precision,
                                        calibration, held)
    assert model.precision == precision and model.route == 'converted'
    assert model.max_abs_err <= TOLERANCE[precision]
    assert model.convert_s > 0 and len(model.model_bytes) > 1000


def test_int16_activations_are_closer_to_fp32_than_int8(policy_and_data):
    policy, calibration, held = policy_and_data
    int8, int16x8 = (quantization.convert_policy(
        policy, policy.variables, 3, precision, calibration, held)
                     for precision in ('int8', 'int16x8'))
    assert int16x8.mean_rel_err < int8.mean_rel_err / 2
    assert quantization.weight_dtypes(int16x8.model_bytes).get('int8', 0) > 0
    # A study precision: actors are never offered it.
    assert 'int16x8' not in quantization.PRECISIONS


def test_int8_model_holds_int8_weights(policy_and_data):
    policy, calibration, held = policy_and_data
    fp32 = quantization.convert_policy(policy, policy.variables, 3, 'fp32',
                                       calibration, held)
    int8 = quantization.convert_policy(policy, policy.variables, 3, 'int8',
                                       calibration, held)
    weights = quantization.weight_dtypes(int8.model_bytes)
    # The hidden layer in int8; the input and output layers in float
    # (quantization/float_ends.py).
    assert weights.get('int8', 0) == 64 * 64
    assert weights.get('float32', 0) >= 3 * 64 + 64 * 1
    assert quantization.weight_dtypes(fp32.model_bytes).get('int8', 0) == 0
    assert len(int8.model_bytes) < len(fp32.model_bytes) / 2


def test_nan_weights_refused(policy_and_data):
    policy, calibration, _ = policy_and_data
    clone = snt.Sequential([
        snt.nets.MLP([64, 64], activate_final=True), snt.Linear(1), tf.tanh])
    clone(tf.constant(calibration[:1]))
    for target, source in zip(clone.variables, policy.variables):
        target.assign(source)
    kernel = clone.variables[0]
    poisoned = kernel.numpy()
    poisoned.flat[0] = np.nan
    kernel.assign(poisoned)
    with pytest.raises(quantization.NonFiniteWeightsError, match='NaN/Inf'):
        quantization.convert_policy(clone, clone.variables, 3, 'int8',
                                    calibration)


def test_unknown_precision_and_empty_calibration_rejected(policy_and_data):
    policy, calibration, _ = policy_and_data
    with pytest.raises(ValueError, match='choose from'):
        quantization.convert_policy(policy, policy.variables, 3, 'int4',
                                    calibration)
    with pytest.raises(ValueError, match='non-empty'):
        quantization.convert_policy(policy, policy.variables, 3, 'int8',
                                    np.zeros((0, 3), np.float32))


def test_sparse_int8_model_of_a_pruned_policy(policy_and_data):
    """GST's endpoint: a group-pruned policy shipped as a sparse int8 model."""
    _, calibration, held = policy_and_data
    pruned = snt.Sequential([
        snt.nets.MLP([256, 256], activate_final=True), snt.Linear(1), tf.tanh])
    pruned(tf.constant(calibration[:1]))
    hidden = next(v for v in pruned.variables if v.shape == (256, 256))
    keep = np.random.default_rng(0).random((64, 64)) < 0.1  # 90% of 4x4 blocks.
    hidden.assign(hidden.numpy() * np.kron(keep, np.ones((4, 4))))
    dense = quantization.convert_policy(pruned, pruned.variables, 3, 'int8',
                                        calibration, held)
    sparse = quantization.convert_policy(pruned, pruned.variables, 3, 'int8',
                                         calibration, held, sparse=True)
    assert len(sparse.model_bytes) < 0.6 * len(dense.model_bytes)
    assert sparse.max_abs_err <= TOLERANCE['int8']  # LiteRT runs it.


def test_calibration_from_replay_keeps_held_out_frames_disjoint():
    rng = np.random.default_rng(0)
    replay = rng.integers(0, 255, (640, 8)).astype(np.float32)
    replay = np.concatenate([replay, replay[:100]])  # Sampled twice.
    fallback = rng.normal(size=(320, 8)).astype(np.float32)
    calibration, held, source = calibration_lib.split(replay, fallback)
    assert source == 'replay'
    assert len(calibration) == calibration_lib.CALIBRATION_SAMPLES
    assert len(held) + len(calibration) == 640
    assert len(held) == 640 - calibration_lib.CALIBRATION_SAMPLES
    seen = {row.tobytes() for row in calibration}
    assert not any(row.tobytes() in seen for row in held)


@pytest.mark.parametrize('distinct',
                         [1, calibration_lib.MIN_DISTINCT_SAMPLES - 1])
def test_a_stalled_game_calibrates_on_the_rollout(distinct):
    """A policy that never serves in Breakout queues one frame over and
    over: that cannot calibrate (or hold out) anything, so the rollout's
    observations are used, as before the first replay items."""
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 255, (distinct, 8)).astype(np.float32)
    replay = frames[rng.integers(0, distinct, 640)]
    fallback = rng.normal(size=(320, 8)).astype(np.float32)
    calibration, held, source = calibration_lib.split(replay, fallback)
    assert source == 'rollout'
    np.testing.assert_array_equal(
        np.concatenate([calibration, held]), fallback)
    assert len(held) == calibration_lib.HELD_OUT_SAMPLES


def test_few_distinct_replay_observations_hold_out_a_fifth():
    rng = np.random.default_rng(2)
    replay = rng.normal(size=(100, 8)).astype(np.float32)
    calibration, held, source = calibration_lib.split(
        replay, rng.normal(size=(320, 8)).astype(np.float32))
    assert source == 'replay' and (len(calibration), len(held)) == (80, 20)
