"""The DQN Q-network: flat observation -> one Q-value per action."""
from typing import Sequence

from quarl import compression


def make_q_network(num_actions: int, layers: Sequence[int]
                   ) -> compression.CompressibleMLP:
  """ReLU MLP whose hidden->hidden layers GST may compress.

  Input and output layers stay dense, as GST prescribes. Observations are
  already flat float32 vectors (quarl.envs' contract), so no Flatten.
  """
  return compression.make_compressible_mlp(
      list(layers) + [num_actions], activate_final=False, name='q_network')
