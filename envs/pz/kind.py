"""The PettingZoo kind's declaration: `pz:module.path:env_fn` (env_fn defaults to parallel_env,
PettingZoo's own name for it), `pz:path/to/file.py[:env_fn]`, or a Python file that defines
parallel_env (found without running the file). [env] keys pass through to the function.

The training ini of `pz:module.path` is envs/pz/ini/<last part of the module>.ini, of a file the
ini beside it; without one, envs/gym/default.ini.
"""
import ast
from pathlib import Path

from ..gym.kind import DEFAULTS as GYM_DEFAULTS
from ..gym.kind import EVALUATION, TRAINING_INI, make_python_env
from ..kind import EnvSource, Kind, beside

INI_DIR = Path(__file__).resolve().parent / "ini"
DEFAULT_FN = "parallel_env"
DEFAULTS = {**GYM_DEFAULTS, "factory": DEFAULT_FN}


def defines_parallel_env(path: Path) -> bool:
    """Whether a Python file defines (or imports) parallel_env at its top level."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == DEFAULT_FN:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == DEFAULT_FN for t in node.targets):
            return True
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == DEFAULT_FN for a in node.names):
            return True
    return False


def make(source, total_agents, config, **options):
    return make_python_env(source, total_agents, config, "envs.pz.runner:PzRunner", **options)


def lookup(text: str) -> EnvSource:
    """'module.path[:fn]' or 'path/to/file.py[:fn]'."""
    where, _, fn = text.partition(":") if not text.endswith(".py") else (text, "", "")
    if where.endswith(".py") or "/" in where:
        path = Path(where).expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(f"pz: {path} does not exist")
        return EnvSource(path.stem, KIND, path, beside(path), target=fn)
    if not where:
        raise ValueError("pz: needs a module after it, e.g. pz:pettingzoo.butterfly.pistonball_v6 "
                         "(or pz:module.path:env_fn)")
    name = where.rsplit(".", 1)[-1]
    ini = INI_DIR / f"{name}.ini"
    return EnvSource(name, KIND, ini, ini, target=f"{where}:{fn or DEFAULT_FN}")


KIND = Kind(name="pz", title="PettingZoo env", suffix=".py", noun="Python env file", make=make, ini_of=beside,
            claims=defines_parallel_env, mark="a top-level parallel_env", defaults=DEFAULTS, training=TRAINING_INI,
            prefix="pz:", lookup=lookup, open_keys=True, evaluation=EVALUATION)
