"""How the file tools read and write text: encodings, byte order marks and line endings.

Reading (``decode_file``):

- a byte order mark decides: UTF-8 (``EF BB BF``), UTF-16 LE/BE, UTF-32 LE/BE. The mark is not
  part of the text and is written back unchanged;
- without a mark, a NUL byte in the first 8192 bytes means binary (``None``); anything else is
  UTF-8, and bytes that are not UTF-8 are kept as ``surrogateescape`` code points (``exact``
  is then false): the file is in some other encoding (Latin-1, Shift_JIS, ...), unknown to us.

Writing back an edit (``encode_edit``) never mixes two encodings: a file with a mark is written
in its own encoding with the same mark; a UTF-8 file as UTF-8; a file that is not UTF-8 only
when the edit is ASCII on both sides and does not start right after a non-UTF-8 byte (which could
be the first byte of a two-byte character): its other bytes are written back as they were.
Anything else is refused with an ``EncodingProblem`` whose text names the problem.

Line endings (``normalise_edit``): on a file whose line breaks are all CRLF (or all LF), both
``old_text`` and ``new_text`` are normalised and written with the file's own line ending, so CRLF
never turns into CR CR LF; a file with mixed endings is matched as it is.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from .._capture import is_binary
from .._text import undecodable_replaced

__all__ = [
    "TextFile",
    "EncodingProblem",
    "sniff_encoding",
    "decode_file",
    "encode_edit",
    "display_text",
    "normalise_edit",
]

_MARKS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


class EncodingProblem(ValueError):
    """An edit that cannot be written in the file's encoding; the text is for the model."""


@dataclass(frozen=True, slots=True)
class TextFile:
    """A text file's content and how it was stored.

    Args:
        text: the content without the byte order mark; bytes that are not valid in ``codec``
            are ``surrogateescape`` code points (UTF-8) or U+FFFD (UTF-16/32).
        codec: ``"utf-8"``, ``"utf-16-le"``, ``"utf-16-be"``, ``"utf-32-le"`` or ``"utf-32-be"``.
        mark: the byte order mark (``b""`` for none).
        exact: whether every byte decoded in ``codec``.
    """

    text: str
    codec: str
    mark: bytes
    exact: bool

    def describe(self) -> str:
        """The encoding as shown to the model, e.g. ``UTF-16-LE with a byte order mark``."""
        name = self.codec.upper()
        return f"{name} with a byte order mark" if self.mark else name


def sniff_encoding(start: bytes) -> tuple[str, bytes] | None:
    """``(codec, mark)`` of a file from its first bytes (at least ``BINARY_SNIFF_BYTES`` when it
    is that long), or ``None`` when it is binary (module docstring)."""
    for mark, codec in _MARKS:
        if start.startswith(mark):
            return codec, mark
    return None if is_binary(start) else ("utf-8", b"")


def decode_file(data: bytes) -> TextFile | None:
    """Decode a file's bytes (module docstring); ``None`` when it is binary."""
    for mark, codec in _MARKS:
        if data.startswith(mark):
            body = data[len(mark) :]
            try:
                return TextFile(body.decode(codec), codec, mark, True)
            except UnicodeDecodeError:
                return TextFile(body.decode(codec, errors="replace"), codec, mark, False)
    if is_binary(data):
        return None
    try:
        return TextFile(data.decode("utf-8"), "utf-8", b"", True)
    except UnicodeDecodeError:
        return TextFile(data.decode("utf-8", errors="surrogateescape"), "utf-8", b"", False)


def display_text(file: TextFile) -> str:
    """The text shown to the model: bytes that are not UTF-8 replaced by U+FFFD."""
    if file.exact or file.codec != "utf-8":
        return file.text
    return undecodable_replaced(file.text)


def _first_bad_byte(text: str) -> str:
    index = next(i for i, char in enumerate(text) if "\udc80" <= char <= "\udcff")
    offset = len(text[:index].encode("utf-8", "surrogateescape"))
    return f"byte 0x{ord(text[index]) - 0xDC00:02X} at offset {offset}"


def encode_edit(file: TextFile, updated: str, old_text: str, new_text: str, index: int) -> bytes:
    """Encode the edited text ``updated`` (``old_text`` replaced by ``new_text`` at ``index``).

    Returns:
        The bytes to write: the mark, then the text in the file's own encoding.

    Raises:
        EncodingProblem: the edit cannot be written without mixing encodings or losing
            characters (module docstring).
    """
    if not file.exact and file.codec != "utf-8":
        raise EncodingProblem(
            f"the file is not valid {file.describe()}; edit_file will not rewrite it "
            "(rewrite it whole with write_file, or repair it with a command)"
        )
    if file.codec != "utf-8" or file.exact:
        try:
            return file.mark + updated.encode(file.codec)
        except UnicodeEncodeError:
            raise EncodingProblem(
                f"new_text contains characters that cannot be written as {file.describe()} "
                "(e.g. a lone surrogate)"
            ) from None
    ascii_edit = old_text.isascii() and new_text.isascii()
    after_bad = index > 0 and "\udc80" <= updated[index - 1] <= "\udcff"
    if not ascii_edit or after_bad:
        raise EncodingProblem(
            f"the file is not UTF-8 ({_first_bad_byte(file.text)}): it is in another encoding "
            "(Latin-1, Shift_JIS, ...), and this edit would write UTF-8 into it, mixing two "
            "encodings. Only edits of ASCII text are made in such a file; convert the file to "
            "UTF-8 first (e.g. iconv with run_command), or rewrite it whole with write_file"
        )
    return updated.encode("utf-8", "surrogateescape")


def _line_ending(text: str) -> str | None:
    """``"\\r\\n"`` or ``"\\n"`` when every line break of ``text`` is that one, else ``None``."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    if crlf and not lf:
        return "\r\n"
    if lf and not crlf:
        return "\n"
    return None


def normalise_edit(text: str, old_text: str, new_text: str) -> tuple[str, str]:
    """``old_text`` and ``new_text`` with the line ending of ``text`` (module docstring)."""
    ending = _line_ending(text)
    if ending is None:
        return old_text, new_text
    old = old_text.replace("\r\n", "\n")
    new = new_text.replace("\r\n", "\n")
    if ending == "\r\n":
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    return old, new
