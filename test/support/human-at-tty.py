"""Be the human at a terminal: run a command on a new pseudo-terminal (its controlling terminal)
and type each answer when a passphrase prompt appears.

    python3 human-at-tty.py '<json list of answers>' command args...

Prints the terminal's transcript (prompts, the command's output; the typed answers are never
echoed: the program turns echo off) and exits with the command's exit code.
"""
import json
import os
import pty
import select
import sys
import time

answers = json.loads(sys.argv[1])
argv = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)

out = b""
pending = list(answers)
seen = 0
deadline = time.monotonic() + 60
while True:
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        break
    r, _, _ = select.select([fd], [], [], 0.1)
    if fd in r:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    # A prompt is a line ending in ": " after the last answer typed.
    tail = out[seen:]
    if pending and tail.rstrip(b" ").endswith(b":") and tail.endswith(b": "):
        os.write(fd, pending.pop(0).encode() + b"\r")
        seen = len(out)
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf8", "replace"))
sys.exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8)
