"""PNG and animated GIF writers for env frames (np.uint8 [H, W, 3]), stdlib + numpy only.

    write_png("frame.png", env.render(0))
    write_gif("episode.gif", frames, fps=30)
"""

import struct
import zlib

import numpy as np

from .atomic import atomic_write


def _check_rgb(frame):
    frame = np.asarray(frame)
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3 or 0 in frame.shape:
        raise ValueError(f"a frame must be a non-empty np.uint8 array [H, W, 3], got "
                         f"{frame.dtype} {frame.shape}")
    return frame


def encode_png(rgb):
    """PNG bytes of one RGB frame: 8-bit truecolor, filter 0 on every row, zlib level 6."""
    rgb = _check_rgb(rgb)
    h, w, _ = rgb.shape
    raw = np.zeros((h, 1 + w * 3), dtype=np.uint8)  # each scanline starts with its filter byte
    raw[:, 1:] = rgb.reshape(h, w * 3)

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + chunk(b"IEND", b""))


def write_png(path, rgb):
    atomic_write(path, encode_png(rgb))


def _palette(frames):
    """One global palette: the exact colors if there are at most 256, else a 3-3-2 bit cube.
    Returns (palette [256, 3] u8, list of index frames [H, W] u8)."""
    packed = [(f[..., 0].astype(np.uint32) << 16) | (f[..., 1].astype(np.uint32) << 8) | f[..., 2]
              for f in frames]
    colors = np.unique(np.concatenate([np.unique(p) for p in packed]))
    if len(colors) <= 256:
        palette = np.zeros((256, 3), dtype=np.uint8)
        palette[:len(colors)] = np.stack([colors >> 16, (colors >> 8) & 255, colors & 255], 1)
        return palette, [np.searchsorted(colors, p).astype(np.uint8) for p in packed]
    idx = np.arange(256)
    palette = np.stack([(idx >> 5) * 255 // 7, ((idx >> 2) & 7) * 255 // 7, (idx & 3) * 255 // 3],
                       1).astype(np.uint8)
    return palette, [((f[..., 0] >> 5) << 5 | (f[..., 1] >> 5) << 2 | (f[..., 2] >> 6)).astype(np.uint8)
                     for f in frames]


def lzw_encode(indices, min_code_size=8):
    """GIF's variable-width LZW (codes of min_code_size+1 .. 12 bits, LSB first) of a byte
    string; returns the packed code stream."""
    clear, end = 1 << min_code_size, (1 << min_code_size) + 1
    out = bytearray()
    acc = nbits = 0  # bit accumulator
    width = min_code_size + 1
    table = {}
    next_code = end + 1

    def emit(code):
        nonlocal acc, nbits
        acc |= code << nbits
        nbits += width
        while nbits >= 8:
            out.append(acc & 255)
            acc >>= 8
            nbits -= 8

    emit(clear)
    data = bytes(indices)
    if not data:
        emit(end)
        return bytes(out + (bytes([acc]) if nbits else b""))
    prefix = data[0]
    for byte in data[1:]:
        key = (prefix << 8) | byte  # the string "prefix + byte", keyed by prefix's code
        code = table.get(key)
        if code is not None:
            prefix = code
            continue
        emit(prefix)
        if next_code < 4096:
            table[key] = next_code
            next_code += 1
            # the decoder widens one code later than the encoder adds, hence '>' not '>='
            if next_code > (1 << width) and width < 12:
                width += 1
        else:  # table full: start over
            emit(clear)
            table.clear()
            next_code = end + 1
            width = min_code_size + 1
        prefix = byte
    emit(prefix)
    emit(end)
    if nbits:
        out.append(acc & 255)
    return bytes(out)


def encode_gif(frames, fps=30, loop=True):
    """Animated GIF bytes (GIF89a, one global palette) of a list of RGB frames of one size."""
    frames = [_check_rgb(f) for f in frames]
    if not frames:
        raise ValueError("encode_gif needs at least one frame")
    h, w, _ = frames[0].shape
    for i, f in enumerate(frames):
        if f.shape != frames[0].shape:
            raise ValueError(f"frame {i} is {f.shape[:2]}, frame 0 is {(h, w)}: all frames "
                             f"must have one size")
    palette, indexed = _palette(frames)
    delay = max(1, round(100 / fps))  # hundredths of a second
    out = bytearray(b"GIF89a" + struct.pack("<HHBBB", w, h, 0xF7, 0, 0) + palette.tobytes())
    if loop and len(frames) > 1:  # NETSCAPE2.0: loop forever
        out += b"\x21\xFF\x0BNETSCAPE2.0\x03\x01\x00\x00\x00"
    for ix in indexed:
        out += struct.pack("<BBBBHB", 0x21, 0xF9, 4, 0, delay, 0) + b"\x00"  # graphic control
        out += struct.pack("<BHHHHB", 0x2C, 0, 0, w, h, 0)                 # image descriptor
        data = lzw_encode(ix.tobytes(), 8)
        out.append(8)
        for i in range(0, len(data), 255):  # sub-blocks of at most 255 bytes
            block = data[i:i + 255]
            out.append(len(block))
            out += block
        out.append(0)
    out.append(0x3B)
    return bytes(out)


def write_gif(path, frames, fps=30, loop=True):
    atomic_write(path, encode_gif(frames, fps=fps, loop=loop))
