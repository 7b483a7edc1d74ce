"""JavaScript games (p5.js style) as envs: see envs/js/jsenv.py."""
