"""The value heuristics of the credential rules, each rule of their docstrings on both sides:
what reads as a name, what looks generated, what a token body must hold."""

from __future__ import annotations

import pytest

from oharness.notes.secrets.values import (
    _is_code_reference,
    _is_identifier_like,
    _is_path_of_names,
    _is_punctuated_words,
    _is_word_with_punctuation,
    _looks_like_password,
    _looks_random,
    _plausible_token_body,
    _reads_as_camel_case,
    _reads_as_name,
    _segment_reads_as_words,
)


@pytest.mark.parametrize(
    "name",
    [
        "Socks4Response",  # words around a number
        "v1beta1",  # two digit runs are a version
        "k8s",  # a last run of one letter after digits
        "arm64be",  # ... or of two
        "html5lib",  # a three-letter word with a vowel after digits
        "AUTH_TOKEN_V2",  # a lone capital before digits numbers something
        "getV2Key",
        "V2",  # a one-letter first run
        "xCoordinate",
        "getAccessToken",  # runs of several letters inside
        "getOkValue",
        "Auth2FA",  # digits before an acronym, after a word
        "Web3API",  # an acronym without lower-case vowels
        "2FA",  # digits first
        "config.api_key",
        "P256",
    ],
)
def test_names_read_as_identifiers(name: str) -> None:
    assert _is_identifier_like(name)


@pytest.mark.parametrize(
    "value",
    [
        "Xk9mQ2vL",  # one-letter runs between others
        "_Xk9mQ2vL",  # a leading separator hides nothing
        "getAValue",  # a lone capital not followed by digits
        "ab$cd",  # not letters and digits
        "P2P",  # digits between two upper-case runs (base32)
        "JBSWY3DPEHPK",
        "otpJBSWY3DPEHPK",  # ... after a lower-case word too
        "a1b2",  # a run of one letter that is not last, after digits
        "ab1cdf",  # three letters after digits, no vowel
        "v1beta1alpha2",  # more than two digit runs
    ],
)
def test_generated_strings_are_not_identifiers(value: str) -> None:
    assert not _is_identifier_like(value)


@pytest.mark.parametrize(
    ("value", "min_length"),
    [
        ("Xk9#mQ2v", 8),  # exactly the minimum length
        ("Xk9#mQ2X", 8),  # 7 distinct of 8: 2.75 bits, over 0.8 * log2(8) = 2.4
        ("Xk9#mQ2vXk9#mQ2v", 8),  # exactly 3.0 bits: the threshold from 14 characters on
    ],
)
def test_generated_values_look_random(value: str, min_length: int) -> None:
    assert _looks_random(value, min_length)


@pytest.mark.parametrize(
    ("value", "min_length"),
    [
        ("Xk9#mQ2", 8),  # one character short
        ("Xk9#mQ2v Lp7!", 8),  # whitespace
        ("Xk9#mQ2véLp7!", 8),  # not ASCII
        ("Xk9#mQ2v\tLp7!", 8),  # not printable
        ("Xk9#mQ2v\\Lp7!", 8),  # a backslash: an escape sequence in code
        ("*(optional)*", 8),  # a word with punctuation
        ("Xk9#mQ2v-example", 8),  # a placeholder
        ("${SECRET_TOKEN}", 8),  # a template
        ("2024-01-15T10:30:00Z", 8),  # a date
        ("~/.ssh/Xk9#mQ2v", 8),  # a path
        ("Socks4Response", 8),  # a name
        ("Xk9#Xk9#Xk9#", 8),  # too little entropy for its length
    ],
)
def test_words_code_and_repetition_do_not_look_random(value: str, min_length: int) -> None:
    assert not _looks_random(value, min_length)


@pytest.mark.parametrize(
    ("body", "plausible"),
    [
        ("abcdefgh", False),  # one case of letters only: a word or a placeholder
        ("ABCDEFGH", False),
        ("12345678", False),  # digits only
        ("aB3dE5gH", True),
        ("abcd1234", True),
        ("AbcdEfgh", True),  # letters of both cases
    ],
)
def test_a_token_body_mixes_cases_or_letters_and_digits(body: str, plausible: bool) -> None:
    assert _plausible_token_body(body) is plausible


@pytest.mark.parametrize(
    "segment",
    [
        "User",
        "By",
        "Id",
        "UserId",
        "ssh",  # an abbreviation without a vowel is a whole piece
        "db",
        "HTTP",  # ... or a capital run of four letters at most
        "HTTP2",
        "getHTTPResponse",  # one capital run in a mixed-case piece
        "AIModel",  # "A" and "I" are words
        "iPhone",
        "utf8",  # short numbers at the end
        "x509",
        "sha256",
        "user1234",  # four digits, at the end
        "deadbeef",  # letters only: hex digits that spell a word are a word
        "healthcheck",  # five consonants in a row
        "strptime",
        "twelfths",
        "asynchronous",  # six counting "y"
        "encryption",
        "sqlite",
        "jsx",
        "heapq",
        "getUserName",  # eleven characters: up to one run for three of them
        "getAValue",  # "A" and "I" alone inside a piece are words
        "getIValue",
        "xA",  # a lone capital last, in a short piece
        "XbarfoM",  # ... in a piece of seven
        "9S",  # digits then one capital
        "getABCDE",  # a capital run of five
        "mySQL",  # a two-letter run starting with "y" ends a word here
    ],
)
def test_pieces_of_names_read_as_words(segment: str) -> None:
    assert _segment_reads_as_words(segment)


@pytest.mark.parametrize(
    "segment",
    [
        "a616aefec72020",  # hex
        "a616aef1",  # eight hex digits are enough
        "IUiTeNUJ",  # many short runs and capital runs
        "HHXucuvi5SMPEAny",
        "aBcDeFgHiJkL",
        "JBSWY3DPEHPK",  # digits between capitals (base32)
        "6WFFY",  # digits before a capital run
        "FWybmuffirpM",  # a capital left alone at the end of a long piece
        "ab1234cd",  # four digits before letters
        "HTTPS",  # a vowel-less capital run of five letters
        "getHTTPSX",  # a capital run of six
        "getHTTPAPI",  # two capital runs
        "rhythms",  # seven consonants counting "y"
        "bjx",  # a letter pair no word holds
        "jx",  # ... even as a run of two
        "abcdef12",  # eight hex digits with a digit
        "user123x",  # three digits then a lone letter: too many runs for eight characters
        "UserNameIdKey",  # thirteen characters: up to one run for three and a half
        "userIDuserID",  # twelve characters, four runs
        "user1234x",  # four digits before the end
        "AIORDRBU583E51",  # digits inside an all-capital piece
        "2WE",  # digits before a capital run
        "42OKAbget",
        "0ls",  # digits before a vowel-less run
        "XbarfooM",  # a lone capital at the end of a piece of eight
        "7OKgetsky",
        "getXValue",  # a lone letter inside that is neither "A" nor "I"
        "getHTTPResponseOK",  # two capital runs
        "xIDHTTP",  # a capital run of six
        "Yo5",  # "yo" is no word inside a piece
    ],
)
def test_generated_pieces_do_not(segment: str) -> None:
    assert not _segment_reads_as_words(segment)


@pytest.mark.parametrize(
    ("piece", "camel"),
    [
        ("Phone", True),
        ("is", True),
        ("OS", True),  # one acronym of two to five capitals
        ("isOSReady", True),
        ("iPhone", True),  # a lone lower-case letter first
        ("xPhone", True),
        ("XPhone", False),  # ... but not a lone capital
        ("getA", False),  # a one-letter acronym
        ("getABCDEF", False),  # an acronym of six
        ("ABCDEF", False),
        ("getOSAPI", True),  # OSAPI: one run of five
        ("emhnuiDy", False),
        ("getOSAndIO", False),  # two acronyms
        ("getAll", True),  # a capital and two letters make a word
        ("Eh", False),  # a capital and one letter do not
    ],
)
def test_camel_case_words(piece: str, camel: bool) -> None:
    assert _reads_as_camel_case(piece) is camel


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("Hello!!", True),
        ("iPhone-only", True),
        ("isOSReady!", True),
        ("NOTICE!", True),  # a capital piece of any length
        ("Kc_", True),
        ("hello", False),  # no punctuation
        ("emhnuiDy.", False),  # a piece that is no camelCase
        ("isAValue!", False),
        ("!KpdaL", False),
        ("ysze^HQ_?zca", False),  # a symbol that joins nothing
    ],
)
def test_punctuated_words(value: str, words: bool) -> None:
    assert _is_punctuated_words(value) is words


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("Hello!!", True),  # one case, or a capital initial
        ("HELLO-x", True),
        ("Ab-c", True),
        ("hELLO", True),  # camelCase runs of 2.5 letters on average
        ("isAValue", True),
        ("HeLLo", False),  # runs of one or two letters
        ("aB", False),
        ("a-B", False),
        ("Xk#mQ$vLp!", False),
        ("x", True),
        ("hello2", False),  # a digit
    ],
)
def test_words_with_punctuation(value: str, words: bool) -> None:
    assert _is_word_with_punctuation(value) is words


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("&defaults", True),  # a YAML anchor: a sigil and a name
        ("!vault", True),
        ("!Xk9mQ2vL", False),  # ... not a generated string
        ("ab{{cd", True),  # a template inside a value, found by any one of its marks
        ("ab}}cd", True),
        ("user:$FROM_EMAIL", True),
        ("x=fn(y)", True),
        ("Xk9#mQ2vLp", False),
    ],
)
def test_code_references(value: str, code: bool) -> None:
    assert _is_code_reference(value) is code


@pytest.mark.parametrize(
    ("value", "password"),
    [
        ("Xk9#mQ2v", True),
        ("aabbccdd", True),  # exactly 2 bits per character
        ("aabbccdc", False),  # just under
        ("Xk9 mQ2v", False),  # a space
        ("Xk9#mQ2v\\x", False),  # a backslash: an escape sequence in code
        ("Xk9#mQ2\tv", False),  # not printable
        ("Xk9#méQ2v", False),  # not ASCII
        ("8302917465", False),  # digits count only for a password key
    ],
)
def test_a_value_given_to_a_credential_key(value: str, password: bool) -> None:
    assert _looks_like_password(value, 8) is password


def test_ten_digits_are_a_password_only_for_a_password_key() -> None:
    assert _looks_like_password("8302917465", 8, digits=True)
    assert not _looks_like_password("1234567890", 8, digits=True)  # counting up


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("C:\\Users\\k9Xq", True),  # a drive letter: a Windows path
        ("./secrets/db", True),
        ("../secrets/db", True),
        ("~/.pgpass", True),
        ("./:\\Xk9", False),  # a colon and backslash past the drive letter's place
        ("/XXk9/db", False),  # a piece that is no name
    ],
)
def test_paths_of_names(value: str, path: bool) -> None:
    assert _is_path_of_names(value) is path


def test_a_name_holds_two_numbers_at_most() -> None:
    assert _reads_as_name("api1_key2")
    assert not _reads_as_name("api1_key2_v3")
