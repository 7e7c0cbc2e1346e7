#!/usr/bin/env python3
"""Writes the golden vectors in test/vectors/ from first principles, without the TypeScript code.

An independent implementation of normalizer v1 (Unicode NFC on every string, keys included,
then RFC 8785 canonical JSON) and of the digest formats, so the vectors can catch a bug in the
code under test instead of repeating it:

- numbers: ECMAScript Number::toString (ECMA-262 7.1.12.1) laid out from Python's shortest
  round-trip digits (repr), which pick the same digits ECMAScript requires;
- strings: json.dumps(ensure_ascii=False), whose escapes (\\b \\t \\n \\f \\r, \\u00xx for other
  controls, \\" and \\\\) are the ones RFC 8785 section 3.2.2.2 prescribes;
- keys: sorted by UTF-16 code units (RFC 8785 section 3.2.3);
- digests: hashlib / hmac over the UTF-8 bytes of the canonical text.

The RFC 8785 examples (section 3.2.2 sample, section 3.2.3 sorting, Appendix B numbers) are
copied from the RFC with their published results; this script checks that its own
implementation reproduces them before writing anything.

Run: python3 test/vectors/generate.py   (rewrites the three JSON files next to it)
"""
import hashlib
import hmac
import json
import math
import os
import re
import struct
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))


class Rejected(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


def es_number(x):
    """ECMAScript Number::toString for a finite double."""
    if math.isnan(x) or math.isinf(x):
        raise Rejected("non_finite_number")
    if x == 0:
        return "0"  # also -0: RFC 8785 section 3.2.2.3
    if x < 0:
        return "-" + es_number(-x)
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?", repr(x))
    int_part, frac, exp = m.group(1), m.group(2) or "", int(m.group(3) or 0)
    stripped = (int_part + frac).lstrip("0")
    s = stripped.rstrip("0")
    e10 = exp - len(frac) + (len(stripped) - len(s))  # x = int(s) * 10**e10
    k = len(s)
    n = e10 + k
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + s
    e = n - 1
    sign = "+" if e >= 0 else "-"
    mantissa = s if k == 1 else s[0] + "." + s[1:]
    return f"{mantissa}e{sign}{abs(e)}"


def has_lone_surrogate(s):
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def es_string(s):
    if has_lone_surrogate(s):
        raise Rejected("lone_surrogate")
    return json.dumps(s, ensure_ascii=False)


def utf16_key(s):
    return s.encode("utf-16-be", "surrogatepass")


def canonical(value, nfc):
    """RFC 8785 canonical JSON; with nfc=True, normalizer v1 (NFC first)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return es_number(value)
    if isinstance(value, str):
        if has_lone_surrogate(value):
            raise Rejected("lone_surrogate")
        return es_string(unicodedata.normalize("NFC", value) if nfc else value)
    if isinstance(value, list):
        return "[" + ",".join(canonical(v, nfc) for v in value) + "]"
    if isinstance(value, dict):
        members = {}
        for key, v in value.items():
            if has_lone_surrogate(key):
                raise Rejected("lone_surrogate")
            k = unicodedata.normalize("NFC", key) if nfc else key
            if k in members:
                raise Rejected("duplicate_key_after_nfc")
            members[k] = v
        parts = [es_string(k) + ":" + canonical(members[k], nfc) for k in sorted(members, key=utf16_key)]
        return "{" + ",".join(parts) + "}"
    raise TypeError(type(value))


def parse(text):
    """JSON text as ECMAScript sees it: every number a double, last duplicate key wins."""
    return json.loads(text, parse_int=lambda t: float(int(t)), parse_float=float)


def from_bits(hex16):
    return struct.unpack(">d", bytes.fromhex(hex16))[0]


def sha256_digest(text):
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


KEY_ID_LABEL = b"agent-continuity/key-id/v1"


def key_id(key):
    return hmac.new(key, KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]


def hmac_digest(text, key):
    mac = hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"hmac-sha256:{key_id(key)}:{mac}"


# --- RFC 8785 examples, with the results the RFC publishes ------------------------------------

RFC_SAMPLE_INPUT = r'''{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}'''
RFC_SAMPLE_OUTPUT = '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
# The UTF-8 bytes the RFC prints for the sample output, 20 bytes per line as in the RFC.
RFC_SAMPLE_UTF8_HEX = (
    "7b226c69746572616c73223a5b6e756c6c2c7472"
    "75652c66616c73655d2c226e756d62657273223a"
    "5b3333333333333333332e333333333333332c31"
    "652b33302c342e352c302e3030322c31652d3237"
    "5d2c22737472696e67223a22e282ac245c753030"
    "30665c6e4127425c225c5c5c5c5c222f227d"
)

RFC_SORTING_INPUT = r'''{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}'''
# RFC 8785 section 3.2.3: the property names in sorted order.
RFC_SORTED_NAMES = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001F600", "\ufb33"]

# RFC 8785 Appendix B: IEEE 754 bit patterns and their serialization (None: must be rejected).
RFC_NUMBERS = [
    ("0000000000000000", "0", "Zero"),
    ("8000000000000000", "0", "Minus zero"),
    ("0000000000000001", "5e-324", "Min pos number"),
    ("8000000000000001", "-5e-324", "Min neg number"),
    ("7fefffffffffffff", "1.7976931348623157e+308", "Max pos number"),
    ("ffefffffffffffff", "-1.7976931348623157e+308", "Max neg number"),
    ("4340000000000000", "9007199254740992", "Max pos int"),
    ("c340000000000000", "-9007199254740992", "Max neg int"),
    ("4430000000000000", "295147905179352830000", "~2**68"),
    ("7fffffffffffffff", None, "NaN"),
    ("7ff0000000000000", None, "Infinity"),
    ("44b52d02c7e14af5", "9.999999999999997e+22", ""),
    ("44b52d02c7e14af6", "1e+23", ""),
    ("44b52d02c7e14af7", "1.0000000000000001e+23", ""),
    ("444b1ae4d6e2ef4e", "999999999999999700000", ""),
    ("444b1ae4d6e2ef4f", "999999999999999900000", ""),
    ("444b1ae4d6e2ef50", "1e+21", ""),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7", ""),
    ("3eb0c6f7a0b5ed8d", "0.000001", ""),
    ("41b3de4355555553", "333333333.3333332", ""),
    ("41b3de4355555554", "333333333.33333325", ""),
    ("41b3de4355555555", "333333333.3333333", ""),
    ("41b3de4355555556", "333333333.3333334", ""),
    ("41b3de4355555557", "333333333.33333343", ""),
    ("becbf647612f3696", "-0.0000033333333333333333", ""),
    ("43143ff3c1cb0959", "1424953923781206.2", ""),
]
# Not in the table, but the same rule: -Infinity is not a JSON number either.
EXTRA_REJECTED_NUMBERS = [("fff0000000000000", "-Infinity")]


def check_rfc_examples():
    sample = canonical(parse(RFC_SAMPLE_INPUT), nfc=False)
    assert sample == RFC_SAMPLE_OUTPUT, sample
    assert sample.encode("utf-8").hex() == RFC_SAMPLE_UTF8_HEX
    sorting = canonical(parse(RFC_SORTING_INPUT), nfc=False)
    assert list(json.loads(sorting).keys()) == RFC_SORTED_NAMES, sorting
    for bits, expected, _ in RFC_NUMBERS:
        if expected is None:
            try:
                es_number(from_bits(bits))
            except Rejected:
                continue
            raise AssertionError(bits)
        assert es_number(from_bits(bits)) == expected, (bits, es_number(from_bits(bits)), expected)


# --- Normalizer v1 vectors ------------------------------------------------------------------------

# (name, JSON text, note). Several inputs share one canonical form on purpose.
VALUE_VECTORS = [
    ("rfc8785 3.2.2 sample", RFC_SAMPLE_INPUT, "RFC 8785 section 3.2.2; no string changes under NFC"),
    ("rfc8785 3.2.3 sorting", RFC_SORTING_INPUT,
     "RFC 8785 section 3.2.3. U+FB33 is excluded from composition, so NFC turns it into U+05D3 U+05BC, "
     "which sorts before the euro sign: normalizer v1 differs from plain RFC 8785 here"),
    ("key order a,b", '{"a":1,"b":2}', ""),
    ("key order b,a", '{"b":2,"a":1}', "same canonical form as key order a,b"),
    ("nested key order", '{"z":{"y":[3,{"d":4,"c":5}],"x":null},"a":[]}', "arrays keep their order"),
    ("code-unit order, not code-point order", '{"\\ud83d\\ude00":1,"\\uffff":2,"a":3,"B":4}',
     "U+1F600 (UTF-16 D83D DE00) sorts before U+FFFF"),
    ("null member", '{"a":null,"b":1}', "null and a missing field stay different"),
    ("missing member", '{"b":1}', "differs from null member"),
    ("null", "null", ""),
    ("empty object", "{}", ""),
    ("empty array", "[]", ""),
    ("empty string", '""', ""),
    ("true", "true", ""),
    ("false", "false", ""),
    ("string NFC", '"caf\\u00e9"', "precomposed e-acute"),
    ("string NFD", '"cafe\\u0301"', "e + combining acute: same canonical form as string NFC"),
    ("key NFD", '{"cafe\\u0301":1}', "keys are normalized too"),
    ("Hangul NFD", '"\\u1100\\u1161\\u11a8"', "conjoining jamo compose to U+AC01"),
    ("number 1", "1", ""),
    ("number 1.0", "1.0", "same canonical form as 1"),
    ("number 1e0", "1e0", "same canonical form as 1"),
    ("number 1E+0", "1E+0", "same canonical form as 1"),
    ("number 10e-1", "10e-1", "same canonical form as 1"),
    ("number 0.1e1", "0.1e1", "same canonical form as 1"),
    ("number -0", "-0", "minus zero serializes as 0"),
    ("number -0.0", "-0.0", "minus zero serializes as 0"),
    ("number 100", "100", ""),
    ("number 1e21", "1e21", "exponent form from 1e21 up"),
    ("number 1e20", "1e20", "plain digits below 1e21"),
    ("number 1e-7", "1e-7", "exponent form below 1e-6"),
    ("number 0.000001", "0.000001", ""),
    ("number 4.50", "4.50", ""),
    ("number 2^53+1", "9007199254740993", "not a double; rounds to 2^53"),
    ("control characters", '"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f"', "short escapes where JSON has them"),
    ("quote, backslash, solidus", '"\\"\\\\\\/"', "solidus is not escaped"),
    ("line separators", '"\\u2028\\u2029\\u007f"', "not escaped"),
    ("emoji", '"\\ud83d\\ude00"', "a valid surrogate pair"),
    ("__proto__ key", '{"__proto__":{"a":1},"b":2}', "an ordinary key in JSON; must not vanish"),
    ("__proto__ scalar", '{"__proto__":1}', "differs from empty object"),
    ("six-case scope", '{"repository":"acme/payments","paths":["services/ledger"]}', "examples/six-case"),
    ("six-case approval_boundary", '{"requires_human":["deploy","schema_migration"]}', "examples/six-case"),
    ("six-case acceptance_test", '{"command":"npm test -- ledger","must_pass":true}', "examples/six-case"),
    ("six-case acceptance_test changed", '{"command":"npm test -- ledger reconcile","must_pass":true}',
     "examples/six-case, case 3"),
    ("low-entropy yes", '"yes"', "guessable by enumeration: use a keyed digest"),
]

# Inputs that are valid JSON text but that normalizer v1 refuses.
REJECTED_TEXT_VECTORS = [
    ("lone high surrogate", '"\\ud800"', "lone_surrogate"),
    ("lone low surrogate", '"a\\udc00b"', "lone_surrogate"),
    ("lone surrogate in key", '{"\\udbff":1}', "lone_surrogate"),
    ("duplicate keys after NFC", '{"caf\\u00e9":1,"cafe\\u0301":2}', "duplicate_key_after_nfc"),
]

# A fixed test key: bytes 00..1f. Never use it for anything but these vectors.
TEST_KEY = bytes(range(32))


def main():
    check_rfc_examples()

    vectors = []
    for name, text, note in VALUE_VECTORS:
        value = parse(text)
        v = {"name": name, "input": text, "canonical": canonical(value, nfc=True)}
        plain = canonical(value, nfc=False)
        if plain != v["canonical"]:
            v["rfc8785"] = plain
        if note:
            v["note"] = note
        vectors.append(v)
    vectors[0]["utf8Hex"] = RFC_SAMPLE_UTF8_HEX
    assert vectors[0]["canonical"] == RFC_SAMPLE_OUTPUT

    rejected = []
    for name, text, code in REJECTED_TEXT_VECTORS:
        try:
            canonical(parse(text), nfc=True)
        except Rejected as e:
            assert e.code == code, (name, e.code)
            rejected.append({"name": name, "input": text, "code": code})
            continue
        raise AssertionError(name)

    numbers = [
        {"ieee754": bits, **({"canonical": exp} if exp is not None else {"code": "non_finite_number"}),
         **({"note": note} if note else {})}
        for bits, exp, note in RFC_NUMBERS
    ] + [{"ieee754": bits, "code": "non_finite_number", "note": note} for bits, note in EXTRA_REJECTED_NUMBERS]

    write("canonical-json.json", {
        "description": "Normalizer v1 (NFC + RFC 8785). 'input' is JSON text parsed with JSON.parse; "
                       "'canonical' is normalizer v1 output; 'rfc8785', when present, is plain RFC 8785 "
                       "output (no NFC) where it differs. 'numbers' is RFC 8785 Appendix B (IEEE 754 bits, "
                       "big-endian hex). Generated by generate.py.",
        "vectors": vectors,
        "rejected": rejected,
        "numbers": numbers,
    })

    digest_vectors = [{"name": v["name"], "input": v["input"], "canonical": v["canonical"],
                       "digest": sha256_digest(v["canonical"])} for v in vectors]
    write("sha256.json", {
        "description": "Plain digests: sha256:<hex of SHA-256 over the UTF-8 canonical text>. Generated by generate.py.",
        "vectors": digest_vectors,
    })

    import base64
    write("hmac.json", {
        "description": "Keyed digests: hmac-sha256:<keyId>:<hex of HMAC-SHA-256 over the UTF-8 canonical text>. "
                       "keyId = first 16 hex of HMAC-SHA-256(key, 'agent-continuity/key-id/v1'). "
                       "The key is a public test key (bytes 00..1f): never use it for real. Generated by generate.py.",
        "key": {
            "hex": TEST_KEY.hex(),
            "base64": base64.b64encode(TEST_KEY).decode("ascii"),
            "keyIdLabel": KEY_ID_LABEL.decode("ascii"),
            "keyId": key_id(TEST_KEY),
        },
        "otherKeys": [
            {"utf8": "correct horse battery staple", "keyId": key_id(b"correct horse battery staple")},
            {"hex": "ff" * 16, "keyId": key_id(b"\xff" * 16)},
        ],
        "vectors": [{"name": v["name"], "input": v["input"], "canonical": v["canonical"],
                     "digest": hmac_digest(v["canonical"], TEST_KEY)} for v in vectors],
    })


def write(name, doc):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
