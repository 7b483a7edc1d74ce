"""DDNet (Teeworlds) map files: the physics layers as numpy arrays, and a distance-to-finish field.

    from envs.ddnet.mapfile import load_map, distance_field, spawn_points
    m = load_map("/usr/share/games/ddnet/data/maps/Tutorial.map")
    m.game               # np.uint8 [H, W]: game-layer tile indices (TILE_*, ENTITY_OFFSET + ENTITY_*)
    d = distance_field(m)                  # np.float32 [H, W]: tiles to the nearest finish, inf if none
    [d[y, x] for x, y in spawn_points(m)]

    python -m envs.ddnet.mapfile PATH      # a summary and an ASCII picture of the map

The file format (engine/shared/datafile.cpp): a header ("DATA", version 4), the item types, the
item offsets, the data offsets, the uncompressed data sizes (version 4 only), the items (small
int32 records: groups, layers, ...) and the data blocks (zlib-compressed in version 4; tile arrays,
images, names). A tile layer item (CMapItemLayerTilemap, game/mapitems.h) names its tile data by
index; DDNet's extra physics layers (front, tele, speedup, switch, tune) put theirs in fields after
the layer name, or, in tilemap versions <= 2, in the name's place (game/layers.cpp). Everything is
little-endian. Tile values below are those of DDNet's game/mapitems.h.
"""
from __future__ import annotations

import heapq
import math
import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

# --- game/mapitems.h ---------------------------------------------------------------------------

MAPITEMTYPE_VERSION = 0
MAPITEMTYPE_GROUP = 4
MAPITEMTYPE_LAYER = 5

LAYERTYPE_TILES = 2

TILESLAYERFLAG_GAME = 1
TILESLAYERFLAG_TELE = 2
TILESLAYERFLAG_SPEEDUP = 4
TILESLAYERFLAG_FRONT = 8
TILESLAYERFLAG_SWITCH = 16
TILESLAYERFLAG_TUNE = 32

# tilemaps of this version or later (upstream Teeworlds 0.7) run-length pack tiles by CTile::m_Skip
VERSION_TEEWORLDS_TILESKIP = 4

# game- and front-layer tiles (those the distance field and the env read)
TILE_AIR = 0
TILE_SOLID = 1
TILE_DEATH = 2
TILE_NOHOOK = 3
TILE_FREEZE = 9
TILE_TELEINEVIL = 10  # tele layer
TILE_UNFREEZE = 11
TILE_DFREEZE = 12
TILE_DUNFREEZE = 13
TILE_TELEINWEAPON = 14  # tele layer
TILE_TELEINHOOK = 15  # tele layer
TILE_TELEIN = 26  # tele layer
TILE_TELEOUT = 27  # tele layer
TILE_TELECHECK = 29  # tele layer
TILE_TELECHECKOUT = 30  # tele layer
TILE_TELECHECKIN = 31  # tele layer
TILE_START = 33
TILE_FINISH = 34
TILE_TIME_CHECKPOINT_FIRST = 35
TILE_TIME_CHECKPOINT_LAST = 59
TILE_STOP = 60
TILE_STOPS = 61
TILE_STOPA = 62
TILE_TELECHECKINEVIL = 63  # tele layer

# entities: a game- or front-layer tile index >= ENTITY_OFFSET is the entity ENTITY_OFFSET + ENTITY_*
ENTITY_OFFSET = 255 - 16 * 4  # 191
ENTITY_SPAWN = 1
ENTITY_SPAWN_RED = 2
ENTITY_SPAWN_BLUE = 3

SPAWN_ENTITIES = (ENTITY_SPAWN, ENTITY_SPAWN_RED, ENTITY_SPAWN_BLUE)  # DDRace spawns on any of them
TELE_IN_TYPES = (TILE_TELEIN, TILE_TELEINEVIL)  # move the tee to a TELEOUT of the same number
TELE_CHECK_IN_TYPES = (TILE_TELECHECKIN, TILE_TELECHECKINEVIL)  # back to the last TELECHECK's out

_TELE_NAMES = {v: k for k, v in reversed(list(globals().items())) if k in (
    "TILE_TELEINEVIL", "TILE_TELEINWEAPON", "TILE_TELEINHOOK", "TILE_TELEIN", "TILE_TELEOUT", "TILE_TELECHECK",
    "TILE_TELECHECKOUT", "TILE_TELECHECKIN", "TILE_TELECHECKINEVIL")}
# game/front meanings; where a value has two names the game-layer one (defined first) wins
_TILE_NAMES = {v: k for k, v in reversed(list(globals().items()))
               if k.startswith("TILE_") and isinstance(v, int) and k not in _TELE_NAMES.values()}
_ENTITY_NAMES = {v: k for k, v in globals().items() if k.startswith("ENTITY_") and k != "ENTITY_OFFSET"}


def tile_name(index: int) -> str:
    """DDNet's name for a game- or front-layer tile index (an entity is ENTITY_*)."""
    if index > ENTITY_OFFSET:
        return _ENTITY_NAMES.get(index - ENTITY_OFFSET, f"ENTITY_{index - ENTITY_OFFSET}")
    if TILE_TIME_CHECKPOINT_FIRST < index <= TILE_TIME_CHECKPOINT_LAST:
        return f"TILE_TIME_CHECKPOINT_FIRST+{index - TILE_TIME_CHECKPOINT_FIRST}"
    return _TILE_NAMES.get(index, f"TILE_{index}")


# --- the map -----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DDNetMap:
    """A map's physics layers, all [height, width] (row y, column x; tile (x, y) covers pixels
    32x..32x+31, 32y..32y+31 in the game). Absent DDNet layers are None."""
    name: str
    path: str
    width: int
    height: int
    game: np.ndarray  # uint8 tile index
    game_flags: np.ndarray  # uint8 TILEFLAG_* (rotation of stoppers, through-dir, ...)
    front: np.ndarray | None = None
    front_flags: np.ndarray | None = None
    tele: np.ndarray | None = None  # uint8 tele number
    tele_type: np.ndarray | None = None  # uint8 TILE_TELE* type
    speedup_force: np.ndarray | None = None  # uint8
    speedup_angle: np.ndarray | None = None  # int16 degrees
    switch: np.ndarray | None = None  # uint8 switch number
    switch_type: np.ndarray | None = None  # uint8 tile type
    tune: np.ndarray | None = None  # uint8 tune zone number

    @property
    def layers(self) -> tuple[str, ...]:
        """The physics layers present, of game, front, tele, speedup, switch, tune."""
        present = {"game": self.game, "front": self.front, "tele": self.tele, "speedup": self.speedup_force,
                   "switch": self.switch, "tune": self.tune}
        return tuple(k for k, v in present.items() if v is not None)

    def _either(self, *indices: int) -> np.ndarray:
        hit = np.isin(self.game, indices)
        return hit | np.isin(self.front, indices) if self.front is not None else hit

    @property
    def solid(self) -> np.ndarray:
        """Walls: TILE_SOLID and TILE_NOHOOK (solid, unhookable). Only the game layer collides
        (collision.cpp GetTile/IsSolid); the front layer adds death, freeze, start, finish, ..."""
        return np.isin(self.game, (TILE_SOLID, TILE_NOHOOK))

    @property
    def death(self) -> np.ndarray:
        return self._either(TILE_DEATH)

    @property
    def freeze(self) -> np.ndarray:
        return self._either(TILE_FREEZE, TILE_DFREEZE)

    @property
    def unfreeze(self) -> np.ndarray:
        return self._either(TILE_UNFREEZE, TILE_DUNFREEZE)

    @property
    def start(self) -> np.ndarray:
        return self._either(TILE_START)

    @property
    def finish(self) -> np.ndarray:
        return self._either(TILE_FINISH)

    @property
    def stopper(self) -> np.ndarray:
        """TILE_STOPA: a tee cannot move onto it from any side (collision.cpp GetMoveRestrictions)."""
        return self._either(TILE_STOPA)

    @property
    def passable(self) -> np.ndarray:
        """Tiles a tee can enter without dying: not solid, not death, not an all-sides stopper."""
        return ~self.solid & ~self.death & ~self.stopper

    @property
    def tele_in(self) -> np.ndarray:
        """TELEIN / TELEINEVIL tiles (number > 0); each moves the tee to a TELEOUT of its number."""
        if self.tele is None:
            return np.zeros_like(self.game, dtype=bool)
        return np.isin(self.tele_type, TELE_IN_TYPES) & (self.tele > 0)

    @property
    def tele_out(self) -> np.ndarray:
        if self.tele is None:
            return np.zeros_like(self.game, dtype=bool)
        return (self.tele_type == TILE_TELEOUT) & (self.tele > 0)


def _coords(mask: np.ndarray) -> list[tuple[int, int]]:
    ys, xs = np.nonzero(mask)
    return [(int(x), int(y)) for y, x in zip(ys, xs)]


def spawn_points(m: DDNetMap) -> list[tuple[int, int]]:
    """(x, y) of the spawn entities (ENTITY_SPAWN, _RED, _BLUE) in the game and front layers."""
    return _coords(m._either(*(ENTITY_OFFSET + e for e in SPAWN_ENTITIES)))


def start_tiles(m: DDNetMap) -> list[tuple[int, int]]:
    """(x, y) of TILE_START tiles (game or front layer), row by row."""
    return _coords(m.start)


def finish_tiles(m: DDNetMap) -> list[tuple[int, int]]:
    """(x, y) of TILE_FINISH tiles (game or front layer), row by row."""
    return _coords(m.finish)


# --- the datafile ------------------------------------------------------------------------------

_HEADER = struct.Struct("<4s8i")  # id, version, size, swaplen, num item types, items, data, item size, data size


class _Datafile:
    """The items and data blocks of one datafile held in memory; every bound is checked against
    the file so a damaged one fails with a ValueError naming the path."""

    def __init__(self, path: str, raw: bytes):
        self.path, self.raw = path, raw
        if len(raw) < _HEADER.size:
            self.fail(f"{len(raw)} bytes, shorter than the {_HEADER.size}-byte datafile header")
        magic, self.version, _size, _swaplen, n_types, n_items, n_data, item_size, data_size = _HEADER.unpack_from(raw)
        if magic not in (b"DATA", b"ATAD"):
            self.fail(f"not a DDNet/Teeworlds map: the file starts with {magic!r}, not b'DATA'")
        if self.version not in (3, 4):
            self.fail(f"datafile version {self.version}; only versions 3 and 4 exist")
        if min(n_types, n_items, n_data, item_size, data_size) < 0:
            self.fail("a negative count in the datafile header")
        ints = 3 * n_types + n_items + n_data + (n_data if self.version == 4 else 0)
        self.items_start = _HEADER.size + 4 * ints
        self.data_start = self.items_start + item_size
        if len(raw) < self.data_start + data_size:
            self.fail(f"truncated: the header promises {self.data_start + data_size} bytes, the file has {len(raw)}")
        table = np.frombuffer(raw, "<i4", ints, _HEADER.size)
        self.types = {int(t): (int(s), int(n)) for t, s, n in table[:3 * n_types].reshape(-1, 3)}
        self.item_offsets = table[3 * n_types:3 * n_types + n_items]
        self.data_offsets = table[3 * n_types + n_items:3 * n_types + n_items + n_data]
        self.data_sizes = table[3 * n_types + n_items + n_data:] if self.version == 4 else None
        self.item_size, self.data_size, self.n_items, self.n_data = item_size, data_size, n_items, n_data

    def fail(self, what: str) -> NoReturn:
        raise ValueError(f"{self.path}: {what}")

    def items(self, item_type: int) -> list[np.ndarray]:
        """The int32 payloads of the items of one type, in file order."""
        start, num = self.types.get(item_type, (0, 0))
        if start < 0 or start + num > self.n_items:
            self.fail(f"item type {item_type} lists items {start}..{start + num - 1} of {self.n_items}")
        out = []
        for i in range(start, start + num):
            pos = self.items_start + int(self.item_offsets[i])
            if not self.items_start <= pos <= self.data_start - 8:
                self.fail(f"item {i} lies outside the item block")
            _type_and_id, size = struct.unpack_from("<2i", self.raw, pos)
            if size < 0 or pos + 8 + size > self.data_start:
                self.fail(f"item {i} ({size} bytes) runs past the item block")
            out.append(np.frombuffer(self.raw, "<i4", size // 4, pos + 8))
        return out

    def data(self, index: int) -> bytes:
        """Data block `index`, decompressed."""
        if not 0 <= index < self.n_data:
            self.fail(f"a layer names data block {index}; the file has {self.n_data}")
        begin = int(self.data_offsets[index])
        end = int(self.data_offsets[index + 1]) if index + 1 < self.n_data else self.data_size
        if not 0 <= begin <= end <= self.data_size:
            self.fail(f"data block {index} spans bytes {begin}..{end} of a {self.data_size}-byte data section")
        chunk = self.raw[self.data_start + begin:self.data_start + end]
        if self.version == 3:
            return chunk
        try:
            out = zlib.decompress(chunk)
        except zlib.error as e:
            self.fail(f"data block {index} does not decompress: {e}")
        if len(out) != int(self.data_sizes[index]):
            self.fail(f"data block {index} decompresses to {len(out)} bytes, the header says {int(self.data_sizes[index])}")
        return out


def load_map(path) -> DDNetMap:
    """Read a DDNet or Teeworlds .map file's physics layers. ValueError (naming the file and the
    fault) for a file that is not a map, a truncated or damaged one, or one with no game layer."""
    path = str(path)
    df = _Datafile(path, Path(path).read_bytes())
    version = df.items(MAPITEMTYPE_VERSION)
    if not version or len(version[0]) < 1 or version[0][0] != 1:
        df.fail("no map version item of version 1: a datafile, but not a map")
    layers = df.items(MAPITEMTYPE_LAYER)
    found: dict[str, np.ndarray] = {}  # layer kind -> tilemap item
    for group in df.items(MAPITEMTYPE_GROUP):
        if len(group) < 7:
            df.fail(f"a group item of {len(group)} ints, fewer than 7")
        first, count = int(group[5]), int(group[6])
        if first < 0 or count < 0 or first + count > len(layers):
            df.fail(f"a group lists layers {first}..{first + count - 1} of {len(layers)}")
        for item in layers[first:first + count]:
            if len(item) < 15 or item[1] != LAYERTYPE_TILES:
                continue
            flags = int(item[6])
            # DDNet takes the last layer with each flag (game/layers.cpp); maps have one of each
            for kind, bit in (("game", TILESLAYERFLAG_GAME), ("tele", TILESLAYERFLAG_TELE),
                              ("speedup", TILESLAYERFLAG_SPEEDUP), ("front", TILESLAYERFLAG_FRONT),
                              ("switch", TILESLAYERFLAG_SWITCH), ("tune", TILESLAYERFLAG_TUNE)):
                if flags & bit:
                    found[kind] = item
    if "game" not in found:
        df.fail("no game layer (a tile layer with the game flag)")
    g = found["game"]
    w, h = int(g[4]), int(g[5])
    if w <= 0 or h <= 0:
        df.fail(f"the game layer is {w} x {h} tiles")

    def tiles(item: np.ndarray, kind: str, field: int, tile_bytes: int) -> np.ndarray:
        # the DDNet layers' data indices follow the 3-int name (tilemap version >= 3) or replace it
        if field > 14:
            field = field + 3 if item[3] >= 3 else field
            if len(item) <= field:
                df.fail(f"the {kind} layer's item ({len(item)} ints) has no data field {field}")
        if (int(item[4]), int(item[5])) != (w, h):
            df.fail(f"the {kind} layer is {int(item[4])} x {int(item[5])} tiles, the game layer {w} x {h}")
        raw = np.frombuffer(df.data(int(item[field])), np.uint8)
        if field == 14 and item[3] >= VERSION_TEEWORLDS_TILESKIP:
            packed = raw[:raw.size // 4 * 4].reshape(-1, 4)  # repeat each tile m_Skip more times
            raw = np.repeat(packed, packed[:, 2].astype(np.int64) + 1, axis=0).ravel()
        if raw.size < w * h * tile_bytes:
            df.fail(f"the {kind} layer's data is {raw.size} bytes, {w} x {h} tiles need {w * h * tile_bytes}")
        return raw[:w * h * tile_bytes].reshape(h, w, tile_bytes)

    game = tiles(g, "game", 14, 4)
    fields = dict(game=game[..., 0].copy(), game_flags=game[..., 1].copy())
    if "front" in found:
        front = tiles(found["front"], "front", 17, 4)
        fields.update(front=front[..., 0].copy(), front_flags=front[..., 1].copy())
    if "tele" in found:  # CTeleTile {number, type}
        tele = tiles(found["tele"], "tele", 15, 2)
        fields.update(tele=tele[..., 0].copy(), tele_type=tele[..., 1].copy())
    if "speedup" in found:  # CSpeedupTile {force, max speed, type, pad, short angle}
        sp = tiles(found["speedup"], "speedup", 16, 6)
        fields.update(speedup_force=sp[..., 0].copy(), speedup_angle=sp[..., 4:6].copy().view("<i2")[..., 0])
    if "switch" in found:  # CSwitchTile {number, type, flags, delay}
        sw = tiles(found["switch"], "switch", 18, 4)
        fields.update(switch=sw[..., 0].copy(), switch_type=sw[..., 1].copy())
    if "tune" in found:  # CTuneTile {number, type}
        fields.update(tune=tiles(found["tune"], "tune", 19, 2)[..., 0].copy())
    return DDNetMap(name=Path(path).stem, path=path, width=w, height=h, **fields)


# --- distance to the finish --------------------------------------------------------------------

def _tele_groups(m: DDNetMap) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Flat indices of the tele-ins and tele-outs of each tele number."""
    ins: dict[int, list[int]] = {}
    outs: dict[int, list[int]] = {}
    for mask, groups in ((m.tele_in, ins), (m.tele_out, outs)):
        for i in np.flatnonzero(mask):
            groups.setdefault(int(m.tele.flat[i]), []).append(int(i))
    return ins, outs


def distance_field(m: DDNetMap, *, teleporters: bool = True, avoid_freeze: bool = False) -> np.ndarray:
    """Path length in tiles from every tile to the nearest finish tile, np.float32 [H, W]; +inf
    where no path exists (walls, death tiles, sealed-off rooms).

    A backward Dijkstra from the finish tiles over the passable tiles (not solid, not death, not
    TILE_STOPA; also not freeze with avoid_freeze), 8-connected: straight steps cost 1, diagonal
    ones sqrt(2), and a diagonal step needs both tiles beside it open (a tee is 28 px in a 32 px
    tile: it cannot slip between two walls that touch at a corner). 8-connectivity because a tee moves freely in 2D;
    4-connected steps would count a diagonal run as up to 41 % longer than it is. It is geometry
    only: gravity, jump height and the hook are not modelled, so a finite distance means "connected",
    not "doable".

    Teleporters (teleporters=True and a tele layer): a TELEIN / TELEINEVIL tile with number n sends
    the tee to one of the TELEOUT tiles with number n, chosen at random (character.cpp), at no cost.
    So a tele-in's distance is the largest of its outs' (the worst draw; +inf if any out is cut
    off), and a tee cannot walk through a tele-in. A tele-in whose number has no outs does nothing
    in DDNet and counts as air; so do all tele-ins with teleporters=False. TELECHECKIN(EVIL) tiles
    send the tee back to its last tele checkpoint (or the spawn), which depends on its history, so
    they count as blocked. Weapon/hook tele-ins, switch-layer doors, one-way stoppers (TILE_STOP,
    TILE_STOPS) and speedups are ignored.
    """
    h, w = m.height, m.width
    W = w + 2  # a border of blocked tiles spares the bounds checks
    open_ = m.passable & ~m.freeze if avoid_freeze else m.passable
    tele_in_at: dict[int, int] = {}  # padded flat index of an active tele-in -> its number
    outs_of: dict[int, int] = {}  # padded flat index of a tele-out -> its number
    ins: dict[int, list[int]] = {}
    waiting: dict[int, int] = {}  # tele number -> outs not yet settled
    if m.tele is not None:
        open_ &= ~np.isin(m.tele_type, TELE_CHECK_IN_TYPES)
        if teleporters:
            tins, touts = _tele_groups(m)

            def padded(i: int) -> int:
                return (i // w + 1) * W + i % w + 1

            for n, tiles in tins.items():
                tiles = [t for t in tiles if open_.flat[t]]  # a tee never enters the others
                if tiles and n in touts:  # a tele-in with no outs is inert
                    ins[n] = [padded(i) for i in tiles]
                    tele_in_at.update((p, n) for p in ins[n])
                    waiting[n] = len(touts[n])
                    outs_of.update((padded(i), n) for i in touts[n])
    walk = np.pad(open_, 1).ravel().tolist()  # tiles a tee can stand in and step out of by walking
    for p in tele_in_at:
        walk[p] = False
    steps = [(d, 1.0) for d in (-W, W, -1, 1)] + [(d, math.sqrt(2)) for d in (-W - 1, -W + 1, W - 1, W + 1)]
    dist = [math.inf] * ((h + 2) * W)
    heap = []
    for p in np.flatnonzero(np.pad(m.finish & open_, 1)).tolist():
        dist[p] = 0.0
        heap.append((0.0, p))
    heapq.heapify(heap)
    done = bytearray(len(dist))
    while heap:
        d, u = heapq.heappop(heap)
        if done[u]:
            continue
        done[u] = 1
        n = outs_of.get(u)
        if n is not None:
            waiting[n] -= 1
            if waiting[n] == 0:  # the last (farthest) out of n: its distance is the tele-ins' worst draw
                for t in ins[n]:
                    if d < dist[t]:
                        dist[t] = d
                        heapq.heappush(heap, (d, t))
        # relax the tiles that step into u: v = u - delta
        for delta, cost in steps:
            v = u - delta
            if not walk[v] or done[v]:
                continue
            if cost > 1.0:  # diagonal: v and u share two side tiles, both must be walkable
                dy, dx = (1 if delta > 0 else -1), (1 if delta % W == 1 else -1)
                if not (walk[v + dy * W] and walk[v + dx]):
                    continue
            nd = d + cost
            if nd < dist[v]:
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    return np.asarray(dist, np.float32).reshape(h + 2, W)[1:-1, 1:-1].copy()


# --- python -m envs.ddnet.mapfile PATH ---------------------------------------------------------

def ascii_picture(m: DDNetMap, max_width: int = 120, max_chars: int = 120 * 60) -> str:
    """The map as text: each character a k x k block of tiles, k as small as keeps the picture
    within max_chars, a wide map cut into strips max_width characters wide, one under the other.
    '@' spawn, 'S' start, 'F' finish, 'T' tele-in, 'O' tele-out, 'X' death, 'v' back to the last
    tele checkpoint (TELECHECKIN), '~' freeze, '#' solid (half the block or more), ' ' open; the
    first of that order present in a block is drawn."""
    k = max(1, math.ceil(math.sqrt(m.width * m.height / max_chars)))
    spawn = np.zeros_like(m.solid)
    for x, y in spawn_points(m):
        spawn[y, x] = True
    hb, wb = math.ceil(m.height / k), math.ceil(m.width / k)

    def blocks(mask: np.ndarray, reduce) -> np.ndarray:
        a = np.zeros((hb * k, wb * k), bool)
        a[:m.height, :m.width] = mask
        return reduce(a.reshape(hb, k, wb, k), axis=(1, 3))

    pic = np.where(blocks(m.solid, np.mean) >= 0.5, "#", " ")
    check_in = np.isin(m.tele_type, TELE_CHECK_IN_TYPES) if m.tele is not None else np.zeros_like(spawn)
    for ch, mask in reversed([("@", spawn), ("S", m.start), ("F", m.finish), ("T", m.tele_in),
                              ("O", m.tele_out), ("X", m.death), ("v", check_in), ("~", m.freeze)]):
        pic = np.where(blocks(mask, np.any), ch, pic)
    strips = []
    for c in range(0, wb, max_width):
        head = f"-- {k} x {k} tiles a character; x {c * k}..{min(m.width, (c + max_width) * k) - 1} --"
        strips.append("\n".join([head] + ["".join(row) for row in pic[:, c:c + max_width]]))
    return "\n".join(strips)


def summary(m: DDNetMap) -> str:
    lines = [f"{m.name}: {m.width} x {m.height} tiles ({m.path})", f"layers: {', '.join(m.layers)}"]
    for label, layer in (("game", m.game), ("front", m.front)):
        if layer is not None:
            values, counts = np.unique(layer, return_counts=True)
            lines.append(f"{label} tiles: " + ", ".join(f"{tile_name(int(v))} {int(c)}" for v, c in zip(values, counts)))
    if m.tele is not None:
        kinds = {}
        for t, n in zip(m.tele_type[m.tele > 0].tolist(), m.tele[m.tele > 0].tolist()):
            kinds.setdefault(_TELE_NAMES.get(t, f"type {t}"), set()).add(n)
        lines.append("tele tiles: " + (", ".join(f"{k} (numbers {sorted(v)})" for k, v in sorted(kinds.items())) or "none"))
    spawns = spawn_points(m)
    lines.append(f"spawns: {len(spawns)} {spawns[:8]}{' ...' if len(spawns) > 8 else ''}")
    lines.append(f"start tiles: {len(start_tiles(m))}, finish tiles: {len(finish_tiles(m))}")
    if not (spawns and finish_tiles(m)):
        lines.append("spawn -> finish: no " + ("finish tiles" if spawns else "spawns") + " (not a race map)")
    else:
        for label, kw in (("", {}), (" without teleporters", {"teleporters": False})):
            if label and m.tele is None:
                break
            d = distance_field(m, **kw)
            at = [float(d[y, x]) for x, y in spawns]
            lines.append(f"spawn -> finish{label}: " + ", ".join(f"{v:.1f}" for v in at[:8]) + " tiles"
                         + ("" if len(at) <= 8 else f" ... (min {min(at):.1f}, max {max(at):.1f})"))
    lines.append("picture: @ spawn, S start, F finish, T tele-in, O tele-out, X death, v back to the last tele "
                 "checkpoint, ~ freeze, # solid")
    lines.append(ascii_picture(m))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m envs.ddnet.mapfile PATH.map", file=sys.stderr)
        return 2
    try:
        m = load_map(argv[0])
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(summary(m))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
