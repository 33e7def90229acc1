"""QuaRL-GST: compressed distributed deep RL (ActorQ quantized actors + GST).

`quarl` is the library half: it never imports Launchpad. Programs live in
`launch/`, algorithms in `agents/`.
"""
import os

# dm_control picks a GL backend at import time; on headless machines every
# process would print a GLFW/X11 warning. 'disable' is its no-renderer value.
os.environ.setdefault('MUJOCO_GL', 'disable')
