"""Client encoder for the `alerts` PostgreSQL extension's bloom bitmaps
(hash format version 1), byte-identical to the server's `alerts_bloom`,
`alerts_mask` and `alerts_ulid_floor`, for databases where the extension
cannot be installed (managed PostgreSQL) or for applications that compute
bitmaps before they insert.

    >>> from alerts_bloom import bloom, mask
    >>> bloom({"team": "t1"}, bits=128)[:16]
    '0000000000000000'

`bloom` and `mask` return the bitmap as the text PostgreSQL prints for a
`bit(n)` value ('0101...'), to pass as a parameter cast to `bit(n)`.
Attributes and filters may be given parsed (dicts, lists, str, int,
float, Decimal, bool, None) or as JSON text. Give JSON text where numbers
must keep every digit: Python's float cannot hold 12345678901234567890.5
or 1e400, and the text form keeps them exactly as jsonb does.
"""
import json
import os
import struct
import time
from datetime import datetime, timezone
from decimal import Decimal

import xxhash

__all__ = ["FORMAT_VERSION", "WIDTHS", "AlertsBloomError", "bloom", "keys", "mask", "ulid", "ulid_floor"]

#: The hash format this encoder writes; `alerts_format_version()` on the server.
FORMAT_VERSION = 1
#: The bitmap widths a column may have: the 512-bit bitmap, or folded.
WIDTHS = (512, 256, 128)

_HASHES = 7
_BYTES = 64
# the deepest nesting the server's parser (serde_json) takes: a value
# nested in 128 containers is refused
_MAX_DEPTH = 127
# the widest number a jsonb numeric can hold, as canonical text
_MAX_NUMBER_CHARS = 131072 + 16383 + 2
_ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ULID_MAX_MS = (1 << 48) - 1
# tenant keys: one week of ULID time a bucket; ids without an uppercase
# ULID time share the last bucket
_WEEK_MS = 7 * 24 * 3600 * 1000
_NO_WEEK = (1 << 64) - 1


class AlertsBloomError(ValueError):
    """Input the server refuses too: the message names the problem and the fix."""


class _Number:
    """A JSON number kept as its text, so that no digit is lost."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


def _refuse_constant(name):
    raise AlertsBloomError(f"{name} is not a JSON number: JSON has no NaN or Infinity; store it as a string")


def _check_strings(v):
    """Every string in `v` (keys and values of objects already checked as
    they were built) is one jsonb can store."""
    if isinstance(v, str):
        _string_bytes(v)
    elif isinstance(v, list):
        for item in v:
            _check_strings(item)


def _pairs(pairs):
    """An object as jsonb keeps it: the last of repeated keys wins, but a
    repeated key's earlier value must be storable too (jsonb refuses the
    whole text otherwise)."""
    for k, v in pairs:
        _string_bytes(k)
        _check_strings(v)
    return dict(pairs)


def _parse(text, what):
    if isinstance(text, (bytes, bytearray)):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise AlertsBloomError(f"{what} is not valid UTF-8 ({e})") from None
    try:
        value = json.loads(text, parse_float=_Number, parse_int=_Number, parse_constant=_refuse_constant,
                           object_pairs_hook=_pairs)
        _check_strings(value)
        return value
    except RecursionError:
        raise AlertsBloomError(f"{what}: a nested value is too deep to index; "
                               "values nested more than 127 levels deep are not supported") from None
    except json.JSONDecodeError as e:
        raise AlertsBloomError(f"{what} is not valid JSON: {e}") from None


def _value(x, what):
    """Parsed input, with JSON text parsed and numbers kept as text."""
    return _parse(x, what) if isinstance(x, (str, bytes, bytearray)) else x


def _type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (_Number, int, float, Decimal)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, (list, tuple)):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _number_text(v):
    if isinstance(v, _Number):
        return v.text
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise AlertsBloomError(f"{v} is not a JSON number: JSON has no NaN or Infinity; store it as a string")
        return repr(v)
    if isinstance(v, Decimal):
        if not v.is_finite():
            raise AlertsBloomError(f"{v} is not a JSON number: JSON has no NaN or Infinity; store it as a string")
        return str(v)
    raise TypeError(v)


def canonical_number(text):
    """Canonical decimal text of a JSON number, as the server's
    `numeric_normalize`: no exponent, no leading zeros, no trailing zeros
    after the point, "0" for any zero. 1.50 -> 1.5, 1e2 -> 100, -0 -> 0."""
    s = text
    i, n = 0, len(s)
    neg = s.startswith("-")
    if neg:
        i = 1
    j = i
    while j < n and s[j].isdigit() and s[j].isascii():
        j += 1
    int_digits = s[i:j]
    if not int_digits:
        raise AlertsBloomError(f'"{text[:40]}" is not a JSON number')
    frac = ""
    if j < n and s[j] in ".":
        k = j + 1
        while k < n and s[k].isdigit() and s[k].isascii():
            k += 1
        frac = s[j + 1:k]
        if not frac:
            raise AlertsBloomError(f'"{text[:40]}" is not a JSON number')
        j = k
    exp = 0
    if j < n and s[j] in "eE":
        k = j + 1
        eneg = False
        if k < n and s[k] in "+-":
            eneg = s[k] == "-"
            k += 1
        e0 = k
        while k < n and s[k].isdigit() and s[k].isascii():
            k += 1
        if k == e0:
            raise AlertsBloomError(f'"{text[:40]}" is not a JSON number')
        exp = min(int(s[e0:k]) if k - e0 < 20 else 1 << 40, 1 << 40)
        if eneg:
            exp = -exp
        j = k
    if j != n:
        raise AlertsBloomError(f'"{text[:40]}" is not a JSON number')
    digits = int_digits + frac
    point = len(int_digits) + exp
    lead = len(digits) - len(digits.lstrip("0"))
    if lead == len(digits):
        return "0"
    sig = digits[lead:].rstrip("0")
    point -= lead
    width = 2 + (-point) + len(sig) if point <= 0 else max(point, len(sig)) + 1
    if width > _MAX_NUMBER_CHARS:
        raise AlertsBloomError(f"number {text[:40]} is out of the range Postgres jsonb can store; store it as a string")
    out = "-" if neg else ""
    if point <= 0:
        return out + "0." + "0" * (-point) + sig
    if point >= len(sig):
        return out + sig + "0" * (point - len(sig))
    return out + sig[:point] + "." + sig[point:]


def _string_bytes(s):
    if "\x00" in s:
        raise AlertsBloomError("a string holds \\u0000, which jsonb cannot store")
    try:
        return s.encode("utf-8")
    except UnicodeEncodeError:
        raise AlertsBloomError("a string holds a lone surrogate (an unpaired \\ud800-\\udfff), "
                               "which is not Unicode text and which jsonb refuses") from None


def _check_key(k):
    if not isinstance(k, str):
        raise AlertsBloomError(f"object keys must be strings, got {_type_name(k)}")
    return _string_bytes(k)


def _canonical_json(v, depth, out):
    """`v` at nesting `depth` (the containers around it, itself included
    when it is one)."""
    if isinstance(v, (list, tuple, dict)) and depth > _MAX_DEPTH:
        raise AlertsBloomError("a nested value is too deep to index; "
                               "values nested more than 127 levels deep are not supported; flatten the attribute")
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, (_Number, int, float, Decimal)):
        out.append(canonical_number(_number_text(v)))
    elif isinstance(v, str):
        _string_bytes(v)
        out.append(json.dumps(v, ensure_ascii=False))
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _canonical_json(item, depth + 1, out)
        out.append("]")
    elif isinstance(v, dict):
        keys = sorted(v, key=_check_key)
        out.append("{")
        for i, k in enumerate(keys):
            if i:
                out.append(",")
            out.append(json.dumps(k, ensure_ascii=False))
            out.append(":")
            _canonical_json(v[k], depth + 1, out)
        out.append("}")
    else:
        raise AlertsBloomError(f"a {type(v).__name__} is not a JSON value")


def _depth(v):
    """Nesting of containers in v (a scalar is 0)."""
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, (list, tuple)):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


def _encode(v):
    """(tag, value bytes) of one attribute value; None for null."""
    if v is None:
        return None
    if v is True or v is False:
        return b"b", b"true" if v else b"false"
    if isinstance(v, (_Number, int, float, Decimal)):
        return b"n", canonical_number(_number_text(v)).encode()
    if isinstance(v, str):
        return b"s", _string_bytes(v)
    if isinstance(v, (list, tuple, dict)):
        out = []
        _canonical_json(v, 1, out)
        return b"j", "".join(out).encode("utf-8")
    raise AlertsBloomError(f"a {type(v).__name__} is not a JSON value")


def _positions(k, tag, value):
    h = xxhash.xxh3_64_intdigest(tag + struct.pack(">I", len(k)) + k + value)
    return [(h >> (9 * i)) & 511 for i in range(_HASHES)]


def _set(bitmap, k, encoded):
    """Sets the bits of one element (`k`: the key's UTF-8 bytes)."""
    for p in _positions(k, *encoded):
        bitmap[p >> 3] |= 0x80 >> (p & 7)


def _text(bitmap, bits):
    if bits not in WIDTHS:
        raise AlertsBloomError(f"the bitmap width must be 512, 256 or 128, got {bits!r}")
    width = bits // 8
    folded = bytearray(width)
    for start in range(0, _BYTES, width):
        for i in range(width):
            folded[i] |= bitmap[start + i]
    return "".join(format(b, "08b") for b in folded)


def _object(v, what, fix):
    if not isinstance(v, dict):
        raise AlertsBloomError(f"{what} must be a JSON object, got a JSON {_type_name(v)}; {fix}")
    return v


def _elements(attrs):
    """(key bytes, tag, value bytes) of every element of an attributes
    object: a string or number one, an array one per item (null items
    none), null none, a nested object or array one opaque value."""
    attrs = _object(_value(attrs, "the attributes"), "alert attributes",
                    'store attributes as {"<attribute>": "<value>" or ["<value>", ...]}; use {} for none')
    out = []
    for key, v in attrs.items():
        k = _check_key(key)
        items = v if isinstance(v, (list, tuple)) else [v]
        for item in items:
            if isinstance(item, (dict, list, tuple)) and _depth(item) > _MAX_DEPTH:
                raise AlertsBloomError("a nested value is too deep to index; values nested more than "
                                       "127 levels deep are not supported; flatten the attribute")
            e = _encode(item)
            if e is not None:
                out.append((k, e[0], e[1]))
    return out


def bloom(attrs, bits=512):
    """The bitmap of an alert's attributes (a JSON object), as the text of a
    `bit(bits)` value: what the server's trigger and `alerts_bloom(attrs,
    bits)` store. A string or number is one element, an array one per item
    (null items none), null none, a nested object or array one opaque value.
    """
    if bits not in WIDTHS:
        raise AlertsBloomError(f"the bitmap width must be 512, 256 or 128, got {bits!r}")
    bitmap = bytearray(_BYTES)
    for k, tag, value in _elements(attrs):
        _set(bitmap, k, (tag, value))
    return _text(bitmap, bits)


def _week(id_bytes):
    """The week bucket of an id: its first 10 characters read as a ULID
    time when they are all uppercase Crockford base32, else _NO_WEEK."""
    if len(id_bytes) < 10:
        return _NO_WEEK
    ms = 0
    for b in id_bytes[:10]:
        d = _ULID_ALPHABET.find(chr(b))
        if d < 0:
            return _NO_WEEK
        ms = ms * 32 + d
    return ms // _WEEK_MS


def keys(organisation_id, id, attrs):
    """The tenant keys of a row, as the server's `alerts_keys(organisation_id,
    id, attrs)` computes them: each element of the attributes hashed with
    the tenant and the week of the row's ULID, as signed 64-bit integers,
    sorted and without duplicates. Store them in a `bigint[]` column with a
    GIN index (`array_ops`) to find a tenant's rare values without the
    extension (docs/managed-postgres.md)."""
    for name, v in (("organisation_id", organisation_id), ("id", id)):
        if not isinstance(v, str):
            raise AlertsBloomError(f"{name} must be a string (text), got {type(v).__name__}")
    tenant = _string_bytes(organisation_id)
    head = struct.pack(">I", len(tenant)) + tenant + struct.pack(">Q", _week(_string_bytes(id)))
    out = set()
    for k, tag, value in _elements(attrs):
        h = xxhash.xxh3_64_intdigest(head + tag + struct.pack(">I", len(k)) + k + value)
        out.add(h - (1 << 64) if h >= 1 << 63 else h)
    return sorted(out)


def mask(filter, bits=512):
    """The mask of a filter whose every attribute has one value (an AND of
    single values), as the text of a `bit(bits)` value: a row may match
    when `bitmap & mask = mask`; what the server's `alerts_mask(filter,
    bits)` returns. One-of arrays and nulls are refused, as there."""
    if bits not in WIDTHS:
        raise AlertsBloomError(f"the bitmap width must be 512, 256 or 128, got {bits!r}")
    f = _value(filter, "the filter")
    if isinstance(f, dict) and _depth(f) > _MAX_DEPTH:
        raise AlertsBloomError("a nested value is too deep to index; values nested more than "
                               "127 levels deep are not supported")
    f = _object(f, "the filter",
                'write filters as {"<attribute>": "<value>"}; {} matches every row')
    for key, v in f.items():
        _check_key(key)
        if isinstance(v, (list, tuple)):
            raise AlertsBloomError(f'the value of "{key[:60]}" is a one-of array, which one mask cannot '
                                   "express: build one mask per value and OR the tests")
        if v is None:
            raise AlertsBloomError(f'the filter value for "{key[:60]}" is null: drop the key to not filter on it')
    bitmap = bytearray(_BYTES)
    for key, v in f.items():
        _set(bitmap, _check_key(key), _encode(v))
    return _text(bitmap, bits)


def _unix_ms(ts):
    if isinstance(ts, datetime):
        if ts.tzinfo is None:
            raise AlertsBloomError("a naive datetime has no time zone: give an aware one (tzinfo=timezone.utc)")
        delta = ts - datetime(1970, 1, 1, tzinfo=timezone.utc)
        return (delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) // 1000
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return int(ts * 1000 // 1)  # seconds since 1970
    raise AlertsBloomError(f"a time is an aware datetime or Unix seconds, got {type(ts).__name__}")


def _ulid_text(ms, rand):
    v = (ms << 80) | rand
    return "".join(_ULID_ALPHABET[(v >> (5 * (25 - i))) & 31] for i in range(26))


def ulid_floor(ts):
    """The smallest ULID of the millisecond of `ts` (an aware datetime, or
    Unix seconds): `alerts_ulid_floor(ts)`, the window's lower bound. Times
    before 1970 give all zeros."""
    ms = _unix_ms(ts)
    if ms > _ULID_MAX_MS:
        raise AlertsBloomError("the time is after the last time a ULID can hold "
                               "(10889-08-02 05:31:50.655 UTC): pass an earlier one")
    return _ulid_text(max(ms, 0), 0)


def ulid(ts=None):
    """A new ULID (48-bit milliseconds, 80 random bits), as `alerts_ulid()`:
    the time of `ts`, or now."""
    ms = _unix_ms(ts) if ts is not None else time.time_ns() // 1_000_000
    if not 0 <= ms <= _ULID_MAX_MS:
        raise AlertsBloomError("a ULID holds times from 1970 to 10889-08-02")
    return _ulid_text(ms, int.from_bytes(os.urandom(10), "big"))
