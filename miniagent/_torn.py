"""Is this last line of a session file provably a cut-off session line?

A session line is written as compact JSON (no whitespace outside strings, control characters
escaped, UTF-8) and always begins ``{"role":"R","content":"`` with R one of the three roles. A crash
in the middle of its ``write`` leaves a prefix of such a line without its newline. Only such a
prefix may be dropped and cut off; anything else (a settings file, notes, a line with extra data
after a complete object) is not ours and is refused untouched.

The check is iterative (a regex tokenizer and an explicit stack), so a tail nested 5,000 deep is
decided without recursion.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["is_cut_session_line", "LINE_HEADERS"]

# How every line ``message_to_json`` + ``json_utf8`` produce begins (a test keeps this true).
LINE_HEADERS = tuple(b'{"role":"%s","content":"' % role for role in (b"user", b"assistant", b"tool"))

_STRING = rb'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
_NUMBER = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# json.dumps writes these for floats (allow_nan=True is its default).
_LITERALS = (b"true", b"false", b"null", b"NaN", b"Infinity", b"-Infinity")
_SCALAR = b"(?:" + _NUMBER + b"|" + b"|".join(_LITERALS) + b")"
_END = rb"(?=[,\]}])"  # what follows a number or literal inside a container in compact JSON
_TOKEN = re.compile(
    b"(?P<string>" + _STRING + b")|(?P<scalar>" + _SCALAR + _END + rb")|(?P<punct>[{}\[\]:,])"
)
# What a cut may leave of the last token: part of a string, a number or a literal.
_CUT_STRING = re.compile(_STRING[:-1] + rb"(?:\\(?:u[0-9a-fA-F]{0,3})?)?\Z")
_CUT_LITERALS = sorted({word[:n] for word in _LITERALS for n in range(1, len(word) + 1)})
_CUT_SCALAR = re.compile(
    rb"(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?|"
    + b"|".join(re.escape(cut) for cut in _CUT_LITERALS)
    + rb")\Z"
)

# Parser states: what may come next.
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _COMMA_OR_CLOSE = range(6)


def is_cut_session_line(tail: bytes) -> bool:
    """Whether ``tail`` (a last line without its newline) is a strict prefix of a session line.

    True when it is a prefix of (or begins with) one of ``LINE_HEADERS``, is UTF-8 up to a
    character cut at its very end, and is a prefix of one compact JSON object that has not ended.
    """
    if not tail or not any(tail[: len(h)] == h[: len(tail)] for h in LINE_HEADERS):
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(tail, final=False)
    except UnicodeDecodeError:
        return False
    return _is_open_json_prefix(tail)


def _is_open_json_prefix(data: bytes) -> bool:
    """A prefix of compact JSON whose outermost value (an object) is still open at the end."""
    stack: list[bytes] = []
    state = _VALUE
    pos, size = 0, len(data)
    while pos < size:
        token = _TOKEN.match(data, pos)
        if token is None:
            return _cut_token_fits(data[pos:], state)
        pos = token.end()
        kind = token.lastgroup
        if kind == "punct":
            state = _punctuation(token.group(), state, stack)
            if state < 0:
                return False
            if not stack:
                return False  # the object closed: a whole value, not a cut one
        elif state in (_VALUE, _VALUE_OR_CLOSE) and stack:
            state = _COMMA_OR_CLOSE
        elif kind == "string" and state in (_KEY, _KEY_OR_CLOSE):
            state = _COLON
        else:
            return False
    return True


def _punctuation(char: bytes, state: int, stack: list[bytes]) -> int:
    """The state after one of ``{}[]:,``, or -1 when it cannot come here."""
    if char in b"{[" and state in (_VALUE, _VALUE_OR_CLOSE):
        if char == b"[" and not stack:
            return -1  # a session line is an object
        stack.append(char)
        return _KEY_OR_CLOSE if char == b"{" else _VALUE_OR_CLOSE
    if char == b":" and state == _COLON:
        return _VALUE
    if char == b"," and state == _COMMA_OR_CLOSE:
        return _KEY if stack[-1] == b"{" else _VALUE
    if char in b"}]" and stack:
        opener = b"{" if char == b"}" else b"["
        closes_empty = state == (_KEY_OR_CLOSE if char == b"}" else _VALUE_OR_CLOSE)
        if stack[-1] == opener and (state == _COMMA_OR_CLOSE or closes_empty):
            stack.pop()
            return _COMMA_OR_CLOSE
    return -1


def _cut_token_fits(rest: bytes, state: int) -> bool:
    """The unfinished last token: a cut string where a key or value may stand, a cut number or
    literal where a value may stand."""
    if _CUT_STRING.match(rest):
        return state in (_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE)
    return state in (_VALUE, _VALUE_OR_CLOSE) and _CUT_SCALAR.match(rest) is not None
