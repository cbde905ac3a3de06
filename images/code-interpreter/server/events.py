"""The lines of an /execute answer: one JSON object a line, as the code-interpreter SDKs parse them.

Each line has a "type": stdout and stderr (text, timestamp), result (the representations of one value, below),
error (name, value, traceback), number_of_executions (execution_count), keepalive (ignored by the SDKs; it makes
the server write, so that a vanished client is noticed) and end_of_execution (the last line).
"""
import datetime
import json

# Jupyter MIME types and the result fields the SDKs read them from. Anything else goes into "extra".
MIME_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "application/vnd.hutch.data+json": "data",
    "application/vnd.hutch.chart+json": "chart",
}


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def stream(name, text):
    return {"type": name, "text": text, "timestamp": _now()}


def error(name, value, traceback):
    return {"type": "error", "name": name, "value": value, "traceback": traceback}


def count(n):
    return {"type": "number_of_executions", "execution_count": n}


def keepalive():
    return {"type": "keepalive"}


def end():
    return {"type": "end_of_execution"}


def unquote(text):
    """A string's repr shows as the string itself: 'bar' reads as bar, which is what clients compare against."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def result(bundle, is_main):
    """A result line from a Jupyter MIME bundle (display_data or execute_result)."""
    out = {"type": "result", "is_main_result": bool(is_main)}
    extra = {}
    for mime, value in bundle.items():
        field = MIME_FIELDS.get(mime)
        if field is None:
            extra[mime] = value
        elif field == "text":
            out["text"] = unquote(value)
        else:
            out[field] = value
    out["extra"] = extra
    return out


def encode(event):
    return (json.dumps(event, ensure_ascii=False, default=str) + "\n").encode()
