"""Gymnasium spaces as puffgpu's rows and heads, without loss: one observation row of D values per
agent, K action heads (a head of size 1 is continuous), an action mask.

    obs = ObsLayout(env.observation_space)      # obs.size, obs.dtype, obs.picture, obs.mask_size
    obs.write(observation, row)                 # one observation into a row of env.observations
    act = ActLayout(env.action_space)           # act.sizes: the head sizes
    action = act.read(row)                      # a row of env.actions as the env's action
    obs.read(row), act.write(action, row)       # the inverses (tests check every space round-trips)

Observations, leaf by leaf in a stated order, into one row:
- Box: its values in C order. Floats become float32 (the policy's precision: a float64 Box is
  rounded to float32); integers and bools are exact as float32 up to 2**24.
- Discrete: its value (start included); MultiDiscrete: its values; MultiBinary: its 0/1 values.
- A uint8 Box of shape (H, W), (H, W, C) or (C, H, W) whose two picture sides are >= 36 (what the
  three convolutions take) and larger than its channel count is the picture: it goes last in the
  row, HWC (a CHW one is transposed; (H, W) has C = 1), and the policy runs its conv encoder on it.
  Only one picture per observation; smaller uint8 images (MiniGrid's 7x7x3) are plain features.
- Dict: its keys in the space's order (Gymnasium sorts a plain dict's keys); Tuple: by index;
  nested ones depth-first. A Dict key `action_mask` whose values are one 0/1 per discrete choice
  (Σ discrete head sizes of the action space, PettingZoo's classic-game convention) is the action
  mask, not part of the row.
The row is uint8 when every leaf is a uint8 Box or a MultiBinary (a picture and its features then
travel packed, 4 per word), else float32; a uint8 picture in a float32 row is written as value/255,
the scale the conv encoder applies to uint8 pictures.

Actions, leaf by leaf in the same order, as heads:
- Discrete(n, start): a head of n choices, the action is start + choice; MultiDiscrete: one head
  per entry; MultiBinary: one head of 2 per entry. A choice of one (n = 1) is no head: the action
  is always its start (a head of size 1 would be continuous).
- Box of floats: one continuous head per entry, clipped to the Box's finite bounds and cast to its
  dtype. Box of integers with finite bounds: one discrete head per entry of high - low + 1
  choices, the action low + choice.
- Dict and Tuple as for observations.

Anything else (Text, Graph, Sequence, OneOf, an unbounded integer Box action) is refused with a
message naming the space and where it sits.
"""
from __future__ import annotations

import importlib

import numpy as np

from ..errors import EnvError

MIN_PICTURE = 36  # the smallest side the three picture convolutions take (trainer/spec.py refuses less)
EXACT_INT = 2 ** 24  # integers beyond it are not exact in float32
MASK_KEY = "action_mask"


class SpaceError(EnvError, ValueError):
    """A space puffgpu cannot map (its name and where it sits are in the message)."""


def require(module, name, extra):
    """`module` imported, or an EnvError naming the extra that brings it (the Python kinds'
    packages are optional: a trainer without them still imports these modules)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise EnvError(f"{name} is not installed: pip install 'puffgpu[{extra}]' "
                       f"(or pip install {module.partition('.')[0]})") from None


def gym_spaces():
    """gymnasium.spaces, or a message naming the extra that brings it."""
    return require("gymnasium.spaces", "Gymnasium", "gym")


def _where(path, root):
    return root + "".join(f"[{k!r}]" for k in path)


def _children(space, spaces):
    """(key, subspace) of a Dict or Tuple, in the stated order; None for a leaf."""
    if isinstance(space, spaces.Dict):
        return list(space.spaces.items())
    if isinstance(space, spaces.Tuple):
        return list(enumerate(space.spaces))
    return None


def _leaves(space, spaces, root, path=()):
    kids = _children(space, spaces)
    if kids is None:
        yield path, space
        return
    for key, sub in kids:
        yield from _leaves(sub, spaces, root, (*path, key))


def _unsupported(space, path, root, what):
    hint = "wrap the env to turn it into one of those"
    if what == "observations" and len(path) == 1 and isinstance(path[0], str):
        hint += (", or drop it: a Python env file whose make_env returns "
                 "gymnasium.wrappers.FilterObservation(env, [the other keys])")
    return SpaceError(f"{_where(path, root)} is {space!r}: puffgpu maps Box, Discrete, MultiDiscrete, MultiBinary, "
                      f"Dict and Tuple {what}; {type(space).__name__} has no lossless row ({hint})")


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


def _picture_shape(space):
    """(h, w, c, chw) when a uint8 Box is a picture, else None."""
    shape = space.shape
    if space.dtype != np.uint8 or len(shape) not in (2, 3):
        return None
    if len(shape) == 2:
        h, w = shape
        return (h, w, 1, False) if min(h, w) >= MIN_PICTURE else None
    a, b, c = shape
    if min(a, b) >= MIN_PICTURE and c < min(a, b):
        return a, b, c, False
    if min(b, c) >= MIN_PICTURE and a < min(b, c):
        return b, c, a, True
    return None


class _ObsLeaf:
    def __init__(self, path, space, start, size, form, picture=None):
        self.path, self.space, self.start, self.size, self.form, self.picture = path, space, start, size, form, picture


class ObsLayout:
    """An observation space as one row (see the module docstring). root: how messages name it."""

    def __init__(self, space, root="observation_space", mask_size=0):
        spaces = gym_spaces()
        self.space, self.root = space, root
        self.mask_path = None
        leaves, picture = [], None
        for path, sub in _leaves(space, spaces, root):
            if path and path[-1] == MASK_KEY and mask_size and self._is_mask(sub, spaces, mask_size):
                self.mask_path = path
                continue
            if isinstance(sub, spaces.Box):
                pic = _picture_shape(sub)
                if pic is not None:
                    if picture is not None:
                        raise SpaceError(f"{_where(picture[0], root)} and {_where(path, root)} are both pictures "
                                         f"(uint8 images of {MIN_PICTURE}x{MIN_PICTURE} or more); puffgpu's policy "
                                         f"takes one: drop or shrink one of them")
                    picture = (path, sub, pic)
                    continue
                leaves.append([path, sub, int(np.prod(sub.shape, dtype=np.int64)), "box"])
            elif isinstance(sub, spaces.Discrete):
                leaves.append([path, sub, 1, "discrete"])
            elif isinstance(sub, spaces.MultiDiscrete):
                leaves.append([path, sub, int(sub.nvec.size), "multidiscrete"])
            elif isinstance(sub, spaces.MultiBinary):
                leaves.append([path, sub, int(np.prod(sub.shape, dtype=np.int64)), "multibinary"])
            else:
                raise _unsupported(sub, path, root, "observations")
        uint8 = all((k == "box" and s.dtype == np.uint8) or k == "multibinary" for _, s, _, k in leaves)
        self.dtype = np.dtype(np.uint8 if uint8 else np.float32)
        self.leaves, at = [], 0
        for path, sub, size, form in leaves:
            self.leaves.append(_ObsLeaf(path, sub, at, size, form))
            at += size
        self.picture = None
        if picture is not None:
            path, sub, (h, w, c, chw) = picture
            self.leaves.append(_ObsLeaf(path, sub, at, h * w * c, "picture", (h, w, c, chw)))
            self.picture = (h, w, c)
            at += h * w * c
        if at == 0:
            raise SpaceError(f"{root} is {space!r}: it has no values to observe")
        self.size = at
        self.mask_size = mask_size if self.mask_path is not None else 0
        # the common case, one flat Box or Discrete: one assignment per observation
        self._single = self.leaves[0] if len(self.leaves) == 1 and not self.leaves[0].path \
            and self.leaves[0].form != "picture" else None

    @staticmethod
    def _is_mask(sub, spaces, mask_size):
        if isinstance(sub, spaces.MultiBinary):
            return int(np.prod(sub.shape)) == mask_size
        return (isinstance(sub, spaces.Box) and sub.shape == (mask_size,) and np.all(sub.low >= 0)
                and np.all(sub.high <= 1))

    def write(self, obs, row):
        """One observation into `row` (a [size] view of env.observations)."""
        if self._single is not None:
            row[:] = np.ravel(obs)
            return
        for leaf in self.leaves:
            value = _get(obs, leaf.path)
            dst = row[leaf.start:leaf.start + leaf.size]
            if leaf.form == "picture":
                img = np.asarray(value)
                h, w, c, chw = leaf.picture
                img = img.transpose(1, 2, 0) if chw else img.reshape(h, w, c)
                if self.dtype == np.uint8:
                    dst.reshape(h, w, c)[:] = img
                else:
                    np.multiply(img, np.float32(1 / 255), out=dst.reshape(h, w, c), casting="unsafe")
            else:
                dst[:] = np.ravel(value)

    def write_mask(self, obs, mask_row):
        """The env's action mask (an `action_mask` key of its observation) into `mask_row`."""
        mask_row[:] = np.ravel(_get(obs, self.mask_path)) != 0

    def read(self, row, mask_row=None):
        """The inverse of write: an observation of the space from a row (and its mask)."""
        def leaf_value(leaf):
            v = row[leaf.start:leaf.start + leaf.size]
            s = leaf.space
            if leaf.form == "picture":
                h, w, c, chw = leaf.picture
                img = v.reshape(h, w, c)
                if self.dtype != np.uint8:
                    img = np.rint(img.astype(np.float64) * 255)
                img = img.astype(np.uint8)
                return img.transpose(2, 0, 1).copy() if chw else img.reshape(s.shape)
            if leaf.form == "discrete":
                return np.asarray(v[0]).astype(s.dtype)[()]
            return np.asarray(v).astype(s.dtype).reshape(s.shape)
        values = {leaf.path: leaf_value(leaf) for leaf in self.leaves}
        if self.mask_path is not None and mask_row is not None:
            mask_space = _get_space(self.space, self.mask_path)
            values[self.mask_path] = np.asarray(mask_row).astype(mask_space.dtype).reshape(mask_space.shape)
        return _rebuild(self.space, (), values, gym_spaces())

    def describe(self):
        pic = f", a {'x'.join(map(str, self.picture))} picture" if self.picture else ""
        mask = f", an action mask of {self.mask_size}" if self.mask_path is not None else ""
        return f"{self.size} {self.dtype} values{pic}{mask}"


def _get_space(space, path):
    for k in path:
        space = space[k]
    return space


def _rebuild(space, path, values, spaces):
    kids = _children(space, spaces)
    if kids is None:
        return values[path]
    built = [(k, _rebuild(sub, (*path, k), values, spaces)) for k, sub in kids]
    return dict(built) if isinstance(space, spaces.Dict) else tuple(v for _, v in built)


class _ActLeaf:
    def __init__(self, path, space, form, heads, sizes, base):
        # heads: the head indices of its entries (None where an entry is a fixed one-choice value)
        self.path, self.space, self.form, self.heads, self.sizes, self.base = path, space, form, heads, sizes, base


class ActLayout:
    """An action space as heads (see the module docstring)."""

    def __init__(self, space, root="action_space"):
        spaces = gym_spaces()
        self.space, self.root = space, root
        sizes, self.leaves = [], []
        for path, sub in _leaves(space, spaces, root):
            if isinstance(sub, spaces.Discrete):
                form, n, base = "discrete", np.array([int(sub.n)]), np.array([int(sub.start)])
            elif isinstance(sub, spaces.MultiDiscrete):
                form, n, base = "multidiscrete", sub.nvec.astype(np.int64).ravel(), sub.start.astype(np.int64).ravel()
            elif isinstance(sub, spaces.MultiBinary):
                count = int(np.prod(sub.shape, dtype=np.int64))
                form, n, base = "multibinary", np.full(count, 2), np.zeros(count, np.int64)
            elif isinstance(sub, spaces.Box) and np.issubdtype(sub.dtype, np.floating):
                count = int(np.prod(sub.shape, dtype=np.int64))
                form, n, base = "continuous", np.ones(count, np.int64), None
            elif isinstance(sub, spaces.Box) and (np.issubdtype(sub.dtype, np.integer) or sub.dtype == np.bool_):
                low, high = sub.low.astype(np.float64).ravel(), sub.high.astype(np.float64).ravel()
                if not (np.isfinite(low).all() and np.isfinite(high).all()) or np.any(high - low + 1 > EXACT_INT):
                    raise SpaceError(f"{_where(path, root)} is {sub!r}: an integer Box action needs finite bounds "
                                     f"(each entry becomes a head of high - low + 1 choices)")
                form, n, base = "intbox", (high - low + 1).astype(np.int64), low.astype(np.int64)
            else:
                raise _unsupported(sub, path, root, "actions")
            heads = []
            for size in n:
                if form != "continuous" and size == 1:
                    heads.append(None)  # one choice: no head, always its base value
                else:
                    heads.append(len(sizes))
                    sizes.append(int(size))
            self.leaves.append(_ActLeaf(path, sub, form, heads, n, base))
        if not sizes:
            raise SpaceError(f"{root} is {space!r}: it leaves no choice to make (every part has one value)")
        self.sizes = tuple(sizes)
        for leaf in self.leaves:
            leaf.cols = np.array([h if h is not None else 0 for h in leaf.heads], np.int64)
            leaf.fixed = np.array([h is None for h in leaf.heads])
            if leaf.form == "continuous":
                s = leaf.space
                leaf.low = np.where(np.isfinite(s.low), s.low, -np.inf).ravel().astype(np.float64)
                leaf.high = np.where(np.isfinite(s.high), s.high, np.inf).ravel().astype(np.float64)
        one = self.leaves[0]
        self.discrete_only = len(self.leaves) == 1 and one.form == "discrete" and one.heads == [0]

    def read(self, row):
        """A row of env.actions (float choices; floats for continuous heads) as the env's action."""
        if self.discrete_only:
            return int(row[0]) + int(self.leaves[0].base[0])
        values = {}
        for leaf in self.leaves:
            a = row[leaf.cols]
            s = leaf.space
            if leaf.form == "continuous":
                v = np.clip(a.astype(np.float64), leaf.low, leaf.high).astype(s.dtype).reshape(s.shape)
            else:
                idx = np.where(leaf.fixed, 0, a).astype(np.int64) + leaf.base
                if leaf.form == "discrete":
                    v = int(idx[0])
                else:
                    v = idx.astype(s.dtype).reshape(s.shape)
            values[leaf.path] = v
        return _rebuild(self.space, (), values, gym_spaces())

    def write(self, action, row):
        """The inverse of read: the heads' values for an action of the space."""
        for leaf in self.leaves:
            v = np.ravel(np.asarray(_get(action, leaf.path)))
            if leaf.form == "continuous":
                vals = v.astype(np.float32)
            else:
                vals = (v.astype(np.int64) - leaf.base).astype(np.float32)
            for i, h in enumerate(leaf.heads):
                if h is not None:
                    row[h] = vals[i]

    def describe(self):
        kinds = ["continuous" if s == 1 else str(s) for s in self.sizes]
        return f"{len(self.sizes)} head(s) [{', '.join(kinds)}]"


def mask_size(act):
    """Σ of the discrete head sizes (a continuous head's mask column is ignored)."""
    return sum(act.sizes)
