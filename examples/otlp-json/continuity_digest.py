#!/usr/bin/env python3
"""Decision digests for agent-continuity, in Python with the standard library only.

digest(value) == digestValue(value) of the Node package: normalizer v1 (every string, keys
included, to Unicode NFC; then RFC 8785 canonical JSON), SHA-256 over the UTF-8 bytes, as
"sha256:<64 hex>". test/examples/otlp-json.test.ts runs this file against the project's golden
vectors and against digestValue(), so the two cannot drift apart unnoticed.

    python3 continuity_digest.py '"fix/ledger-lock"'    # prints the digest of a JSON value

Numbers are digested as JavaScript sees them (every number an IEEE 754 double), so 1, 1.0 and
1e0 give one digest. Values JSON cannot carry (NaN, infinities, lone surrogates, two keys equal
after NFC, other types) raise ValueError instead of giving a digest.
"""
import hashlib
import json
import math
import re
import sys
import unicodedata

__all__ = ["canonical", "digest"]


def _number(x):
    """ECMAScript Number::toString (RFC 8785 section 3.2.2.3) from Python's shortest digits."""
    if math.isnan(x) or math.isinf(x):
        raise ValueError("not a JSON number: NaN or infinity")
    if x == 0:
        return "0"  # -0 too
    if x < 0:
        return "-" + _number(-x)
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?", repr(x))
    whole, frac, exp = m.group(1), m.group(2) or "", int(m.group(3) or 0)
    digits = (whole + frac).lstrip("0")
    s = digits.rstrip("0")
    k = len(s)
    n = exp - len(frac) + (len(digits) - k) + k  # x = 0.s * 10**n
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + s
    e = n - 1
    return (s if k == 1 else s[0] + "." + s[1:]) + ("e+" if e >= 0 else "e-") + str(abs(e))


def _string(s):
    if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
        raise ValueError("a string with a lone surrogate is not JSON")
    # json.dumps escapes exactly what RFC 8785 section 3.2.2.2 prescribes.
    return json.dumps(unicodedata.normalize("NFC", s), ensure_ascii=False)


def canonical(value):
    """The normalizer v1 text of a JSON value (dict, list, str, int, float, bool, None)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        try:
            return _number(float(value))
        except OverflowError:
            raise ValueError("integer too large for a JSON number") from None
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if isinstance(value, dict):
        members = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise ValueError("object keys must be strings")
            nfc = unicodedata.normalize("NFC", key)
            _string(key)  # refuses lone surrogates
            if nfc in members:
                raise ValueError("two keys are equal after NFC")
            members[nfc] = v
        # RFC 8785 section 3.2.3: keys sorted by UTF-16 code units, not code points.
        keys = sorted(members, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(_string(k) + ":" + canonical(members[k]) for k in keys) + "}"
    raise ValueError(f"not a JSON value: {type(value).__name__}")


def digest(value):
    """The plain digest of a decision value: "sha256:" + hex SHA-256 of canonical(value)."""
    return "sha256:" + hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: continuity_digest.py JSON-VALUE")
    print(digest(json.loads(sys.argv[1])))
