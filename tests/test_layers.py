"""The import graph of puffbase/, trainer/, envs/, golden/, tools/ and checks/ has no cycle, no module imports a layer
above its own, and the pure layer (spec, metrics, config, checkpoint, envs) never loads wgpu — checked
statically by checks/import_graph.py; and in a fresh process, parsing the config and reading a
checkpoint's spec really do not import wgpu."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_graph_has_no_cycle_and_respects_the_layers():
    r = subprocess.run([sys.executable, str(ROOT / "checks" / "import_graph.py")], capture_output=True, text=True,
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


def test_only_the_registry_tells_env_kinds_apart():
    """One place decides an env's kind (envs/registry.py, from the kinds' own declarations): no other
    module of the trainer, the envs, the tools or the checks compares a kind, tests a file for an env
    suffix or checks an env's class."""
    import re
    pattern = re.compile(r"""\.kind(\.name)?\s*(==|!=|\bis\b|\bin\b)"""
                         r"""|suffix\s*(==|!=|\bin\b)\s*[("'{\[]*\.(h|js|ini)\b|endswith\(\s*["']\.(h|js|ini)["']"""
                         r"""|[=!]=\s*["'](header|js|server|ddnet)["']"""
                         r"""|isinstance\([^)]*\b(VecEnv|GoExploreVecEnv|JsEnv|ShmVecEnv|DDNetEnv)\b""")
    bad = []
    for pkg in ("trainer", "envs", "tools", "checks"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path == ROOT / "envs" / "registry.py":
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if pattern.search(line):
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "kind tests outside envs/registry.py:\n" + "\n".join(bad)
