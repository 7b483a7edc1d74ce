#!/usr/bin/env bash
# Builds envs/c/vecenv_driver.c around each env header with AddressSanitizer and
# UndefinedBehaviorSanitizer and steps it with random actions (1% garbage: NaN, inf, out of
# range), reading the [env] keys from the env's .ini.
#
#   checks/sanitize_envs.sh                  # every env: each folder envs/ocean/<name>/ holding <name>.h
#   checks/sanitize_envs.sh platformer       # one env
#   checks/sanitize_envs.sh path/to/my_env.h # any env header (its .ini beside it)
#   AGENTS=16 STEPS=10000 THREADS=2 checks/sanitize_envs.sh
#
# Exits 0 if all passed, 1 on a failure, 77 if the compiler cannot build with the sanitizers.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cc="${CC:-cc}"
flags=(-g -O1 -fno-omit-frame-pointer -fopenmp -fsanitize=address,undefined,float-cast-overflow
       -fno-sanitize-recover=all -Wall -Wno-unknown-pragmas -Wno-unused-function)
agents="${AGENTS:-16}"; steps="${STEPS:-10000}"; threads="${THREADS:-2}"
out="$(mktemp -d)"; trap 'rm -rf "$out"' EXIT

echo 'int main(void){return 0;}' > "$out/probe.c"
if ! "$cc" "${flags[@]}" "$out/probe.c" -o "$out/probe" 2> "$out/probe.err"; then
    echo "SKIP: $cc cannot build with ${flags[*]}:" >&2
    head -5 "$out/probe.err" >&2
    exit 77
fi
leaks=1
if ! ASAN_OPTIONS=detect_leaks=1 "$out/probe" 2> "$out/probe.err"; then
    # LeakSanitizer needs ptrace, which some containers forbid; keep the other checks.
    if ! ASAN_OPTIONS=detect_leaks=0 "$out/probe" 2>> "$out/probe.err"; then
        echo "SKIP: programs built with ${flags[*]} do not run here:" >&2
        head -5 "$out/probe.err" >&2
        exit 77
    fi
    echo "note: LeakSanitizer does not work here; running without leak checks" >&2
    leaks=0
fi

if [ $# -gt 0 ]; then names=("$@"); else
    names=(); for d in "$root"/envs/ocean/*/; do n="$(basename "$d")"; [ -f "$d/$n.h" ] && names+=("$n"); done
fi
export ASAN_OPTIONS="detect_leaks=$leaks:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1"
for name in "${names[@]}"; do
    if [[ "$name" == *.h ]]; then  # a header path
        header="$(cd "$(dirname "$name")" && pwd)/$(basename "$name")"
        name="$(basename "$name" .h)"
        ini="${header%.h}.ini"
    else
        header="$root/envs/ocean/$name/$name.h"
        ini="$root/envs/ocean/$name/$name.ini"
    fi
    # key = value lines of the [env] section, comments stripped, _ digit separators removed
    mapfile -t kv < <([ -f "$ini" ] && awk '
        /^[[:space:]]*\[/ { in_env = ($0 ~ /^[[:space:]]*\[env\]/); next }
        in_env { sub(/[;#].*/, ""); gsub(/[[:space:]]/, ""); i = index($0, "=")
                 if (i) { v = substr($0, i + 1); gsub(/_/, "", v); print substr($0, 1, i) v } }' "$ini" || true)
    bin="$out/$name"
    "$cc" "${flags[@]}" -I"$(dirname "$header")" -I"$root/envs/c" -DENV_HEADER="\"$header\"" \
        "$root/envs/c/vecenv_driver.c" -lm -o "$bin"
    echo "== $name: $agents agents x $steps steps, $threads threads, [env] ${kv[*]:-}"
    "$bin" --agents "$agents" --steps "$steps" --threads "$threads" --garbage "${kv[@]}"
done
echo "sanitizers: all envs passed"
