"""What differs between Linux, macOS and Windows, checked on Linux: the text path (a console or
pipe that cannot encode, a locale that is not UTF-8), the cache folder per OS and compiler
command lines with Windows paths."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envs.build import cache, toolchain
from puffbase.cache import cache_root
from puffbase.console import safe_console

ROOT = Path(__file__).resolve().parent.parent

# Python's text defaults as on a Windows console or any non-UTF-8 locale: files and pipes are ASCII
ASCII_LOCALE = {"PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "LC_ALL": "C", "PYTHONIOENCODING": ""}


def _ascii_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_") and k != "LANG"}
    env.update(ASCII_LOCALE, PYTHONPATH=str(ROOT), **extra)
    env.pop("PYTHONIOENCODING")
    return env


@pytest.mark.slow
def test_training_under_an_ascii_locale_with_stdout_piped(tmp_path):
    """The shaders (→, ·, ≥ in comments) load, the summary lines (→, ×) print as '?', the run
    finishes and writes its checkpoint and log."""
    cmd = [sys.executable, "-m", "trainer.run", "--env", "platformer", "--plain", "--no-tune",
           "--vec.total_agents", "64", "--train.horizon", "16", "--train.minibatch_size", "512",
           "--policy.hidden_size", "32", "--policy.num_layers", "1", "--train.total_timesteps", "2048",
           "--base.checkpoint_dir", str(tmp_path / "ck"), "--base.log_dir", str(tmp_path / "logs")]
    res = subprocess.run(cmd, cwd=tmp_path, env=_ascii_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=600)
    out = res.stdout.decode("utf-8", "replace")
    assert res.returncode == 0, out[-3000:]
    assert "done: 2,048 steps" in out
    assert res.stdout.isascii()  # what the pipe could not encode was replaced, not raised
    assert list((tmp_path / "ck").rglob("*.bin"))
    assert list((tmp_path / "logs").rglob("*.jsonl"))


def test_safe_console_replaces_what_the_stream_cannot_encode(tmp_path):
    code = ("import sys; from puffbase.console import safe_console; safe_console(); "
            r"print('a \u2192 b \u00d7 c'); print('\u2265', file=sys.stderr)")
    res = subprocess.run([sys.executable, "-c", code], env=_ascii_env(), capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == b"a ? b ? c\n" and res.stderr == b"?\n"


def test_safe_console_leaves_streams_without_reconfigure_alone(monkeypatch):
    import io
    monkeypatch.setattr(sys, "stdout", io.BytesIO())  # no reconfigure: nothing to do, no error
    safe_console()


def test_cache_root_per_os(monkeypatch, tmp_path):
    monkeypatch.delenv("PUFFGPU_CACHE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path))
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_root() == tmp_path / ".cache" / "puffgpu"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "puffgpu"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert cache_root() == tmp_path / ".cache" / "puffgpu"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cache_root() == tmp_path / "Library" / "Caches" / "puffgpu"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "AppData" / "Local"))
    assert cache_root() == tmp_path / "AppData" / "Local" / "puffgpu"
    monkeypatch.setenv("PUFFGPU_CACHE", str(tmp_path / "mine"))  # still wins on every OS
    assert cache_root() == tmp_path / "mine"
    assert cache.cache_dir() == tmp_path / "mine" / "envs"


def test_compiler_command_keeps_windows_backslashes():
    split = toolchain.split_command
    assert split(r"C:\msys64\ucrt64\bin\gcc.exe", windows=True) == [r"C:\msys64\ucrt64\bin\gcc.exe"]
    assert split(r'"C:\Program Files\LLVM\bin\clang-cl.exe" /O2 -IC:\inc\dir', windows=True) == \
        [r"C:\Program Files\LLVM\bin\clang-cl.exe", "/O2", r"-IC:\inc\dir"]
    assert split('gcc-14 -O2 "-DNAME=a b"', windows=False) == ["gcc-14", "-O2", "-DNAME=a b"]


def test_text_files_are_read_and_written_as_utf8():
    """Every read_text/write_text/open in text mode in the package names its encoding (a file
    written on Linux must read back on Windows, whose default is a code page)."""
    import re
    bad = []
    for pkg in ("puffbase", "trainer", "envs", "tools", "golden"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"\.(read_text|write_text)\(|(?<![\w.])open\(", line) and "encoding=" not in line \
                        and not line.lstrip().startswith("def ") \
                        and not re.search(r"""["'][rwa]\+?b["']""", line) and "safe_open(" not in line:
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_msvc_gets_msvc_flags_and_its_dependency_list(tmp_path):
    cc = [r"C:\Program Files\Microsoft Visual Studio\VC\bin\cl.exe"]
    assert toolchain.toolchain(cc) == "msvc" and toolchain.toolchain(["x86_64-w64-mingw32-gcc"]) == "gnu"
    flags = toolchain.build_flags(cc, target="win32")
    cmd = toolchain.compile_command(cc, flags, "m.c", "out/m.pyd", "C:/e/x/x.h", "C:/py/include",
                                target="win32", python_lib=("C:/py/libs", "python311"))
    text = " ".join(cmd)
    for gnu_only in ("-fPIC", "-MD", "-MF", "-Werror=", "-lm", "-O3", "-fopenmp", "-shared"):
        assert gnu_only not in text
    for msvc in ("/O2", "/std:c17", "/we4013", "/showIncludes", "/LD", "/LIBPATH:C:/py/libs"):
        assert msvc in text
    header = tmp_path / "x.h"
    header.write_text("", encoding="utf-8")
    deps, rest = toolchain.parse_show_includes(f"m.c\nNote: including file: {header}\n"
                                           f"Remarque : inclusion du fichier :  {header}\nm.c(3): warning")
    assert deps == [str(header), str(header)] and rest == "m.c\nm.c(3): warning"


def test_mingw_links_python_and_static_runtimes():
    cc = ["x86_64-w64-mingw32-gcc"]
    cmd = toolchain.compile_command(cc, toolchain.build_flags(cc, target="win32"), "m.c", "m.pyd", "/e/x/x.h",
                                "/py/include", target="win32", python_lib=("/py/libs", "python311"))
    assert "-fPIC" not in cmd and "-lm" not in cmd
    assert cmd[-2:] == ["-L/py/libs", "-lpython311"] and "-static" in cmd and "-static-libgcc" in cmd
    macos = toolchain.compile_command(["cc"], ["-O3"], "m.c", "m.so", "/e/x/x.h", "/py/include", target="darwin")
    assert ["-undefined", "dynamic_lookup"] == macos[macos.index("-undefined"):macos.index("-undefined") + 2]



def test_sweep_lock_files_exclude_each_other_and_free_on_close(tmp_path, monkeypatch):
    from trainer import sweep
    held = sweep.lock_file(tmp_path / "a.lock")
    assert held is not None
    assert sweep.lock_file(tmp_path / "a.lock") is None  # another open of it: refused, not waited for
    held.close()
    again = sweep.lock_file(tmp_path / "a.lock")
    assert again is not None
    again.close()
    monkeypatch.setattr(sweep.tempfile, "gettempdir", lambda: str(tmp_path))
    first, f1 = sweep.claim_adapter(["gpu0", "gpu1"])
    second, f2 = sweep.claim_adapter(["gpu0", "gpu1"])
    assert (first, second) == ("gpu0", "gpu1") and sweep.claim_adapter(["gpu0", "gpu1"]) == (None, None)
    f1.close()
    f2.close()
