"""A real in-process Reverb server filled by an agent's own adder."""
from typing import Callable

import numpy as np
import reverb
from acme.utils import loggers


def serve_replay(agent, environment, steps: int,
                 choose_action: Callable[[], np.ndarray]):
    """Starts the agent's replay tables and writes `steps` env transitions
    through agent.make_adder; returns (server, client)."""
    server = reverb.Server(agent.replay_tables(), port=None)
    client = reverb.Client(f'localhost:{server.port}')
    adder = agent.make_adder(client)
    timestep = environment.reset()
    adder.add_first(timestep)
    for _ in range(steps):
        action = choose_action()
        timestep = environment.step(action)
        adder.add(action, timestep)
        if timestep.last():
            timestep = environment.reset()
            adder.add_first(timestep)
    return server, client


def export_with_learner_weights(agent, bundle):
    """agent.export_policy() holding the learner's 'policy' variables."""
    weights = bundle.learner.get_variables(['policy'])[0]
    export = agent.export_policy()
    assert [w.shape for w in weights] == [v.shape for v in export.variables]
    for variable, value in zip(export.variables, weights):
        variable.assign(value)
    return export


class RecordingLogger(loggers.Logger):
    """Keeps every row a learner logs, for tests to read back."""

    def __init__(self):
        self.rows = []

    def write(self, data):
        self.rows.append({k: np.asarray(v) for k, v in data.items()})

    def close(self):
        pass

