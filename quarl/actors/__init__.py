"""Actors that explore with quantized (LiteRT) policies, and their plumbing."""
from quarl.actors.exploration import epsilon_greedy_behaviour
from quarl.actors.exploration import epsilon_ladder
from quarl.actors.exploration import gaussian_behaviour
from quarl.actors.exploration import sigma_ladder
from quarl.actors.litert_actor import LiteRTActor
from quarl.litert import InvalidModelError
from quarl.litert import LiteRTPolicy
from quarl.actors.model_refresher import ModelRefresher
from quarl.actors.timing import TimedActor
from quarl.actors.timing import TimedEnvironment
from quarl.actors.timing import TimeSplit
from quarl.actors.warmup import RandomWarmupActor
