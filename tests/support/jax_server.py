"""A long-lived JAX subprocess with several CPU devices, for property tests
that compare spec with JAX on many drawn cases (one subprocess per case would
cost JAX's start-up each time). Requests and replies are JSON lines: a
program text whose library is ``IMPL`` (as in tests/support/twin.py) and which
fills ``out``; every wait has a deadline, and the process is killed when the
deadline passes.
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
from typing import Any

from tests.support.twin import jax_env

_SERVER = r'''
import json, sys, traceback
import jax, jax.numpy as jnp
for line in sys.stdin:
    scope = {"__name__": "__case__"}
    code = json.loads(line)["code"].replace(
        "IMPL", "__import__('jax'), __import__('jax.numpy').numpy")
    try:
        exec(compile(code, "<case>", "exec"), scope)
        reply = {"out": scope.get("out")}
    except BaseException as e:  # the case itself failed to run: report, keep serving
        reply = {"error": "".join(traceback.format_exception_only(type(e), e))}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
'''


class JaxServer:
    def __init__(self, devices: int = 4, timeout: float = 120.0) -> None:
        env = jax_env(devices)
        self.timeout = timeout
        self.proc = subprocess.Popen([sys.executable, "-u", "-c", _SERVER], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)

    def run(self, program: str) -> dict[str, Any]:
        self.send(program)
        return self.receive()

    def send(self, program: str) -> None:
        """Start one case; ``receive`` gives its result (meanwhile this
        process may do other work: the server computes on another core)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"code": program}) + "\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(self.timeout):
                self.close()
                raise TimeoutError(f"the JAX server gave no answer in {self.timeout} s")
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the JAX server exited")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"the case failed to run on JAX: {reply['error']}")
        result: dict[str, Any] = reply["out"]
        return result

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
