"""Export a puffgpu/PufferLib checkpoint (.bin + sidecar) to .safetensors with named tensors.

    python tools/export_safetensors.py checkpoints/platformer/<run>/<step>.bin [--out FILE]
    python tools/export_safetensors.py PATH.bin --obs-size 413 --hidden 128 --layers 4 --heads 3,3
        (for a PufferLib file without a sidecar; add --picture 64x64x3 for an env with a picture)

Tensors: encoder.weight [H, D] — or, for an env with a picture, encoder.convs.{0,1,2}.weight
(out, ky, kx, in) = (32, 8, 8, C), (64, 4, 4, 32), (64, 3, 3, 64) and encoder.linear.weight
[H, F + conv_out] (F features before the picture, then the flattened (oy, ox, c) conv output) —
decoder.weight [A+1, H] (every head's columns: logits of a discrete
head, the mean of a continuous one; then the value), decoder.logstd [1, Kc] (only with continuous
heads: their state-independent log std), mingru.<l>.weight [3H, H] (rows: hidden, gate, highway
projection). Metadata carries the sidecar.
"""
import argparse
import json
import sys
from pathlib import Path

from safetensors.numpy import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from puffbase.atomic import atomic_write  # noqa: E402
from trainer.checkpoint import CheckpointError, load, read_sidecar  # noqa: E402
from trainer.spec import PolicySpec, unflatten  # noqa: E402
from puffbase.console import safe_console  # noqa: E402

EXPORT_NAMES = {"logstd": "decoder.logstd"}  # PufferLib keeps logstd with the decoder's weights


def export_tensors(spec: PolicySpec, weights) -> dict:
    """{exported name: array}: `<tensor>.weight` (a conv in its own shape (out, ky, kx, in)), logstd as
    decoder.logstd."""
    views = {t.name: t for t in spec.tensors}
    return {EXPORT_NAMES.get(k, f"{k}.weight"): v.reshape(views[k].export_shape).copy()
            for k, v in unflatten(spec, weights).items()}


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--out", help="output file (default: the checkpoint path with .safetensors)")
    ap.add_argument("--obs-size", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--heads", help="comma-separated head sizes, e.g. 3,3 (1 = a continuous head)")
    ap.add_argument("--picture", help="HEIGHTxWIDTHxCHANNELS of the picture at the end of each observation, "
                    "e.g. 64x64x3 (default: none)")
    ap.add_argument("--obs-dtype", default="float32", choices=("float32", "uint8"))
    args = ap.parse_args()
    path = Path(args.checkpoint)
    meta = read_sidecar(path) if path.exists() else None
    try:
        if meta:
            spec = PolicySpec.from_meta(meta)
        elif None not in (args.obs_size, args.hidden, args.layers, args.heads):
            picture = None
            if args.picture:
                try:
                    picture = tuple(int(v) for v in args.picture.lower().split("x"))
                except ValueError:
                    sys.exit(f"error: --picture {args.picture!r} must be HEIGHTxWIDTHxCHANNELS, e.g. 64x64x3")
            spec = PolicySpec(args.obs_size, args.hidden, args.layers, tuple(int(h) for h in args.heads.split(",")),
                              picture=picture, obs_dtype=args.obs_dtype)
        else:
            sys.exit(f"{path} has no sidecar: give --obs-size, --hidden, --layers and --heads")
    except ValueError as e:
        sys.exit(f"error: {e}")
    try:
        weights, meta = load(path, spec)
    except CheckpointError as e:
        sys.exit(f"error: {e}")
    tensors = export_tensors(spec, weights)
    out = Path(args.out) if args.out else path.with_suffix(".safetensors")
    tmp = out.with_name(f".{out.name}.tmp")
    save_file(tensors, str(tmp), metadata={"puffgpu": json.dumps(meta or spec.describe(), sort_keys=True)})
    atomic_write(out, tmp.read_bytes())
    tmp.unlink()
    print(f"wrote {out}: " + ", ".join(f"{k} {list(v.shape)}" for k, v in tensors.items()))


if __name__ == "__main__":
    main()
