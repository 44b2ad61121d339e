# Sourced by scripts/bench.sh and scripts/bench-ab.sh (run from the
# repository's root): the benchmark inputs, generated from a fixed seed.
# Needs python3.
# gen KIND MIB FILE: deterministic text (seeded), one of:
#   log      server log, ~1 in 1000 lines an error
#   log10    same, 10% error lines
#   ja       Japanese log lines, ~1 in 1000 with "error"
#   ja10     same, 10% error lines
#   gitlog   git log -p, find: find, grep: grep -rn (real output, repeated)
gen() {
  case $1 in gitlog | find | grep) gen_listing "$@"; return ;; esac
  python3 - "$1" "$2" "$3" <<'PY'
import random, sys
kind, mib, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rnd = random.Random(20261202)

def repeat(chunk, cut, closing):
    """Whole copies of chunk up to mib MiB, then (cut) the part of one more
    that fits, then the closing line."""
    target = mib << 20
    with open(path, "wb") as f:
        n = 0
        while n + len(chunk) <= target:
            f.write(chunk)
            n += len(chunk)
        if cut:
            f.write(chunk[: target - n])
        f.write(closing)
if kind in ("server", "unique"):
    import re
    logs = [open(f"tests/fixtures/families/server/{n}.out", "rb").read().splitlines(keepends=True)
            for n in ("postgres", "nginx-error")]
    # The logs interleaved (as one host's logs are), then again with every
    # number shifted: the same templates with other values.
    mixed = [l for group in zip(*(l * (4000 // len(l) + 1) for l in logs)) for l in group]
    shift = lambda r: lambda m: str(int(m.group()) + r).zfill(len(m.group())).encode()
    lines = []
    for r in range(16):
        lines += [re.sub(rb"\d+", shift(r), l) for l in mixed]
    if kind == "unique":
        # A word of random letters after the first space: every line its own template.
        letters = b"abcdefghijklmnopqrstuvwxyz"
        def word():
            return bytes(rnd.choice(letters) for _ in range(8))
        lines = [l.replace(b" ", b" " + word() + b" ", 1) for l in lines]
    repeat(b"".join(lines), True, b"\nsummary: 1 request FAILED, run finished\n")
    sys.exit(0)
every = 10 if kind.endswith("10") else 1000
lines = []
for i in range(20000):
    if kind.startswith("ja"):
        if i % every == 7:
            lines.append(f"2026-12-02 10:{i%60:02}:{i%59:02} 処理{i}番で error が発生しました: 接続が切断されました\n")
        else:
            lines.append(f"2026-12-02 10:{i%60:02}:{i%59:02} 処理{i}番が完了しました。所要時間は{rnd.randrange(1000)}ミリ秒です\n")
    else:
        if i % every == 7:
            lines.append(f"2026-12-02T10:{i%60:02}:{i%59:02}Z ERROR worker={rnd.randrange(64)} request {rnd.randrange(10**9)} failed: upstream timeout\n")
        else:
            lines.append(f"2026-12-02T10:{i%60:02}:{i%59:02}Z INFO worker={rnd.randrange(64)} request {rnd.randrange(10**9)} served in {rnd.randrange(1000)} ms\n")
repeat("".join(lines).encode(), False, b"summary: 1 request FAILED, run finished\n")
PY
}

# gen_listing KIND MIB FILE: a real listing repeated to MIB MiB, each copy
# renamed (commit hashes, top directory) so that units stay distinct.
gen_listing() {
  python3 - "$1" "$2" "$3" tests/fixtures/layouts <<'PY'
import hashlib, re, sys
kind, mib, path, fix = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
src = {
    "gitlog": ["commits/git-log-p.out", "commits/git-log-stat.out"],
    "find": ["paths/find-man-ja.out", "paths/git-ls-files.out"],
    "grep": ["matches/grep-rn-ja.out", "matches/grep-rn-error.out"],
}[kind]
text = "".join(open(f"{fix}/{f}", encoding="utf-8", errors="surrogateescape").read() for f in src)
target = mib << 20
commit = re.compile(r"^commit ([0-9a-f]{40})", re.M)
with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
    n, rep = 0, 0
    while n < target:
        if kind == "gitlog":
            copy = commit.sub(lambda m: "commit " + hashlib.sha1(f"{rep}{m.group(1)}".encode()).hexdigest(), text)
        else:
            copy = re.sub(r"^(?:\./)?", f"./copy{rep}/", text, flags=re.M)
        f.write(copy)
        n += len(copy.encode("utf-8", "surrogateescape"))
        rep += 1
PY
}
