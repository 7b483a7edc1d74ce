"""The bots' network client (ddnet_client.h) as a cffi module, and the protocol's constants that
come from outside it: the Huffman frequency table (from twnet-parser, the protocol's Python
implementation on PyPI) and the UUIDs of DDNet's extended snapshot items."""
from __future__ import annotations

import struct
import uuid
from pathlib import Path

import numpy as np

from ..build import load_cffi
from ..errors import EnvError

DDNET_DIR = Path(__file__).resolve().parent

FIELDS = ("phase cid tick has_char x y vx vy direction jumped hooked_player hook_state hook_x hook_y weapon ammo "
          "ddnet flags freeze_end jumps jumped_total freeze_start num_others").split()
OTHERS = 4
FIELDS += [f"other{k}_{c}" for k in range(OTHERS) for c in ("x", "y", "vx", "vy")]
FIELDS += "snaps snap_errors inputs_sent connects recv_time_ms map_changes absent_tick deaths".split()
F = {name: i for i, name in enumerate(FIELDS)}
NFIELDS = len(FIELDS)
INPUT_SIZE = 10
# columns of a bot's input row (the protocol's PlayerInput; Fire is held 0/1 here, counted in C)
IN_DIRECTION, IN_TARGET_X, IN_TARGET_Y, IN_JUMP, IN_FIRE, IN_HOOK, IN_PLAYER_FLAGS, IN_WANTED_WEAPON = range(8)

CDEF = """
typedef struct ddc_env ddc_env;
ddc_env *ddc_create(int num_bots, const int *server_of, const int *ports, const unsigned *freq,
                    const int32_t *ddnet_char_uuid, const uint8_t *clientver_uuid, const char *name_prefix,
                    const char *rcon_password);
int ddc_rcon(ddc_env *e, int i, const char *line);
int ddc_num_bots(ddc_env *e);
void ddc_copy_state(ddc_env *e, int32_t *out);
int32_t *ddc_state(ddc_env *e);
int32_t *ddc_input(ddc_env *e);
void ddc_send_inputs(ddc_env *e, int lo, int hi);
void ddc_reconnect(ddc_env *e, int i);
int ddc_wait_tick(ddc_env *e, int lo, int hi, const int32_t *want, int timeout_ms);
void ddc_decode_stats(ddc_env *e, int64_t *out);
void ddc_lockstep_attach(ddc_env *e, int s, void *block, int wake, int done);
void ddc_lockstep_grant(ddc_env *e, int s, int64_t grant_ns);
int ddc_lockstep_wait(ddc_env *e, int timeout_ms, int32_t *done);
int64_t ddc_lockstep_lost(ddc_env *e);
void ddc_destroy(ddc_env *e);
int ddc_test_huffman(const unsigned *freq, const uint8_t *in, int n, uint8_t *out, int cap);
int ddc_test_unpack_ints(const uint8_t *in, int n, int32_t *out, int cap);
"""

TEEWORLDS_NAMESPACE = uuid.UUID("e05ddaaa-c4e6-4cfb-b642-5d48e80c0029")


def item_uuid_ints(name: str) -> tuple:
    """A DDNet extended item's UUID (version 3 of its name in the Teeworlds namespace) as the four
    big-endian ints a snapshot carries it in."""
    u = uuid.uuid3(TEEWORLDS_NAMESPACE, name)
    return struct.unpack(">4i", u.bytes)


def message_uuid(name: str) -> bytes:
    """A DDNet extended message's UUID (version 3 of its name in the Teeworlds namespace), 16 bytes."""
    return uuid.uuid3(TEEWORLDS_NAMESPACE, name).bytes


def huffman_frequencies() -> np.ndarray:
    try:
        from twnet_parser.huffman_twnet_parser import FREQUENCY_TABLE
    except ImportError:
        raise EnvError("the DDNet env needs twnet-parser for the protocol's Huffman table: "
                           "pip install -e \".[ddnet]\" (or pip install twnet-parser)") from None
    freq = np.asarray(FREQUENCY_TABLE[:256], dtype=np.uint32)
    if freq.shape != (256,):
        raise EnvError(f"twnet-parser's FREQUENCY_TABLE has {len(FREQUENCY_TABLE)} entries, not 256 (+EOF)")
    return freq


def native():
    """The cffi module of ddnet_client.h (built once, cached)."""
    return load_cffi("ddnet", CDEF, '#include "ddnet_client.h"\n', includes=[DDNET_DIR])
