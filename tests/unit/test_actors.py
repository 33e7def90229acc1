"""LiteRT actor machinery: model refresh, corrupt bytes, exploration ladders."""
import time

import numpy as np
import pytest
import sonnet as snt
import tensorflow as tf
from acme import specs

from quarl import actors
from quarl import quantization


def _model_bytes(scale: float) -> bytes:
    """A 2-in/2-out fp32 TFLite model computing scale * x."""
    layer = snt.Linear(2, with_bias=False)
    layer(tf.zeros([1, 2]))
    layer.w.assign(scale * np.eye(2, dtype=np.float32))
    return quantization.convert_policy(
        layer, layer.variables, 2, 'fp32',
        np.ones((4, 2), np.float32)).model_bytes


class FakeQuantizer:
    """The quantizer node's get_model contract, served from a dict."""

    def __init__(self):
        self.models = {}

    def get_model(self, known_version):
        newest = max(self.models, default=-1)
        if newest <= known_version:
            return None
        return newest, self.models[newest], 10 * newest


def test_refresher_switches_to_newer_version():
    source = FakeQuantizer()
    refresher = actors.ModelRefresher(source.get_model)
    assert not refresher.refresh_once()  # Nothing published yet.
    source.models[0] = _model_bytes(1.0)
    assert refresher.refresh_once()
    np.testing.assert_allclose(refresher.policy(np.array([1., 2.])), [1., 2.])
    assert not refresher.refresh_once()  # Nothing newer: no reload.
    source.models[1] = _model_bytes(3.0)
    assert refresher.refresh_once()
    assert refresher.version == 1 and refresher.learner_step == 10
    np.testing.assert_allclose(refresher.policy(np.array([1., 2.])), [3., 6.])


def test_corrupt_bytes_keep_previous_model_and_are_counted():
    source = FakeQuantizer()
    source.models[0] = _model_bytes(2.0)
    refresher = actors.ModelRefresher(source.get_model)
    refresher.refresh_once()
    good = source.models[0]
    source.models[1] = good[:len(good) // 3]  # Truncated flatbuffer.
    assert not refresher.refresh_once()
    source.models[2] = b'\x00' * 64  # Not a flatbuffer at all.
    assert not refresher.refresh_once()
    assert refresher.load_failures == 2
    assert refresher.version == 0
    np.testing.assert_allclose(refresher.policy(np.array([1., 1.])), [2., 2.])
    assert not refresher.refresh_once()  # Rejected versions aren't refetched.
    assert refresher.load_failures == 2
    source.models[3] = _model_bytes(5.0)
    assert refresher.refresh_once() and refresher.version == 3


def test_fetch_errors_are_survived():
    def failing_fetch(_):
        raise ConnectionError('quantizer restarting')
    refresher = actors.ModelRefresher(failing_fetch)
    assert not refresher.refresh_once()
    assert refresher.fetch_failures == 1


def test_background_refresh_and_actor_use_latest_model():
    source = FakeQuantizer()
    source.models[0] = _model_bytes(1.0)
    refresher = actors.ModelRefresher(source.get_model,
                                      poll_period_s=0.01).start()
    assert refresher.wait_for_first_model(10.0)
    actor = actors.LiteRTActor(refresher, behaviour=lambda out: out)
    np.testing.assert_allclose(actor.select_action(np.array([1., 1.])),
                               [1., 1.])
    source.models[1] = _model_bytes(4.0)
    for _ in range(500):
        if actor.policy_version == 1:
            break
        time.sleep(0.01)
    refresher.stop()
    np.testing.assert_allclose(actor.select_action(np.array([1., 1.])),
                               [4., 4.])


def test_invalid_model_error_on_garbage():
    with pytest.raises(actors.InvalidModelError):
        actors.LiteRTPolicy(b'not a model')


def test_each_actor_gets_its_own_sigma_and_epsilon():
    sigmas = [actors.sigma_ladder(i, 4, 0.05, 0.5) for i in range(4)]
    assert sigmas[0] == pytest.approx(0.5) and sigmas[-1] == pytest.approx(0.05)
    assert all(a > b for a, b in zip(sigmas, sigmas[1:]))
    epsilons = [actors.epsilon_ladder(i, 8) for i in range(8)]
    assert epsilons[0] == pytest.approx(0.4)
    assert epsilons[-1] == pytest.approx(0.4 ** 8)
    assert len(set(epsilons)) == 8


def test_gaussian_behaviour_explores_and_respects_bounds():
    spec = specs.BoundedArray((2,), np.float32, -1.0, 1.0)
    rng = np.random.default_rng(0)
    behave = actors.gaussian_behaviour(0.5, spec, rng, lambda a: a)
    actions = np.stack([behave(np.array([0.9, 0.0], np.float32))
                        for _ in range(500)])
    assert actions.dtype == np.float32
    assert actions.min() >= -1.0 and actions.max() <= 1.0
    assert actions[:, 1].std() == pytest.approx(0.5, rel=0.15)
    greedy = actors.gaussian_behaviour(0.0, spec, rng, lambda a: a)
    np.testing.assert_array_equal(greedy(np.array([0.3, -0.2], np.float32)),
                                  np.array([0.3, -0.2], np.float32))


def test_epsilon_greedy_behaviour_rate():
    rng = np.random.default_rng(0)
    behave = actors.epsilon_greedy_behaviour(0.3, 4, rng)
    choices = np.array([behave(np.array([0., 0., 1., 0.])) for _ in range(4000)])
    non_greedy = np.mean(choices != 2)
    assert non_greedy == pytest.approx(0.3 * 3 / 4, abs=0.03)
