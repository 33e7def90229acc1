"""Packed N-step transitions hold exactly what Acme's adder writes."""
import numpy as np
import pytest
import reverb
from acme import specs
from acme.adders import reverb as reverb_adders

from agents import packed_transitions
from agents import reverb_compat
from quarl import envs

ACME, PACKED = 'acme', 'packed'


def _episodes(environment, spec, adders_, episodes, rng):
  """Feeds the same random-action episodes to every adder."""
  for _ in range(episodes):
    timestep = environment.reset()
    for adder in adders_:
      adder.add_first(timestep)
    while not timestep.last():
      action = envs.random_action(spec.actions, rng)
      timestep = environment.step(action)
      for adder in adders_:
        adder.add(action, timestep)


@pytest.mark.parametrize('env_name,n_step', [
    ('gym:CartPole-v1', 1), ('gym:CartPole-v1', 5),
    ('gym:Pendulum-v1', 3)])
def test_packed_transitions_equal_acmes(env_name, n_step):
  environment = envs.make_environment(env_name, seed=0)
  spec = specs.make_environment_spec(environment)
  layout = packed_transitions.Layout(spec)
  server = reverb.Server([
      reverb.Table.queue(
          ACME, 100_000,
          signature=reverb_adders.NStepTransitionAdder.signature(spec)),
      reverb.Table.queue(PACKED, 100_000, signature=layout.signature())])
  client = reverb.Client(f'localhost:{server.port}')
  try:
    acme_adder = reverb_adders.NStepTransitionAdder(
        reverb_compat.AdderClient(client), n_step, 0.99,
        priority_fns={ACME: None})
    packed_adder = packed_transitions.NStepAdder(
        client, layout, n_step, 0.99, tables=[PACKED])
    # Pendulum's episodes are 200 steps (truncated); CartPole's terminate.
    _episodes(environment, spec, [acme_adder, packed_adder],
              episodes=1 if 'Pendulum' in env_name else 6,
              rng=np.random.default_rng(0))
    del acme_adder, packed_adder  # Flushed and closed.
    info = client.server_info()
    count = info[ACME].current_size
    assert count == info[PACKED].current_size > 20
    expected = [sample.data for sample in client.sample(
        ACME, num_samples=count, emit_timesteps=False)]
    batch = next(iter(packed_transitions.dataset(
        client.server_address, PACKED, layout, batch_size=count,
        parallel_calls=1)))
    fields = ('observation', 'action', 'reward', 'discount',
              'next_observation')
    for index, field in enumerate(fields):
      got = getattr(batch.data, field).numpy()
      want = np.stack([data[index] for data in expected])
      assert got.dtype == want.dtype, field
      np.testing.assert_array_equal(got, want, err_msg=field)
    # Calibration reads a packed item's first observation.
    np.testing.assert_array_equal(
        layout.observations(np.stack([layout.pack(*row) for row in zip(
            *(getattr(batch.data, field).numpy() for field in fields))])),
        batch.data.observation.numpy().reshape(count, -1))
  finally:
    server.stop()


def test_extras_are_refused():
  environment = envs.make_environment('gym:CartPole-v1', seed=0)
  spec = specs.make_environment_spec(environment)
  adder = packed_transitions.NStepAdder(None, packed_transitions.Layout(spec),
                                        3, 0.99, tables=[PACKED])
  adder.add_first(environment.reset())
  with pytest.raises(ValueError, match='extras'):
    adder.add(np.int32(0), environment.step(np.int32(0)), extras=(1.0,))
