"""The shared text helpers: one shortening marker, one redaction, surrogates, one version source."""

from __future__ import annotations

import configparser
import importlib.metadata
import re
from pathlib import Path

import pytest

import miniagent
from miniagent._redaction import redact, redactor
from miniagent._text import cap, omission_note, replace_surrogates, shorten, utf8
from miniagent.providers._errors import truncate

MARKER = re.compile(r"\[\.\.\. (\d+) characters left out \.\.\.\]")


@pytest.mark.parametrize("size", [0, 10, 60, 61, 1000])
def test_shorten_keeps_the_head_with_the_one_marker_and_an_exact_count(size: int) -> None:
    text = "".join(chr(65 + i % 26) for i in range(size))
    shortened = shorten(text, 60)
    assert len(shortened) <= 60
    if size <= 60:
        assert shortened == text
        return
    head, _, note = shortened.partition(" ")
    match = MARKER.fullmatch(note)
    assert match and text.startswith(head)
    assert len(head) + int(match.group(1)) == size


def test_every_shortening_uses_the_same_marker() -> None:
    text = "x" * 5000
    assert MARKER.search(cap(text, 300))
    assert MARKER.search(shorten(text, 300))
    assert MARKER.search(truncate(text, 300))  # provider error texts
    assert omission_note(7) == "[... 7 characters left out ...]"


def test_redaction_hides_longest_values_first_and_header_credentials() -> None:
    assert redactor(["abcdefgh", "abcdefghijkl"])("x abcdefghijkl y abcdefgh") == "x *** y ***"
    assert redactor([])("same") == "same"
    text = redact('key sk-123456789 and Authorization: Bearer tok-9 and "x-api-key": "k-1"', ["sk-123456789"])
    assert "sk-123456789" not in text and "tok-9" not in text and "k-1" not in text


def test_lone_surrogates_have_one_replacement() -> None:
    assert replace_surrogates("a\ud800b\udcffc") == "a\ufffdb\ufffdc"
    assert utf8("é\udc80") == "é\ufffd".encode()
    assert utf8("plain") == b"plain"


def test_the_package_version_has_one_source() -> None:
    setup = configparser.ConfigParser()
    setup.read(Path(__file__).parents[2] / "setup.cfg")
    assert setup["metadata"]["version"] == "attr: miniagent.__version__"
    assert importlib.metadata.version("miniagent") == miniagent.__version__


def test_a_hidden_query_keeps_the_punctuation_after_the_url() -> None:
    # Found by a new user: "...?*** redirects are not followed" lost the "; " after the URL.
    from miniagent._redaction import hide_url_secrets

    assert hide_url_secrets("to http://h/v1?token=s; then") == "to http://h/v1?***; then"
    assert hide_url_secrets("(http://h/?a=1&b=2).") == "(http://h/?***)."
    assert hide_url_secrets("http://h/?a=1;b=2 x") == "http://h/?*** x"
    assert hide_url_secrets("at http://h/?k=v") == "at http://h/?***"
