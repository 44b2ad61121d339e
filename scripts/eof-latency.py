#!/usr/bin/env python3
"""Time from the end of input to the envelope: outbox reads SIZE MiB of a
generated log through a pipe; the clock starts when the writer closes the
pipe and stops when the envelope's last byte has arrived (outbox's exit
status is collected after). Prints the median and the worst of ROUNDS runs.

    OUTBOX=target/release/outbox python3 scripts/eof-latency.py [SIZE_MiB ...]

Uses a fresh temporary store (OUTBOX_DIR) so no run finds its content
already stored.
"""
import os, statistics, subprocess, sys, tempfile, threading, time

outbox = os.environ.get("OUTBOX", "target/release/outbox")
rounds = int(os.environ.get("ROUNDS", "5"))
sizes = [int(s) for s in sys.argv[1:]] or [1, 1024]

line = b"2026-12-03T10:00:00Z INFO worker=7 request 123456 served in 12 ms\n"
err = b"2026-12-03T10:00:00Z ERROR worker=7 request 123456 failed: upstream timeout\n"
block = (line * 999 + err) * 16  # ~1.1 MiB

for mib in sizes:
    target = mib << 20
    waits = []
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as store:
            os.chmod(store, 0o700)
            env = dict(os.environ, OUTBOX_DIR=store)
            p = subprocess.Popen([outbox], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
            out = []
            reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
            reader.start()
            sent = 0
            # A different last line each round: a different content id.
            while sent < target:
                piece = block[: min(len(block), target - sent)]
                p.stdin.write(piece)
                sent += len(piece)
            p.stdin.write(f"run {r} {time.time()} finished\n".encode())
            p.stdin.close()
            t0 = time.monotonic()
            reader.join()
            t1 = time.monotonic()
            p.wait()
            assert b"OUTBOX-HEADER" in out[0], "no envelope"
            waits.append((t1 - t0) * 1000)
    print(f"{mib} MiB: envelope {statistics.median(waits):.1f} ms after end of input "
          f"(median of {rounds}; worst {max(waits):.1f} ms)")
