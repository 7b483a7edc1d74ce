"""DDNet (Teeworlds race) maps for RL: envs/ddnet/mapfile.py reads the map files and computes a
distance-to-finish field over the tiles."""
