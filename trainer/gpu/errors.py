"""The runtime's one error class."""


class GPUError(RuntimeError):
    """A GPU-side problem explained in words (bad shapes, sizes, missing adapter)."""
