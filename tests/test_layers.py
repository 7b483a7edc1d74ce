"""The import graph of trainer/, envs/, golden/ and tools/ has no cycle, no module imports a layer
above its own, and the pure layer (spec, metrics, config, checkpoint, envs) never loads wgpu — checked
statically by tools/import_graph.py; and in a fresh process, parsing the config and reading a
checkpoint's spec really do not import wgpu."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_graph_has_no_cycle_and_respects_the_layers():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "import_graph.py")], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 cycles" in r.stdout


def test_config_and_checkpoint_do_not_load_wgpu():
    code = ("import sys; from trainer import config, checkpoint, spec; config.load('platformer'); "
            "assert 'wgpu' not in sys.modules, sorted(m for m in sys.modules if 'wgpu' in m)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_run_help_does_not_load_wgpu():
    code = ("import sys; from trainer import run; assert run.main(['--help']) == 0; "
            "assert 'wgpu' not in sys.modules, 'trainer.run --help loaded wgpu'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "--train.learning_rate" in r.stdout
