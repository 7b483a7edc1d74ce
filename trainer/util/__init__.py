"""Utilities both halves use, at the bottom of the import layers (they import nothing of the project):
atomic file writes, the ini reader, a console that cannot fail to print, PNG/GIF writing, and
puffgpu's cache folder."""
