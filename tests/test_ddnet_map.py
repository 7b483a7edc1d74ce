"""envs/ddnet/mapfile.py: the datafile reader on Debian's DDNet maps (facts cross-checked with the
`twmap` Rust library's Python bindings and a networkx Dijkstra, outside this repo), on small
datafiles written here, and the distance field on hand-drawn grids against hand-computed values."""
import math
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from envs.ddnet.mapfile import (
    DDNetMap, ENTITY_OFFSET, ENTITY_SPAWN, TILE_DEATH, TILE_FINISH, TILE_SOLID, TILE_TELECHECKINEVIL,
    TILE_TELEIN, TILE_TELEOUT, distance_field, finish_tiles, load_map, main, spawn_points, start_tiles)

MAPS = Path("/usr/share/games/ddnet/data/maps")
TUTORIAL = MAPS / "Tutorial.map"
R2 = math.sqrt(2)


@pytest.fixture(scope="module")
def tutorial():
    if not TUTORIAL.exists():
        pytest.skip(f"{TUTORIAL} is missing: apt-get install ddnet-data")
    return load_map(TUTORIAL)


def grid(rows: list[str], **layers) -> DDNetMap:
    """A map from text: '#' solid, 'F' finish, 'X' death, anything else air."""
    chars = np.array([list(r) for r in rows])
    game = np.select([chars == "#", chars == "F", chars == "X"], [TILE_SOLID, TILE_FINISH, TILE_DEATH], 0).astype(np.uint8)
    return DDNetMap(name="grid", path="<grid>", width=game.shape[1], height=game.shape[0], game=game,
                    game_flags=np.zeros_like(game), **layers)


# --- the real maps -----------------------------------------------------------------------------

def test_tutorial_layers_and_tiles(tutorial):
    m = tutorial
    assert (m.width, m.height, m.name) == (2210, 110, "Tutorial")
    assert m.layers == ("game", "front", "tele", "switch")  # no speedup, no tune layer
    assert m.game.shape == m.front.shape == m.tele.shape == (110, 2210) and m.game.dtype == np.uint8
    assert spawn_points(m) == [(10, 69)]
    assert start_tiles(m) == [(23, 71), (24, 71), (25, 71), (26, 71)]
    assert len(finish_tiles(m)) == 24 and int((m.game == TILE_FINISH).sum()) == 24
    assert int((m.game == TILE_SOLID).sum()) == 103584 and int(m.freeze.sum()) == 1442
    # tele checkpoints and back-to-checkpoint tiles only: no tele-in/out pairs
    assert set(np.unique(m.tele_type[m.tele > 0]).tolist()) == {29, 30, 63}
    assert not m.tele_in.any() and not m.tele_out.any()


def test_tutorial_spawn_reaches_finish(tutorial):
    d = distance_field(tutorial)
    assert d.shape == (110, 2210) and d.dtype == np.float32
    (x, y), = spawn_points(tutorial)
    assert d[y, x] == pytest.approx(2851.21, abs=0.01)  # networkx on the same graph: 2851.2094
    assert np.all(d[tutorial.game == TILE_FINISH] == 0) and np.isinf(d[tutorial.solid]).all()
    assert np.array_equal(distance_field(tutorial, teleporters=False), d)
    assert np.isinf(distance_field(tutorial, avoid_freeze=True)[y, x])  # the route crosses freeze


def test_cli_summary(tutorial, capsys):
    assert main([str(TUTORIAL)]) == 0
    out = capsys.readouterr().out
    assert "Tutorial: 2210 x 110 tiles" in out and "layers: game, front, tele, switch" in out
    assert "start tiles: 4, finish tiles: 24" in out and "spawn -> finish: 2851.2 tiles" in out
    assert "@" in out and "F" in out


# --- errors ------------------------------------------------------------------------------------

def test_garbage_file(tmp_path):
    bad = tmp_path / "garbage.map"
    bad.write_bytes(b"this is not a map, just some text" * 10)
    with pytest.raises(ValueError, match=r"garbage\.map: not a DDNet/Teeworlds map"):
        load_map(bad)
    bad.write_bytes(b"DATA")
    with pytest.raises(ValueError, match="shorter than the 36-byte datafile header"):
        load_map(bad)


def test_truncated_map(tutorial, tmp_path):
    cut = tmp_path / "cut.map"
    cut.write_bytes(TUTORIAL.read_bytes()[:500_000])
    with pytest.raises(ValueError, match=r"cut\.map: truncated: the header promises 1082711 bytes, the file has 500000"):
        load_map(cut)


def write_datafile(path: Path, items: list[tuple[int, int, list[int]]], datas: list[bytes]):
    """A version-4 datafile: items (type, id, ints), sorted by type; data blocks zlib-compressed."""
    types = sorted({t for t, _, _ in items})
    type_table = [v for t in types for v in (t, [i for i, it in enumerate(items) if it[0] == t][0],
                                             sum(it[0] == t for it in items))]
    blobs = [struct.pack(f"<2i{len(v)}i", (t << 16) | i, 4 * len(v), *v) for t, i, v in items]
    packed = [zlib.compress(d) for d in datas]
    item_off = np.cumsum([0] + [len(b) for b in blobs[:-1]]).tolist()
    data_off = np.cumsum([0] + [len(p) for p in packed[:-1]]).tolist()
    body = struct.pack(f"<{len(type_table) + len(items) + 2 * len(datas)}i", *type_table, *item_off, *data_off,
                       *[len(d) for d in datas]) + b"".join(blobs) + b"".join(packed)
    item_size, data_size = sum(map(len, blobs)), sum(map(len, packed))
    head = struct.pack("<4s8i", b"DATA", 4, 36 + len(body) - 16, 0, len(types), len(items), len(datas), item_size, data_size)
    path.write_bytes(head + body)


def tilemap(w: int, h: int, flags: int, data: int, tele: int = -1) -> list[int]:
    # CMapItemLayer (version, type tiles, flags), then CMapItemLayerTilemap version 3 with its name
    return [0, 2, 0, 3, w, h, flags, 255, 255, 255, 255, -1, 0, -1, data, 0, 0, 0, tele, -1, -1, -1, -1]


def test_written_map_and_no_game_layer(tmp_path):
    w, h = 4, 3
    game = np.zeros((h, w, 4), np.uint8)
    game[1, 2, 0] = TILE_FINISH
    game[2, :, 0] = TILE_SOLID
    game[1, 0, 0] = ENTITY_OFFSET + ENTITY_SPAWN
    tele = np.zeros((h, w, 2), np.uint8)
    tele[0, 3] = (7, TILE_TELEOUT)
    group = [3, 0, 0, 100, 100, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0]
    ok = tmp_path / "ok.map"
    write_datafile(ok, [(0, 0, [1]), (4, 0, group), (5, 0, tilemap(w, h, 1, 0)), (5, 1, tilemap(w, h, 2, 1, tele=2))],
                   [game.tobytes(), bytes(w * h * 4), tele.tobytes()])
    m = load_map(ok)
    assert (m.width, m.height, m.layers) == (4, 3, ("game", "tele"))
    assert np.array_equal(m.game, game[..., 0]) and spawn_points(m) == [(0, 1)] and finish_tiles(m) == [(2, 1)]
    assert np.array_equal(m.tele, tele[..., 0]) and m.tele_out[0, 3] and m.tele_out.sum() == 1

    no_game = tmp_path / "nogame.map"
    write_datafile(no_game, [(0, 0, [1]), (4, 0, group[:5] + [0, 1] + group[7:]), (5, 0, tilemap(w, h, 0, 0))],
                   [game.tobytes()])
    with pytest.raises(ValueError, match=r"nogame\.map: no game layer"):
        load_map(no_game)


# --- the distance field on hand-drawn grids ----------------------------------------------------

CORRIDOR = ["#########",
            "#F.#..#.#",
            "#.....#.#",
            "#########"]


def test_corridor_with_wall_and_gap():
    m = grid(CORRIDOR)
    d = distance_field(m)
    # the wall at x=3 leaves a gap at (3, 2); no diagonal step past the wall's corner
    want = {(1, 1): 0, (2, 1): 1, (1, 2): 1, (2, 2): R2, (3, 2): 1 + R2, (4, 2): 2 + R2,
            (4, 1): 3 + R2,  # not 1 + d(3, 2) diagonally: that would cut the wall's corner
            (5, 2): 3 + R2, (5, 1): 2 + 2 * R2}
    for (x, y), v in want.items():
        assert d[y, x] == pytest.approx(v, abs=1e-5), (x, y)
    assert np.isinf(d[1:3, 7]).all()  # the sealed room
    assert np.isinf(d[m.solid]).all()


def test_death_in_the_gap():
    front = np.zeros((4, 9), np.uint8)
    front[2, 3] = TILE_DEATH
    for m in (grid([CORRIDOR[0], CORRIDOR[1], "#..X..#.#", CORRIDOR[3]]),
              grid(CORRIDOR, front=front, front_flags=np.zeros_like(front))):
        d = distance_field(m)
        assert d[2, 2] == pytest.approx(R2) and np.isinf(d[1:3, 3:6]).all()


def test_front_layer_finish():
    front = np.zeros((3, 5), np.uint8)
    front[1, 3] = TILE_FINISH
    m = grid(["#####", "#...#", "#####"], front=front, front_flags=np.zeros_like(front))
    assert finish_tiles(m) == [(3, 1)]
    assert distance_field(m)[1].tolist() == [math.inf, 2, 1, 0, math.inf]


def tele_layer(width: int, tiles: dict[int, tuple[int, int]]) -> dict:
    """Tele layer arrays for a 3-row corridor: {x: (number, type)} in row 1."""
    number, kind = np.zeros((3, width), np.uint8), np.zeros((3, width), np.uint8)
    for x, (n, t) in tiles.items():
        number[1, x], kind[1, x] = n, t
    return dict(tele=number, tele_type=kind)


def test_teleporter():
    rows = ["############",
            "#F..#......#",
            "############"]
    m = grid(rows, **tele_layer(12, {2: (1, TILE_TELEOUT),  # 1 from the finish
                                     3: (1, TILE_TELEOUT),  # 2 from the finish
                                     10: (1, TILE_TELEIN),  # lands on either out at random: the worse, 2
                                     7: (2, TILE_TELEIN)}))  # number 2 has no outs: DDNet ignores it (air)
    d = distance_field(m)
    assert d[1].tolist() == [math.inf, 0, 1, 2, math.inf, 7, 6, 5, 4, 3, 2, math.inf]
    assert np.isinf(distance_field(m, teleporters=False)[1, 5:]).all()


def test_tele_in_is_not_walked_through():
    # the tele-in at x=3 sends the tee into a sealed cell: the tiles behind it cannot reach the finish
    rows = ["#########",
            "#F.T..#.#",
            "#########"]
    m = grid(rows, **tele_layer(9, {3: (1, TILE_TELEIN), 7: (1, TILE_TELEOUT)}))
    assert distance_field(m)[1, :6].tolist() == [math.inf, 0, 1, math.inf, math.inf, math.inf]
    assert distance_field(m, teleporters=False)[1, :6].tolist() == [math.inf, 0, 1, 2, 3, 4]


def test_back_to_checkpoint_tile_blocks():
    # TELECHECKINEVIL sends the tee to its last tele checkpoint: history, not a place; it blocks
    m = grid(["#######", "#F....#", "#######"], **tele_layer(7, {3: (1, TILE_TELECHECKINEVIL)}))
    assert distance_field(m)[1].tolist() == [math.inf, 0, 1, math.inf, math.inf, math.inf, math.inf]
