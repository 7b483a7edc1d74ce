"""JavaScript games (p5.js style) as envs: see envs/vec/jsvec.py."""
