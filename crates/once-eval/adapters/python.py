# The Python side of a `once` evaluator. `once` runs this with `python3 -c` and talks to it over
# file descriptor 3 (a socket pair): one JSON request per line in, one JSON reply per line out.
# Evaluated code never sees that descriptor through sys.stdout or sys.stderr, which are swapped
# for per-evaluation buffers, so nothing it prints can corrupt the protocol. Before each reply a
# marker goes to file descriptor 1, so `once` can cut output written straight to the descriptors
# (by subprocesses, C extensions) at the end of the evaluation that produced it.
import ast
import json
import linecache
import os
import signal
import socket
import sys
import traceback

MARKER = b"\x1eonce-eval-end\x1e"


class Capture:
    """A text stream that keeps the first `cap` characters written to it."""

    def __init__(self, cap):
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


def evaluate(request, namespace):
    number = request["id"]
    code = request["code"]
    cap = request.get("cap", 1 << 20)
    filename = "<eval-%d>" % number
    out, err = Capture(cap), Capture(cap)
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


def main():
    channel = socket.socket(fileno=3)
    requests = channel.makefile("rb")
    signal.signal(signal.SIGINT, on_interrupt)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    for line in requests:
        request = json.loads(line)
        reply, out, err = evaluate(request, namespace)
        reply["stdout"] = out.text()
        reply["stderr"] = err.text()
        try:
            os.write(1, MARKER)
            reply["marker"] = True
        except OSError:
            # The evaluated code closed or redirected descriptor 1: tell `once` not to wait.
            reply["marker"] = False
        channel.sendall(json.dumps(reply).encode("utf-8", "surrogatepass") + b"\n")


main()
