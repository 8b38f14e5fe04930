"""``jax.debug.breakpoint``: stop where a program runs and read pdb-like
commands (SPEC.md, "Effects and callbacks").

The breakpoint records the Python frames around its call when the program
is traced; their array-valued locals (tracers under a transformation)
become operands of a ``debug_callback``, so that when the program runs the
debugger sees their values. The command loop is JAX's ``jdb``: prompt
``(jdb) ``, ``p``/``pp`` an expression, ``u``/``d`` move between frames,
``l`` lists the source, ``w``/``bt`` prints the stack, ``c`` continues and
``q`` exits; any other line is evaluated and its repr printed.
"""

from __future__ import annotations

import cmd
import inspect
import os
import pprint
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import IO, Any

from spec._src.api.callbacks import debug_callback, pure_callback
from spec._src.core.interpreter import Tracer

_SPEC_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class DebuggerFrame:
    """One Python frame as the debugger shows it: its file, line, locals and
    source (``offset``: the line's index in ``source``, None without source)."""

    filename: str
    locals: dict[str, Any]
    globals: dict[str, Any]
    source: list[str]
    lineno: int
    offset: int | None

    @classmethod
    def of(cls, info: inspect.FrameInfo) -> DebuggerFrame:
        source: list[str] = []
        offset: int | None = None
        try:
            _, start = inspect.getsourcelines(info.frame)
            source = inspect.getsource(info.frame).split("\n")
            offset = info.lineno - max(start, 1)
            if offset >= len(source):
                source, offset = [], None
        except (OSError, TypeError):
            source, offset = [], None
        return cls(info.filename, dict(info.frame.f_locals), {}, source, info.lineno, offset)


class CliDebugger(cmd.Cmd):
    """The text debugger: reads commands from ``stdin`` (the terminal when
    None) and writes to ``stdout``."""

    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], thread_id: int | None,
                 stdin: IO[str] | None = None, stdout: IO[str] | None = None,
                 completekey: str = "tab") -> None:
        super().__init__(completekey=completekey, stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.frame_index = 0
        self.thread_id = thread_id
        self.intro = "Entering jdb:"

    def _say(self, text: str) -> None:
        print(text, file=self.stdout)

    def _evaluate(self, expr: str) -> Any:
        frame = self.frames[self.frame_index]
        return eval(expr, {}, {**frame.globals, **frame.locals})  # noqa: S307  (the user's input)

    def _error(self) -> None:
        kind, value = sys.exc_info()[:2]
        self._say("*** " + traceback.format_exception_only(kind, value)[-1].strip())

    def default(self, line: str) -> None:
        self.do_p(line)

    def do_p(self, arg: str) -> None:
        """p expression: print the expression's repr."""
        try:
            self._say(repr(self._evaluate(arg)))
        except Exception:  # noqa: BLE001  (reported as pdb reports it)
            self._error()

    def do_pp(self, arg: str) -> None:
        """pp expression: pretty-print the expression's value."""
        try:
            self._say(pprint.pformat(self._evaluate(arg)))
        except Exception:  # noqa: BLE001
            self._error()

    def _context(self, num_lines: int = 2) -> None:
        frame = self.frames[self.frame_index]
        lines = [f"> {frame.filename}({frame.lineno})"]
        if frame.offset is not None:
            for i, line in enumerate(frame.source):
                if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
                    lines.append(("->  " if i == frame.offset else "    ") + line)
        self._say("\n".join(lines))

    def do_up(self, arg: str) -> None:
        """u(p): move to the calling frame."""
        if self.frame_index == len(self.frames) - 1:
            self._say("At topmost frame.")
        else:
            self.frame_index += 1
        self._context()

    def do_down(self, arg: str) -> None:
        """d(own): move to the called frame."""
        if self.frame_index == 0:
            self._say("At bottommost frame.")
        else:
            self.frame_index -= 1
        self._context()

    def do_list(self, arg: str) -> None:
        """l(ist): the source around the current line."""
        self._context(num_lines=5)

    def do_where(self, arg: str) -> None:
        """w(here): the stack, most recent frame last ('bt' too)."""
        lines = ["Traceback:"]
        for frame in reversed(self.frames):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}')
            lines.append("    <no source>" if frame.offset is None
                         else "    " + frame.source[frame.offset].strip())
        self._say("\n".join(lines))

    def do_continue(self, arg: str) -> bool:
        """c(ont(inue)): continue the program."""
        return True

    def do_quit(self, arg: str) -> None:
        """q(uit) / exit: exit the program."""
        sys.exit(0)

    do_u = do_up
    do_d = do_down
    do_l = do_list
    do_w = do_bt = do_where
    do_c = do_cont = do_continue
    do_q = do_exit = do_EOF = do_quit

    def run(self) -> None:
        while True:
            try:
                self.cmdloop()
                return
            except KeyboardInterrupt:
                print("--KeyboardInterrupt--", file=sys.stdout)


_lock = threading.Lock()


def _is_user_frame(info: inspect.FrameInfo) -> bool:
    return not os.path.abspath(info.filename).startswith(_SPEC_DIR + os.sep)


def _split_locals(frames: list[DebuggerFrame]) -> tuple[list[Any], list[tuple[int, str]]]:
    """The traced locals of the frames (operands of the callback) and where
    each belongs (frame index, name)."""
    values: list[Any] = []
    where: list[tuple[int, str]] = []
    for k, frame in enumerate(frames):
        for name, value in frame.locals.items():
            if isinstance(value, Tracer):
                values.append(value)
                where.append((k, name))
    return values, where


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any) -> Any:
    """Stops the program here when it runs and enters the debugger, which
    reads commands (``kwargs`` go to it: ``stdin``/``stdout`` streams). With
    ``token``, returns it unchanged once the debugger continues."""
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    infos = inspect.stack()[1:]
    frames = [DebuggerFrame.of(i) for i in infos if not filter_frames or _is_user_frame(i)]
    if num_frames is not None:
        frames = frames[:num_frames]
    traced, where = _split_locals(frames)

    def enter(*values: Any) -> None:
        shown = [DebuggerFrame(f.filename, dict(f.locals), f.globals, f.source, f.lineno,
                               f.offset) for f in frames]
        for (k, name), v in zip(where, values):
            shown[k].locals[name] = v
        thread = None if threading.current_thread() is threading.main_thread() \
            else threading.get_ident()
        with _lock:
            CliDebugger(shown, thread, **kwargs).run()

    if token is None:
        debug_callback(enter, *traced, ordered=ordered)
        return None

    def enter_then_return(tok: Any, *values: Any) -> Any:
        enter(*values)
        return tok
    return pure_callback(enter_then_return, token, token, *traced)


__all__ = ["CliDebugger", "DebuggerFrame", "breakpoint"]
