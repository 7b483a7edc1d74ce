"""TensorBoard and W&B loggers: a real short run logs to both; each is read back with its own reader
(TensorBoard's EventAccumulator, W&B's protobuf records of the offline run file) and compared with
the JSONL log, the source of truth."""
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from golden.check import assert_close
from trainer import config
from trainer.loggers import LoggerError, tag
from trainer.run import train

SMOKE = {"vec.total_agents": "16", "train.horizon": "8", "train.minibatch_size": "64", "policy.hidden_size": "16",
         "policy.num_layers": "2", "train.total_timesteps": str(16 * 8 * 3)}


def smoke_cfg(tmp_path, **extra):
    flags = dict(SMOKE, **{"base.checkpoint_dir": str(tmp_path / "ck"), "base.log_dir": str(tmp_path / "logs")})
    flags.update(extra)
    return config.load("memory", flags)[0]


def epoch_lines(path):
    return [r for r in map(json.loads, Path(path).read_text().splitlines()) if r["type"] == "epoch"]


def wandb_records(path: Path):
    """The protobuf records of a W&B run file: a 7-byte header, then LevelDB-log blocks of 32 KiB whose
    chunks (crc32, length, type) are joined into records (type 1 whole, 2..4 first/middle/last)."""
    from wandb.proto import wandb_internal_pb2 as pb
    data, pos, block, out, buf = path.read_bytes(), 7, 32768, [], b""
    assert data[1:4] == b"W&B", data[:7]
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a chunk header is padding
            pos += block - pos % block
            continue
        _crc, n, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0:
            break
        buf += data[pos + 7:pos + 7 + n]
        pos += 7 + n
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(buf)
            out.append(rec)
            buf = b""
    return out


@pytest.mark.slow
def test_tensorboard_and_wandb_round_trip(tmp_path, monkeypatch):
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = smoke_cfg(tmp_path, **{"base.tensorboard": "1", "base.wandb": "1", "base.wandb_mode": "offline",
                                 "base.wandb_project": "puffgpu-test"})
    res = train("memory", cfg, live=False, run_id="lg")
    epochs = epoch_lines(res["log"])
    assert [e["global_step"] for e in epochs] == [128, 256, 384]
    run_dir = tmp_path / "logs" / "memory" / "lg"

    # TensorBoard, read with TensorBoard's own reader
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    keys = [k for k, v in epochs[0].items() if isinstance(v, float) and k not in ("eta",)]
    assert {"policy_loss", "env/perf", "sps", "learning_rate", "time/learn"} <= set(keys)
    assert set(ea.Tags()["scalars"]) == {tag(k) for k in keys}
    for k in keys:
        got = ea.Scalars(tag(k))
        assert [s.step for s in got] == [128, 256, 384], k
        np.testing.assert_array_equal([s.value for s in got], np.float32([e[k] for e in epochs]), err_msg=k)
    text = ea.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert "[train]" in text and "horizon = 8" in text and "hidden_size = 16" in text

    # W&B offline: the run file exists and holds the same history and the config
    files = list((run_dir / "wandb").glob("offline-run-*/run-lg.wandb"))
    assert len(files) == 1, list(run_dir.rglob("*"))
    recs = wandb_records(files[0])
    history = []
    for r in recs:
        if r.WhichOneof("record_type") == "history":
            history.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item})
    assert [h["_step"] for h in history] == [128, 256, 384]
    for h, e in zip(history, epochs):
        for k in keys:
            assert_close(f"W&B history {k}", h[tag(k)], e[k], "float64")
    run = next(r.run for r in recs if r.WhichOneof("record_type") == "run")
    assert run.run_id == "lg" and run.project == "puffgpu-test"
    conf = {i.key: json.loads(i.value_json) for i in run.config.update}
    assert conf["train"]["horizon"] == 8 and conf["policy"]["hidden_size"] == 16 and conf["base"]["wandb"] == 1


def test_missing_logger_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import tensorboardX now raises ImportError
    with pytest.raises(LoggerError, match=r"tensorboardX.*pip install 'puffgpu\[tensorboard\]'"):
        train("memory", smoke_cfg(tmp_path, **{"base.tensorboard": "1"}), live=False, run_id="x")
    assert not (tmp_path / "logs").exists()  # refused before any work
    monkeypatch.delitem(sys.modules, "tensorboardX")
    with pytest.raises(LoggerError, match=r"wandb_mode = 'bogus'; valid: online, offline"):
        train("memory", smoke_cfg(tmp_path, **{"base.wandb": "1", "base.wandb_mode": "bogus"}), live=False)


def test_tensorboard_writer_does_not_import_torch(tmp_path):
    code = ("import sys, pathlib; from trainer import loggers as L; "
            "t = L.TensorBoardLogger({'config': {}}, pathlib.Path(sys.argv[1])); "
            "t.log({'global_step': 1, 'sps': 1.0}); t.close(); assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=Path(__file__).resolve().parent.parent)
