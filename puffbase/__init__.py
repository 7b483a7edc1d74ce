"""Utilities both halves use, at the bottom of the import layers (they import nothing of the project):
atomic file writes, the ini reader, a console that cannot fail to print, PNG/GIF writing,
puffgpu's cache folder, and the end of a child process's log for error messages."""
