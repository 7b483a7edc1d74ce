"""Atari games in the Arcade Learning Environment's own C++ vector env: `--env ale:Breakout`
(kind.py: the declaration; env.py: AleEnv; atari.ini: the family's settings)."""
