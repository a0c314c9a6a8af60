# The Python side of a `once` evaluator. `once` runs this with `python3 -c` and talks to it over
# file descriptor 3 (a socket pair): one JSON request per line in, one JSON reply per line out.
# Where a descriptor cannot be inherited (Windows), ONCE_EVAL_CHANNEL names a loopback port and a
# token instead: the adapter connects, proves itself with the token, and removes the variable.
# Evaluated code never sees that descriptor through sys.stdout or sys.stderr, which are swapped
# for per-evaluation buffers, so nothing it prints can corrupt the protocol. Before each reply a
# marker goes to file descriptor 1, so `once` can cut output written straight to the descriptors
# (by subprocesses, C extensions) at the end of the evaluation that produced it.
# While code runs, what it prints is also sent as {"id", "output"} lines (the latest few KB, at
# most every 100 ms, from a thread of its own), so `once` can show progress; the reply still
# carries the whole output.
import ast
import json
import linecache
import os
import signal
import socket
import sys
import threading
import time
import traceback

MARKER = b"\x1eonce-eval-end\x1e"
# Most characters of output one progress line carries, and how often one may be sent.
PROGRESS_CHARS = 2048
PROGRESS_EVERY = 0.1


class Progress:
    """Output of the evaluation in flight, sent to `once` by a thread of its own.

    Every write to the channel, replies included, holds `lock`, so a progress line never splits
    a reply. The sending thread is never interrupted: SIGINT goes to the main thread only."""

    def __init__(self, channel):
        self.channel = channel
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.id = None
        self.pending = ""
        self.last = 0.0
        threading.Thread(target=self.run, daemon=True).start()

    def start(self, number):
        with self.lock:
            self.id, self.pending = number, ""

    def add(self, text):
        with self.lock:
            if self.id is None:
                return
            self.pending = (self.pending + text)[-PROGRESS_CHARS:]
            self.wake.notify()

    def send_reply(self, line):
        with self.lock:
            self.id, self.pending = None, ""
            self.channel.sendall(line)

    def run(self):
        with self.lock:
            while True:
                if not self.pending:
                    self.wake.wait()
                    continue
                left = self.last + PROGRESS_EVERY - time.monotonic()
                if left > 0:
                    self.wake.wait(left)
                    continue
                line = json.dumps({"id": self.id, "output": self.pending})
                self.pending = ""
                self.last = time.monotonic()
                try:
                    self.channel.sendall(line.encode("utf-8", "surrogatepass") + b"\n")
                except OSError:
                    return


class Capture:
    """A text stream that keeps the first `cap` characters written to it."""

    def __init__(self, cap, progress=None):
        self.progress = progress
        self.parts = []
        self.size = 0
        self.cap = cap
        self.dropped = 0

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError("write() argument must be str, not " + type(text).__name__)
        room = self.cap - self.size
        if room > 0:
            kept = text[:room]
            self.parts.append(kept)
            self.size += len(kept)
        self.dropped += max(0, len(text) - max(room, 0))
        if self.progress is not None:
            self.progress.add(text)
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False

    def text(self):
        text = "".join(self.parts)
        if self.dropped:
            text += "\n[once: %d more characters not kept]\n" % self.dropped
        return text


class Evaluating:
    """Whether an evaluation runs: an interrupt between evaluations must change nothing."""

    active = False


def on_interrupt(signum, frame):
    # Raise only inside evaluated code; a late interrupt that arrives while the adapter talks to
    # `once` is dropped, so it can never break a reply or the next request.
    if Evaluating.active:
        raise KeyboardInterrupt


# The file name of this adapter's own code (`<string>` under `python3 -c`).
ADAPTER_FILE = sys._getframe().f_code.co_filename


def format_error(error):
    # Hide the adapter's own frames (the caller, the interrupt handler): the traceback shows
    # only the evaluated code.
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename != ADAPTER_FILE
    ]
    lines = ["Traceback (most recent call last):\n"] + traceback.format_list(frames) if frames else []
    return "".join(lines + traceback.format_exception_only(type(error), error))


def evaluate(request, namespace, progress):
    number = request["id"]
    code = request["code"]
    cap = request.get("cap", 1 << 20)
    filename = "<eval-%d>" % number
    out, err = Capture(cap, progress), Capture(cap, progress)
    reply = {"id": number, "status": "ok", "value": None, "error": None}
    saved = sys.stdout, sys.stderr
    try:
        try:
            tree = ast.parse(code, filename, "exec")
        except SyntaxError as error:
            reply["status"] = "error"
            reply["error"] = "".join(traceback.format_exception_only(type(error), error))
            return reply, out, err
        tail = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            tail = compile(ast.Expression(tree.body.pop().value), filename, "eval")
        body = compile(tree, filename, "exec")
        # Tracebacks read source lines from linecache; keep this evaluation's text there.
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        sys.stdout, sys.stderr = out, err
        signal.signal(signal.SIGINT, on_interrupt)
        Evaluating.active = True
        try:
            exec(body, namespace)
            if tail is not None:
                value = eval(tail, namespace)
                if value is not None:
                    namespace["_"] = value
                    reply["value"] = repr(value)
        finally:
            Evaluating.active = False
    except KeyboardInterrupt as error:
        reply["status"] = "interrupted"
        reply["error"] = format_error(error)
    except BaseException as error:  # SystemExit too: the evaluator must outlive `exit()`
        reply["status"] = "error"
        reply["error"] = format_error(error)
    finally:
        sys.stdout, sys.stderr = saved
    return reply, out, err


def connect():
    """The private channel: descriptor 3, or the loopback port ONCE_EVAL_CHANNEL names."""
    address = os.environ.pop("ONCE_EVAL_CHANNEL", None)
    if address is None:
        return socket.socket(fileno=3)
    port, token = address.split(" ", 1)
    channel = socket.create_connection(("127.0.0.1", int(port)))
    channel.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    channel.sendall(token.encode("ascii") + b"\n")
    return channel


def main():
    channel = connect()
    requests = channel.makefile("rb")
    signal.signal(signal.SIGINT, on_interrupt)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    progress = Progress(channel)
    for line in requests:
        request = json.loads(line)
        progress.start(request["id"])
        reply, out, err = evaluate(request, namespace, progress)
        reply["stdout"] = out.text()
        reply["stderr"] = err.text()
        try:
            os.write(1, MARKER)
            reply["marker"] = True
        except OSError:
            # The evaluated code closed or redirected descriptor 1: tell `once` not to wait.
            reply["marker"] = False
        progress.send_reply(json.dumps(reply).encode("utf-8", "surrogatepass") + b"\n")


main()
