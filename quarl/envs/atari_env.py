"""Atari 2600 games on ale-py's ALEInterface, ROMs from the ale-py wheel.

`ale:GAME` names use gym's CamelCase game names (ale:Breakout,
ale:SpaceInvaders). Preprocessing is the DQN-era standard (Mnih et al. 2015)
as OpenAI baselines applies it to `*NoFrameskip-v4`, the setting of the
A2C/PPO Atari results the GST paper compares with:

* Frame skip 4: an action is repeated for 4 emulator frames and their rewards
  summed; the frame seen is the pixel-wise max of the last two (sprites
  flicker between frames).
* ALE's own grayscale, shrunk to 84x84 by area averaging (PIL's BOX filter,
  what cv2.INTER_AREA computes), the last 4 frames stacked on the last axis:
  uint8 observations [84, 84, 4]; the stack starts as zeros each episode.
* 0 to 30 no-op frames at the start of each game, drawn from the seed.
* Sticky actions off (v4's repeat_action_probability 0: the paper's setting
  and baselines'); Machado et al.'s v5 value 0.25 is a constructor option.
* Rewards as the game scores them: clipping is the learner's choice.
* A game ends at game over (discount 0) or after 108,000 frames, 30 minutes
  of play (discount 1: a truncation), so a policy that never serves the ball
  cannot stall an evaluation.
* With `terminal_on_life_loss` (training actors only), losing a life ends the
  episode with discount 0 and the next reset goes on with the same game; the
  evaluator and baselines play full games.
"""
from typing import Dict, List

from acme import specs
from acme.wrappers import frame_stacking
import dm_env
import numpy as np
from PIL import Image

FRAME_SKIP = 4
FRAME_SIZE = 84
NUM_STACKED = 4
NOOP_MAX = 30
MAX_EPISODE_FRAMES = 108_000


def _game_ids() -> Dict[str, str]:
  """CamelCase game name -> ale-py ROM id ('SpaceInvaders': 'space_invaders')."""
  from ale_py import roms  # pylint: disable=g-import-not-at-top
  return {''.join(part.capitalize() for part in rom.split('_')): rom
          for rom in roms.get_all_rom_ids()}


def rom_id(game: str) -> str:
  """ale-py's ROM id of a CamelCase game name ('SpaceInvaders':
  'space_invaders')."""
  return _game_ids()[game]


def known_targets() -> List[str]:
  """Every game whose ROM ships with ale-py, for validation and suggestions."""
  return list(_game_ids())


def load(game: str, seed: int, training: bool) -> dm_env.Environment:
  """Game `game`; training environments end an episode at each life lost."""
  return AtariEnvironment(game, seed, terminal_on_life_loss=training)


def downsample(screen: np.ndarray) -> np.ndarray:
  """A [210, 160] uint8 grayscale screen as an [84, 84] uint8 frame."""
  image = Image.fromarray(screen).resize((FRAME_SIZE, FRAME_SIZE),
                                         Image.Resampling.BOX)
  return np.asarray(image, np.uint8)


class AtariEnvironment(dm_env.Environment):
  """One ALE game with the preprocessing in this module's docstring.

  ALE is seeded with `seed` and the no-op counts are drawn from it, so a run
  repeats for the same seed while its games differ from each other.
  """

  def __init__(self, game: str, seed: int,
               terminal_on_life_loss: bool = False,
               noop_max: int = NOOP_MAX,
               repeat_action_probability: float = 0.0,
               max_episode_frames: int = MAX_EPISODE_FRAMES):
    import ale_py  # pylint: disable=g-import-not-at-top
    from ale_py import roms  # pylint: disable=g-import-not-at-top
    # Set before construction, or every environment prints ALE's banner.
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    self._ale = ale_py.ALEInterface()
    # ALE's seed is a C int; node seeds span the full uint32 range.
    self._ale.setInt('random_seed', int(seed) % 2**31)
    self._ale.setFloat('repeat_action_probability', repeat_action_probability)
    self._ale.setInt('max_num_frames_per_episode', max_episode_frames)
    self._ale.loadROM(roms.get_rom_path(rom_id(game)))
    self._noop = ale_py.Action.NOOP
    self._actions = self._ale.getMinimalActionSet()
    self._terminal_on_life_loss = terminal_on_life_loss
    self._noop_max = noop_max
    self._rng = np.random.default_rng(seed)
    self._stacker = frame_stacking.FrameStacker(NUM_STACKED)
    self._frame = None
    self._lives = 0
    self._continue_game = False
    self._reset_next_step = True

  def _start_game(self) -> None:
    self._ale.reset_game()
    for _ in range(self._rng.integers(self._noop_max + 1)):
      self._ale.act(self._noop)
      if self._ale.game_over():
        self._ale.reset_game()
    self._frame = downsample(self._ale.getScreenGrayscale())

  def reset(self) -> dm_env.TimeStep:
    """A new game, or the same one after a life lost in training."""
    if not self._continue_game:
      self._start_game()
    self._continue_game = False
    self._reset_next_step = False
    self._lives = self._ale.lives()
    self._stacker.reset()
    return dm_env.restart(self._stacker.step(self._frame))

  def _act(self, action) -> float:
    """Repeats `action` FRAME_SKIP frames; keeps the max of the last two
    (of one if the game ended earlier in the step)."""
    reward, pooled = 0.0, None
    for frame in range(FRAME_SKIP):
      reward += self._ale.act(action)
      over = self._ale.game_over()
      if frame >= FRAME_SKIP - 2 or over:
        screen = self._ale.getScreenGrayscale()
        pooled = screen if pooled is None else np.maximum(pooled, screen)
      if over:
        break
    self._frame = downsample(pooled)
    return reward

  def step(self, action) -> dm_env.TimeStep:
    if self._reset_next_step:
      return self.reset()
    reward = np.float32(self._act(self._actions[int(action)]))
    lives = self._ale.lives()
    life_lost = lives < self._lives
    self._lives = lives
    observation = self._stacker.step(self._frame)
    if (self._ale.game_over(with_truncation=False) or
        (life_lost and self._terminal_on_life_loss)):
      step_type, discount = dm_env.StepType.LAST, 0.0
    elif self._ale.game_truncated():
      step_type, discount = dm_env.StepType.LAST, 1.0
    else:
      step_type, discount = dm_env.StepType.MID, 1.0
    if step_type == dm_env.StepType.LAST:
      self._reset_next_step = True
      # Only a life lost mid-game goes on; game over or the time limit
      # (game_over's default counts it) starts a new game.
      self._continue_game = not self._ale.game_over()
    return dm_env.TimeStep(step_type, reward, np.float32(discount),
                           observation)

  def observation_spec(self) -> specs.Array:
    return specs.Array((FRAME_SIZE, FRAME_SIZE, NUM_STACKED), np.uint8,
                       'observation')

  def action_spec(self) -> specs.DiscreteArray:
    return specs.DiscreteArray(len(self._actions), dtype=np.int32,
                               name='action')

  def reward_spec(self) -> specs.Array:
    return specs.Array((), np.float32, 'reward')

  def discount_spec(self) -> specs.BoundedArray:
    return specs.BoundedArray((), np.float32, 0.0, 1.0, 'discount')

  def close(self) -> None:
    self._ale = None
