"""PNG/GIF writers decode back exactly (checked with pillow), and the documented GIF command works."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import envs
from puffbase.image import encode_gif, encode_png, lzw_encode, write_gif, write_png

Image = pytest.importorskip("PIL.Image", reason="pillow (a dev dependency) decodes the images")
ROOT = Path(__file__).resolve().parent.parent


def gif_frames(path):
    im = Image.open(path)
    frames = []
    for i in range(im.n_frames):
        im.seek(i)
        frames.append(np.asarray(im.convert("RGB")))
    return frames


def test_png_roundtrip(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (7, 13, 3), dtype=np.uint8)
    write_png(tmp_path / "a.png", rgb)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "a.png").convert("RGB")), rgb)


def test_gif_roundtrip_exact_palette(tmp_path):
    env = envs.make("platformer", 1, num_threads=1)
    env.reset()
    frames = [env.render(0)]
    for _ in range(40):
        env.scripted_actions()
        env.step()
        frames.append(env.render(0))
    write_gif(tmp_path / "a.gif", frames, fps=30)
    decoded = gif_frames(tmp_path / "a.gif")
    assert len(decoded) == len(frames)
    for got, want in zip(decoded, frames):
        np.testing.assert_array_equal(got, want)


def test_gif_lzw_with_full_tables_and_many_colors(tmp_path):
    """Noise fills the 4096-code table (forcing clear codes) and has > 256 colors (332 palette)."""
    rng = np.random.default_rng(1)
    frames = [rng.integers(0, 256, (61, 97, 3), dtype=np.uint8) for _ in range(2)]
    write_gif(tmp_path / "n.gif", frames)
    decoded = gif_frames(tmp_path / "n.gif")
    for got, want in zip(decoded, frames):  # 3-3-2 quantization: within one palette step
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 85
    # a single-color frame and a tiny one
    one = np.zeros((1, 1, 3), np.uint8)
    write_gif(tmp_path / "o.gif", [one])
    np.testing.assert_array_equal(gif_frames(tmp_path / "o.gif")[0], one)
    assert lzw_encode(b"", 8)  # clear + end codes


def test_bad_frames_raise():
    with pytest.raises(ValueError, match=r"np.uint8 array \[H, W, 3\]"):
        encode_png(np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match="one size"):
        encode_gif([np.zeros((4, 4, 3), np.uint8), np.zeros((4, 5, 3), np.uint8)])


@pytest.mark.slow
def test_play_gif_command(tmp_path):
    """The documented command: python -m envs.play platformer --scripted --gif out.gif"""
    out = tmp_path / "platformer.gif"
    res = subprocess.run([sys.executable, "-m", "envs.play", "platformer", "--scripted", "--gif",
                          str(out), "--png", str(tmp_path / "f.png"), "--frame", "-1"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "perf=1" in res.stdout
    frames = gif_frames(out)
    assert 250 < len(frames) < 400 and frames[0].shape == (144, 256, 3)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "f.png").convert("RGB")),
                                  frames[-1])
