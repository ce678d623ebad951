#!/usr/bin/env python3
"""
gen_cases.py -- seeded generator of hostile calls to every a2 function.

    python3 test/fuzz/gen_cases.py --seed 20260301 --cases 3000 > cases.sql

Writes one INSERT INTO a2_fuzz.cases per case (see test/fuzz/setup.sql).  A
case is one call of an a2 function: its arguments as SQL expressions of the
declared parameter types, the a2.now reading to call it at, and the outcomes
SPEC.md allows for it:

    ok        the call succeeds (its result is then checked for shape)
    22004     NULL where a value is required
    22023     bad argument, malformed JSON shape, number or size
    Z2001/2/3 PARTIAL_DUPLICATE_BATCH, SUPERSEDED_ATTEMPT, NOT_FOUND
    Z2004     NOT_DEAD_LETTERED (a2_redrive of an event that is not)
    XX001     only for calls that touch the session with a planted corrupt row
    cast      an argument expression itself fails to evaluate (e.g. jsonb
              rejects \\u0000, '2.5'::bigint), before a2 runs at all

How a case is built: a valid call is generated first, full of "holes" --
positions (an argument, a JSON member, an array element) that know some
invalid replacements and the SQLSTATE each must raise.  Then zero, one or
two holes are replaced.  With no replacement the call is valid, and only
success or a state-dependent SQLSTATE of that function is acceptable (e.g.
Z2003 when a2_complete names an index that does not exist); with a
replacement, exactly the replacement's SQLSTATE is (either one's for two).

Everything comes from one random.Random(seed): the same seed and case count
give the same file, byte for byte.
"""

import argparse
import datetime
import json
import random
import sys

# --- constants -----------------------------------------------------------

START_MS = 1772323200000            # 2026-03-01T00:00:00.000Z
MAX_MS = 8_640_000_000_000_000      # JavaScript Date range; a2 refuses beyond
I64_MAX = 2**63 - 1
I64_MIN = -2**63
I32_MAX = 2**31 - 1
I32_MIN = -2**31
LIST_LIMIT = 10_000

OK = 'ok'
NULL_CODE = '22004'
INVAL = '22023'
DUP = 'Z2001'
SUPERSEDED = 'Z2002'
NOT_FOUND = 'Z2003'
NOT_DEAD = 'Z2004'
CORRUPT = 'XX001'
CAST = 'cast'

# State-dependent SQLSTATEs a valid call of each function may raise.
STATE_CODES = {
    'a2_append': {DUP, SUPERSEDED, NOT_FOUND},
    'a2_complete': {DUP, NOT_FOUND},
    'a2_fail': {NOT_FOUND},
    'a2_redrive': {NOT_FOUND, NOT_DEAD},
    'a2_cancel': {NOT_FOUND},
    'a2_pause_schedule': {NOT_FOUND},
    'a2_resume_schedule': {NOT_FOUND},
}

# Sessions setup.sql fills; CORRUPT_SESSION holds a row with an invalid cause.
EXISTING_SESSIONS = ['fz:s1', 'fz:s2', 'fz:s3', 'fz:s4']
CORRUPT_SESSION = 'fz:corrupt'


# --- value model ---------------------------------------------------------

class Raw:
    """JSON text used verbatim (number spellings such as 2.0 or 1e400)."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


class Sql:
    """A SQL expression of type jsonb, for values too big for a literal."""

    def __init__(self, expr, desc):
        self.expr = expr
        self.desc = desc

    def __repr__(self):
        return self.desc


class Pairs:
    """A JSON object as (key, value) pairs: allows duplicate keys."""

    def __init__(self, pairs):
        self.pairs = pairs

    def __repr__(self):
        return '{' + ', '.join('%s: %r' % kv for kv in self.pairs) + '}'


class BigStr:
    """A long string: repeat(chunk, n) in SQL, to_jsonb(repeat(...)) in JSON."""

    def __init__(self, chunk, n):
        self.chunk = chunk
        self.n = n

    def __repr__(self):
        return 'repeat(%r, %d)' % (self.chunk, self.n)


class SqlArg:
    """A SQL argument expression (already typed)."""

    def __init__(self, expr, desc=None):
        self.expr = expr
        self.desc = desc or expr

    def __repr__(self):
        return self.desc


class JsonArg:
    """A jsonb argument given as a JSON value tree."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return 'json %r' % (self.value,)


ABSENT = type('Absent', (), {'__repr__': lambda self: '<absent>'})()


class Hole:
    """A position with a valid value and invalid replacements.

    bad: list of (value, codes, weight); codes is the set of acceptable
    outcomes when this replacement is made (usually one SQLSTATE).
    """

    def __init__(self, path, valid, bad):
        self.path = path
        self.valid = valid
        self.bad = bad
        self.chosen = None      # index into bad

    def current(self):
        if self.chosen is None:
            return self.valid
        return self.bad[self.chosen][0]


def bad(value, *codes, w=1.0):
    return (value, frozenset(codes), w)


# --- SQL and JSON rendering ----------------------------------------------

def sql_str(s):
    """A SQL string literal for s (E'' when it holds control characters)."""
    if any(ord(ch) < 0x20 or ch in '\\\x7f' for ch in s):
        out = []
        for ch in s:
            if ch == '\\':
                out.append('\\\\')
            elif ch == "'":
                out.append("''")
            elif ord(ch) < 0x20 or ch == '\x7f':
                out.append('\\x%02x' % ord(ch))
            else:
                out.append(ch)
        return "E'" + ''.join(out) + "'"
    return "'" + s.replace("'", "''") + "'"


def sql_text(v):
    """A SQL text expression for a Python str or BigStr."""
    if isinstance(v, BigStr):
        return 'repeat(%s, %d)' % (sql_str(v.chunk), v.n)
    return sql_str(v) + '::text'


def resolve(v):
    while isinstance(v, Hole):
        v = v.current()
    return v


class Renderer:
    def __init__(self, rng):
        self.rng = rng

    def jstr(self, s):
        return json.dumps(s, ensure_ascii=self.rng.random() < 0.5)

    def json(self, v):
        """Render a JSON tree: returns (is_sql, text)."""
        v = resolve(v)
        if isinstance(v, Sql):
            return True, '(' + v.expr + ')'
        if isinstance(v, BigStr):
            return True, 'to_jsonb(%s)' % sql_text(v)
        if isinstance(v, Raw):
            return False, v.text
        if v is None:
            return False, 'null'
        if v is True:
            return False, 'true'
        if v is False:
            return False, 'false'
        if isinstance(v, int):
            return False, str(v)
        if isinstance(v, str):
            return False, self.jstr(v)
        if isinstance(v, list):
            parts = [self.json(x) for x in v if resolve(x) is not ABSENT]
            if any(p[0] for p in parts):
                return True, self._build('jsonb_build_array', [self._as_sql(p) for p in parts], '[]')
            return False, '[' + ','.join(p[1] for p in parts) + ']'
        if isinstance(v, (dict, Pairs)):
            items = v.pairs if isinstance(v, Pairs) else list(v.items())
            parts = []
            for k, x in items:
                k = resolve(k)
                if resolve(x) is ABSENT:
                    continue
                parts.append((k, self.json(x)))
            if any(p[1][0] or isinstance(p[0], BigStr) for p in parts):
                args = []
                for k, p in parts:
                    args.append(sql_text(k))
                    args.append(self._as_sql(p))
                return True, self._build('jsonb_build_object', args, '{}', step=2)
            return False, '{' + ','.join(self.jstr(k) + ':' + p[1] for k, p in parts) + '}'
        raise TypeError('cannot render %r' % (v,))

    @staticmethod
    def _as_sql(part):
        is_sql, text = part
        return text if is_sql else sql_str(text) + '::jsonb'

    @staticmethod
    def _build(fn, args, empty, step=1):
        # SQL functions take at most 100 arguments: concatenate chunks
        if not args:
            return "'%s'::jsonb" % empty
        chunk = 100 - 100 % (2 * step)
        pieces = ['%s(%s)' % (fn, ', '.join(args[i:i + chunk]))
                  for i in range(0, len(args), chunk)]
        return '(' + ' || '.join(pieces) + ')'

    def arg(self, v):
        """Render one function argument to a SQL expression."""
        v = resolve(v)
        if isinstance(v, SqlArg):
            return v.expr
        if isinstance(v, JsonArg):
            is_sql, text = self.json(v.value)
            return text if is_sql else sql_str(text) + '::jsonb'
        raise TypeError('cannot render argument %r' % (v,))


def holes_of(v, out):
    """Collect the holes that would be rendered, depth first."""
    if isinstance(v, Hole):
        if v.chosen is None:
            out.append(v)
            holes_of(v.valid, out)
        return out
    if isinstance(v, JsonArg):
        holes_of(v.value, out)
    elif isinstance(v, list):
        for x in v:
            holes_of(x, out)
    elif isinstance(v, dict):
        for k, x in v.items():
            holes_of(x, out)
    elif isinstance(v, Pairs):
        for k, x in v.pairs:
            holes_of(k, out)
            holes_of(x, out)
    return out


def dict_with_hole_keys(pairs):
    return Pairs(pairs)


# --- the generator -------------------------------------------------------

class Gen:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.now_ms = START_MS
        self.serial = 0
        self.used_ids = []

    # -- small helpers

    def pick(self, weighted):
        """weighted: list of (weight, value-or-callable)."""
        total = sum(w for w, _ in weighted)
        r = self.rng.random() * total
        for w, v in weighted:
            r -= w
            if r <= 0:
                return v() if callable(v) else v
        v = weighted[-1][1]
        return v() if callable(v) else v

    def fresh(self, prefix):
        self.serial += 1
        return '%s%d' % (prefix, self.serial)

    # -- strings

    WEIRD_VALID = [
        'fz:\U0001F600\U0001F389',              # emoji (4-byte UTF-8)
        'fz:e\u0301\u0301\u0301',               # combining marks
        'fz:\uffff', 'fz:\ufffe', 'fz:\U0010ffff',
        'fz:\u202eevil', 'fz:zw\u200dj\u200b',  # RTL override, ZWJ, ZWSP
        "fz:q'\"\\", 'fz:%_*?[]{}', 'fz:\n\t\r', 'fz:\x01\x1f\x7f',
        ' ', 'null', '[]', '{}', '0', '\x01',
        'a' * 1024,                              # the byte limit exactly
        '\U0001F600' * 256,                      # 1024 bytes, 256 characters
        'a' * 1022 + '\u00e9',                   # 1024 bytes
        '\u00e9' * 512,
        '\x01' * 1024,                           # escapes to 6 KB in JSON
        '"' * 1024,
        "fz:'); DROP TABLE a2_events; --", 'fz:$$; SELECT 1; $$', 'fz:@extschema@',
        'fz:%s%n%x', 'fz:\\u0000',                # text, not a NUL
    ]

    def name_bad_sql(self):
        """Invalid values of a required SQL name argument."""
        return [
            bad(SqlArg('NULL::text'), NULL_CODE, w=2),
            bad(SqlArg("''::text"), INVAL, w=2),
            bad(SqlArg(sql_text('a' * 1025), 'a*1025'), INVAL, w=2),
            bad(SqlArg(sql_text('a' * 1023 + '\u00e9'), "a*1023+'\u00e9' (1025 bytes)"), INVAL),
            bad(SqlArg(sql_text('\U0001F600' * 256 + 'a'), 'emoji*256+a (1025 bytes)'), INVAL),
            bad(SqlArg(sql_text(BigStr('x', 3_000_000)), 'x*3e6'), INVAL, w=0.2),
        ]

    def name_bad_json(self, required):
        out = [
            bad('', INVAL, w=2),
            bad('a' * 1025, INVAL, w=2),
            bad('a' * 1023 + '\u00e9', INVAL),
            bad('\U0001F600' * 256 + 'a', INVAL),
            bad(BigStr('x', 3_000_000), INVAL, w=0.2),
            bad(1, INVAL), bad(True, INVAL), bad({}, INVAL), bad([], INVAL),
            bad(Raw('1.5'), INVAL),
        ]
        if required:
            out += [bad(ABSENT, INVAL), bad(None, INVAL)]
        return out

    def weird_name(self):
        return self.rng.choice(self.WEIRD_VALID)

    def session_name(self):
        return self.pick([
            (60, lambda: self.rng.choice(EXISTING_SESSIONS)),
            (3, CORRUPT_SESSION),
            (12, lambda: self.fresh('fz:n')),
            (25, self.weird_name),
        ])

    def session_arg(self, path='session_id'):
        return Hole(path, SqlArg(sql_text(self.session_name())), self.name_bad_sql())

    def name_arg(self, path, pool):
        v = self.pick([(80, lambda: self.rng.choice(pool)), (20, self.weird_name)])
        return Hole(path, SqlArg(sql_text(v)), self.name_bad_sql())

    # -- numbers

    def int_forms(self, v):
        """Valid JSON spellings of the integer v."""
        forms = [(10, v), (1, Raw('%d.0' % v)), (1, Raw('%de-1' % (v * 10)))]
        if v > 0 and v % 10 == 0:
            forms.append((1, Raw('%de1' % (v // 10))))
        if v == 0:
            forms.append((1, Raw('-0')))
        return self.pick(forms)

    def json_int_bad(self, minv, required, in_list=False):
        out = [
            bad(minv - 1, INVAL, w=2), bad(-1, INVAL), bad(I64_MIN, INVAL),
            bad(Raw(str(2**63)), INVAL), bad(Raw(str(-2**63 - 1)), INVAL),
            bad(Raw('1e400'), INVAL), bad(Raw('-1e400'), INVAL),
            bad(Raw('1e131071'), INVAL, w=0.3),
            bad(Raw('2.5'), INVAL), bad(Raw('0.5'), INVAL), bad(Raw('1e-400'), INVAL),
            bad(Raw('9223372036854775807.5'), INVAL),
            bad('1', INVAL), bad(True, INVAL), bad([], INVAL), bad({}, INVAL),
            bad([1], INVAL),
        ]
        if minv >= 1:
            out.append(bad(Raw('-0'), INVAL))
            out.append(bad(Raw('0.0'), INVAL))
        if required:
            out.append(bad(None, INVAL))
            if not in_list:     # an absent list element is just a shorter list
                out.append(bad(ABSENT, INVAL))
        return out

    def json_int(self, path, minv, typical, required=True):
        v = self.pick([(90, lambda: self.rng.choice(typical)),
                       (10, lambda: self.rng.choice([I64_MAX, I32_MAX, I32_MAX + 1, 2**53 + 1]))])
        return Hole(path, self.int_forms(v), self.json_int_bad(minv, required))

    def sql_int_bad(self, typ, minv, required):
        lo, hi = (I64_MIN, I64_MAX) if typ == 'bigint' else (I32_MIN, I32_MAX)
        out = [
            bad(SqlArg("'%d'::%s" % (minv - 1, typ)), INVAL, w=2),
            bad(SqlArg("'-1'::%s" % typ), INVAL),
            bad(SqlArg("'%d'::%s" % (lo, typ)), INVAL),
            bad(SqlArg("'%d'::%s" % (hi + 1, typ)), CAST, w=0.5),
            bad(SqlArg("'1e400'::%s" % typ), CAST, w=0.5),
            bad(SqlArg("'2.5'::%s" % typ), CAST, w=0.5),
            bad(SqlArg("'2.0'::%s" % typ), CAST, w=0.5),
        ]
        if required:
            out.append(bad(SqlArg('NULL::%s' % typ), NULL_CODE, w=2))
        return out

    def sql_int(self, path, typ, minv, typical, required=True, null_weight=0):
        hi = I64_MAX if typ == 'bigint' else I32_MAX
        choices = [(90, lambda: "'%d'::%s" % (self.rng.choice(typical), typ)),
                   (5, "'%d'::%s" % (hi, typ))]
        if not required:
            choices.append((null_weight, 'NULL::%s' % typ))
        return Hole(path, SqlArg(self.pick(choices)), self.sql_int_bad(typ, minv, required))

    def index_sql(self, path='event_index'):
        return self.sql_int(path, 'bigint', 1, [1, 1, 2, 2, 3, 3, 4, 5, 6, 8, 12])

    def attempt_sql(self, path='attempt'):
        return self.sql_int(path, 'integer', 1, [1, 1, 1, 2, 2, 3])

    def ttl_arg(self, path):
        """ttl_ms: >= 0; now + ttl_ms beyond the JS range is an error."""
        exact = MAX_MS - self.now_ms
        valid = self.pick([(40, 30000), (15, 0), (15, 1000), (10, 1),
                           (5, 2**40), (3, exact), (12, 600000)])
        h = Hole(path, SqlArg("'%d'::bigint" % valid), [
            bad(SqlArg("'-1'::bigint"), INVAL, w=2),
            bad(SqlArg("'%d'::bigint" % I64_MIN), INVAL),
            bad(SqlArg('NULL::bigint'), NULL_CODE, w=2),
            bad(SqlArg("'%d'::bigint" % (exact + 1)), INVAL),
            bad(SqlArg("'%d'::bigint" % I64_MAX), INVAL),
            bad(SqlArg("'9223372036854775808'::bigint"), CAST),
            bad(SqlArg("'1.5'::bigint"), CAST),
        ])
        h.overflow = {3, 4}     # only errors when now + ttl_ms is computed
        return h

    def ts_valid(self):
        now = self.now_ms
        return self.pick([
            (30, lambda: sql_str(iso(now + self.rng.choice([0, 1, 1000, 60000, 3600000]))) + '::timestamptz'),
            (10, lambda: sql_str(iso(now - self.rng.choice([1, 1000, 600000]))) + '::timestamptz'),
            (3, "'1970-01-01 00:00:00+00'::timestamptz"),
            (3, "'1969-12-31 23:59:59.999+00'::timestamptz"),
            (3, "'2000-01-01 00:00:00.0005+00'::timestamptz"),
            (2, "'4713-01-01 00:00:00+00 BC'::timestamptz"),
            (2, "'275760-09-13 00:00:00+00'::timestamptz"),    # exactly 8.64e15 ms
        ])

    def ts_bad(self, required):
        out = [
            bad(SqlArg("'infinity'::timestamptz"), INVAL, w=2),
            bad(SqlArg("'-infinity'::timestamptz"), INVAL, w=2),
            # beyond JavaScript's Date but a valid PostgreSQL timestamp: SPEC
            # only demands rejecting infinite ones, so either is acceptable
            bad(SqlArg("'275760-09-13 00:00:00.001+00'::timestamptz"), OK, INVAL),
            bad(SqlArg("'294276-12-31 23:59:59+00'::timestamptz"), OK, INVAL),
            bad(SqlArg("'294277-01-01 00:00:00+00'::timestamptz"), CAST),
            bad(SqlArg("'yesterday-ish'::timestamptz"), CAST),
        ]
        if required:
            out.append(bad(SqlArg('NULL::timestamptz'), NULL_CODE, w=2))
        return out

    def expires_arg(self):
        v = self.pick([(75, 'NULL::timestamptz'), (25, self.ts_valid)])
        return Hole('expires_at', SqlArg(v), self.ts_bad(False))

    # -- scheduling (SPEC 7.1)

    def not_before_valid(self):
        """A notBefore a2 accepts: absent or null, past, now, future (of
        the case's a2.now), other spellings, the ends of the range."""
        now = self.now_ms
        return self.pick([
            (70, ABSENT), (5, None),
            (5, lambda: iso_z(now - self.rng.choice([1, 1000, 600000, 86400000]))),
            (4, lambda: iso_z(now)),
            (8, lambda: iso_z(now + self.rng.choice([1, 1000, 60000, 600000, 3600000]))),
            (2, lambda: iso_offset(now + self.rng.choice([0, 60000]), self.rng.choice([-300, 120, 840]))),
            (1, '275760-09-13T00:00:00Z'),          # exactly 8.64e15 ms
            (1, '1969-12-31T23:59:59.999Z'),
            (1, '4713-01-01 00:00:00+00 BC'),
            (1, lambda: iso_z(now)[:-1] + '5Z'),    # a 4th decimal: floored
        ])

    def wait_for_valid(self, settled):
        """A waitFor a2 accepts (docs/json.md): absent or null, or types
        (the fuzz's event types, so that later cases end some waits) with
        or without a timeout; never on a settled event, which refuses it."""
        if settled is True:
            return self.pick([(90, ABSENT), (10, None)])
        return self.pick([
            (85, ABSENT), (3, None),
            (12, lambda: {'types': self.rng.sample(['tick', 'tock', 'work', 'x'], self.rng.choice([1, 1, 2])),
                          **({} if self.rng.random() < 0.3 else
                             {'timeoutMs': self.rng.choice([0, 1, 1000, 60000, 3600000])})}),
        ])

    def wait_for_bad(self):
        """waitFor values a2 refuses with 22023."""
        return [
            bad(1, INVAL), bad('x', INVAL), bad([], INVAL), bad(['x'], INVAL), bad({}, INVAL),
            bad({'types': []}, INVAL), bad({'types': ['']}, INVAL), bad({'types': 'x'}, INVAL),
            bad({'types': [1]}, INVAL), bad({'types': [None]}, INVAL), bad({'types': None}, INVAL),
            bad({'types': ['x'], 'timeoutMs': -1}, INVAL), bad({'types': ['x'], 'timeoutMs': Raw('1.5')}, INVAL),
            bad({'types': ['x'], 'timeoutMs': '1000'}, INVAL), bad({'types': ['x'], 'timeout': 1}, INVAL),
            bad({'types': ['x'], 'timeoutMs': Raw('9223372036854775807')}, INVAL),
            bad({'types': ['x'], 'timeoutMs': Raw('1e400')}, INVAL),
            bad({'types': ['t%d' % i for i in range(101)]}, INVAL, w=0.5),
            bad({'types': ['t' * 1025]}, INVAL, w=0.5),
        ]

    # -- dispatch control (0.4.0, docs/json.md "Dispatch fields")

    QUEUES = ['q1', 'q2', 'q\u00e9']

    def queue_valid(self):
        """An event's queue: absent or null (the default queue), "default"
        (stored as absent), a few names (those the queues argument names),
        or an odd valid name."""
        return self.pick([(65, ABSENT), (5, None), (5, 'default'),
                          (20, lambda: self.rng.choice(self.QUEUES)), (5, self.weird_name)])

    def priority_valid(self):
        """-32768..32767; 0 (and null) is the default, stored as absent."""
        return self.pick([(70, ABSENT), (4, None), (4, 0),
                          (14, lambda: self.int_forms(self.rng.choice([1, 2, -1, 5, 100]))),
                          (8, lambda: self.rng.choice([32767, -32768, Raw('32767.0'), Raw('-3.2768e4')]))])

    def priority_bad(self):
        return [
            bad(32768, INVAL, w=2), bad(-32769, INVAL, w=2), bad(I32_MAX, INVAL), bad(I64_MIN, INVAL),
            bad(Raw(str(2**63)), INVAL), bad(Raw('1e400'), INVAL), bad(Raw('1.5'), INVAL),
            bad(Raw('-0.5'), INVAL), bad('1', INVAL), bad(True, INVAL), bad([], INVAL), bad({}, INVAL),
            bad([1], INVAL),
        ]

    def key_valid(self):
        return self.pick([(70, ABSENT), (5, None), (20, lambda: self.rng.choice(['k1', 'k2', 'k3'])),
                          (5, self.weird_name)])

    def queues_arg(self, most=LIST_LIMIT):
        """The queues argument of a2_claim and a2_claim_next: NULL (every
        queue not paused) or 1 to 10,000 non-empty names of at most 1024
        bytes; '{}' and a bad name are 22023, a NULL element 22004."""
        v = self.pick([
            (55, 'NULL::text[]'), (10, "'{default}'::text[]"), (10, "'{q1}'::text[]"),
            (8, "'{q1,default}'::text[]"), (5, "'{q2,q1,q2}'::text[]"), (3, "ARRAY['q\u00e9', 'nowhere']"),
            (5, lambda: 'ARRAY[%s]' % sql_text(self.weird_name())),
            (2, "ARRAY[repeat('q', 1024)]"),
            (1, "(SELECT array_agg('q' || g) FROM generate_series(1, %d) g)" % most),
        ])
        return Hole('queues', SqlArg(v), [
            bad(SqlArg("'{}'::text[]"), INVAL, w=2),
            bad(SqlArg("ARRAY['']"), INVAL, w=2),
            bad(SqlArg("ARRAY['q1', '']"), INVAL),
            bad(SqlArg("ARRAY[repeat('q', 1025)]"), INVAL),
            bad(SqlArg("ARRAY[repeat('\u00e9', 513)]"), INVAL),
            bad(SqlArg("'{q1,NULL}'::text[]"), NULL_CODE, w=2),
            bad(SqlArg("ARRAY[NULL::text]"), NULL_CODE),
            bad(SqlArg("(SELECT array_agg('q' || g) FROM generate_series(1, %d) g)" % (LIST_LIMIT + 1),
                       '10001 queues'), INVAL, w=0.5),
            # a two-dimensional array is not a list; flattening it is tolerable
            bad(SqlArg("'{{q1,q2},{q2,q1}}'::text[]"), OK, INVAL),
        ])

    def not_before_bad(self):
        """notBefore values a2 refuses with 22023 (SPEC 7.1: not a finite
        timestamp string)."""
        now = self.now_ms
        return [
            bad(now, INVAL, w=2), bad(Raw('1.7e12'), INVAL), bad(True, INVAL), bad({}, INVAL),
            bad([], INVAL), bad([iso_z(now)], INVAL), bad({'at': iso_z(now)}, INVAL),
            bad('next tuesday', INVAL, w=2), bad('', INVAL), bad(' ', INVAL),
            bad('infinity', INVAL, w=2), bad('-infinity', INVAL),
            bad('275760-09-13T00:00:00.001Z', INVAL), bad('294277-01-01T00:00:00Z', INVAL),
            bad('2026-02-30T00:00:00Z', INVAL), bad('2026-03-01T25:00:00Z', INVAL),
            bad('allballs', INVAL), bad(BigStr('9', 100000), INVAL, w=0.2),
            # PostgreSQL's special literals read the wall clock, not a2.now:
            # accepting them or not is the server's choice
            bad('now', OK, INVAL), bad('tomorrow', OK, INVAL), bad('epoch', OK, INVAL),
        ]

    def retry_after_arg(self):
        """a2_fail's retry_after_ms: >= 0; now + it beyond the JS range, or
        negative, is 22023 (whatever the outcome would have been)."""
        exact = MAX_MS - self.now_ms
        valid = self.pick([(50, 'NULL::bigint'), (10, "'0'::bigint"), (5, "'1'::bigint"),
                           (15, "'1000'::bigint"), (10, "'3600000'::bigint"),
                           (5, "'%d'::bigint" % 2**40), (5, "'%d'::bigint" % exact)])
        return Hole('retry_after_ms', SqlArg(valid), [
            bad(SqlArg("'-1'::bigint"), INVAL, w=2),
            bad(SqlArg("'%d'::bigint" % I64_MIN), INVAL),
            bad(SqlArg("'%d'::bigint" % (exact + 1)), INVAL, w=2),
            bad(SqlArg("'%d'::bigint" % I64_MAX), INVAL, w=2),
            bad(SqlArg("'9223372036854775808'::bigint"), CAST, w=0.5),
            bad(SqlArg("'1.5'::bigint"), CAST, w=0.5),
        ])

    # -- JSON values

    UNI = ['\U0001F600', 'e\u0301', '\uffff', '\u202e', '\u00e9', '\u4e2d\u6587',
           '\U0010ffff', '\x7f', '\\', '"', '\n', '\u2028', 'x']

    def rand_json(self, depth=0):
        r = self.rng.random()
        if depth > 2 or r < 0.45:
            return self.pick([
                (3, lambda: self.rng.randint(-10**6, 10**6)),
                (1, lambda: Raw(self.rng.choice(['1e400', '-0', '2.50', '1E-7', '123456789012345678901234567890', '0.0']))),
                (3, lambda: ''.join(self.rng.choice(self.UNI) for _ in range(self.rng.randint(0, 6)))),
                (1, None), (1, True), (1, False),
            ])
        if r < 0.75:
            return [self.rand_json(depth + 1) for _ in range(self.rng.randint(0, 4))]
        return {self.rng.choice(['a', 'b', '', '\U0001F600', 'type', 'id', 'k%d' % depth]):
                self.rand_json(depth + 1) for _ in range(self.rng.randint(0, 4))}

    def payload_valid(self):
        return self.pick([
            (70, self.rand_json),
            (10, ABSENT),
            (5, None),
            (3, lambda: Sql("(repeat('[', %d) || repeat(']', %d))::jsonb" % ((n := self.rng.choice([100, 1000, 10000])), n),
                            'nested %d deep' % n)),
            (2, lambda: Sql("(repeat('{\"a\":', %d) || '1' || repeat('}', %d))::jsonb" % ((n := self.rng.choice([100, 1000, 5000])), n),
                            'objects nested %d deep' % n)),
            (1, lambda: Sql("to_jsonb(repeat('x', %d))" % (n := self.rng.choice([1_000_000, 3_000_000])), 'string of %d bytes' % n)),
            (1, lambda: Sql("(SELECT jsonb_object_agg('k' || g, g) FROM generate_series(1, 20000) g)", 'object of 20000 keys')),
            (2, lambda: {'u': '\ud7ff\ue000\ufffd\U0001F468\u200d\U0001F469\u200d\U0001F467'}),
        ])

    def json_cast_bad(self):
        """JSON the jsonb input function rejects: a2 never sees it."""
        return [
            bad(Sql("'\"\\u0000\"'::jsonb", '"\\u0000"'), CAST, w=2),
            bad(Sql("'{\"a\": \"x\\u0000y\"}'::jsonb", '{"a": "x\\u0000y"}'), CAST),
            bad(Sql("'\"\\ud800\"'::jsonb", 'lone surrogate'), CAST),
            bad(Sql("'[1,'::jsonb", 'truncated'), CAST),
            bad(Sql("'1e1000000'::jsonb", '1e1000000'), CAST),
            bad(Sql("(repeat('[', 200000) || repeat(']', 200000))::jsonb", 'nested 200000 deep'), CAST, w=0.3),
        ]

    # -- events (append and complete)

    def event_id(self, for_complete):
        def fresh():
            i = self.fresh('fz:id:')
            self.used_ids.append(i)
            return i

        def reused():
            return self.rng.choice(self.used_ids) if self.used_ids else fresh()

        if for_complete:
            valid = self.pick([(80, fresh), (12, reused), (8, self.weird_name)])
        else:
            valid = self.pick([(45, ABSENT), (5, None), (35, fresh), (10, reused), (5, self.weird_name)])
        return valid

    def cause(self, path):
        c = {
            'index': self.json_int(path + '.index', 1, [1, 1, 2, 2, 3, 4, 5, 7]),
            'attempt': self.json_int(path + '.attempt', 1, [1, 1, 1, 2, 3]),
        }
        bs = self.pick([(70, ABSENT), (10, None), (20, lambda: self.rng.choice([1, 2, 3, 10]))])
        c['batchSize'] = Hole(path + '.batchSize', bs, self.json_int_bad(1, False))
        # SPEC 5: a key the contract does not define is refused
        c['batch'] = Hole(path + '.batch', ABSENT, [bad(2, INVAL), bad(None, INVAL, w=0.5)])
        return c

    def event_elem(self, path, for_complete):
        e = {}
        idbad = self.name_bad_json(required=for_complete)
        e['id'] = Hole(path + '.id', self.event_id(for_complete), idbad)
        ty = self.pick([(80, lambda: self.rng.choice(['tick', 'tock', 'work', 'x'])),
                        (5, ''), (5, self.weird_name), (2, lambda: 'T' * 5000),
                        (1, lambda: BigStr('t', 1_000_000))])
        e['type'] = Hole(path + '.type', ty, [
            bad(ABSENT, INVAL, w=2), bad(None, INVAL, w=2), bad(1, INVAL),
            bad(True, INVAL), bad({}, INVAL), bad(['tick'], INVAL), bad(Raw('1e400'), INVAL),
        ])
        e['payload'] = Hole(path + '.payload', self.payload_valid(), self.json_cast_bad())
        if for_complete:
            cv = self.pick([(90, ABSENT), (10, None)])
            e['cause'] = Hole(path + '.cause', cv, [
                bad({'index': 1, 'attempt': 1}, INVAL, w=2), bad(1, INVAL), bad('x', INVAL)])
        else:
            cv = self.pick([(70, ABSENT), (5, None), (25, lambda: self.cause(path + '.cause'))])
            e['cause'] = Hole(path + '.cause', cv, [
                bad(1, INVAL), bad('x', INVAL), bad([], INVAL), bad([1, 1], INVAL), bad(True, INVAL),
                bad({}, INVAL), bad({'attempt': 1}, INVAL), bad({'index': 1}, INVAL),
            ])
        lane = self.pick([(60, ABSENT), (5, None), (30, lambda: self.rng.choice(['L1', 'L2', 'l\u00e9'])),
                          (5, self.weird_name)])
        e['lane'] = Hole(path + '.lane', lane, self.name_bad_json(required=False))
        settled = self.pick([(70, ABSENT), (10, True), (10, False), (10, None)])
        e['settled'] = Hole(path + '.settled', settled, [
            bad('true', INVAL), bad(1, INVAL), bad(0, INVAL), bad([], INVAL), bad({}, INVAL)])
        e['notBefore'] = Hole(path + '.notBefore', self.not_before_valid(), self.not_before_bad())
        e['queue'] = Hole(path + '.queue', self.queue_valid(), self.name_bad_json(required=False))
        e['priority'] = Hole(path + '.priority', self.priority_valid(), self.priority_bad())
        e['concurrencyKey'] = Hole(path + '.concurrencyKey', self.key_valid(), self.name_bad_json(required=False))
        e['waitFor'] = Hole(path + '.waitFor', self.wait_for_valid(settled), self.wait_for_bad())
        e['notbefore'] = Hole(path + '.notbefore', ABSENT, [bad(iso_z(self.now_ms), INVAL, w=0.5)])
        e['paylaod'] = Hole(path + '.paylaod', ABSENT, [
            bad({'nested': True}, INVAL), bad(None, INVAL, w=0.5), bad('x', INVAL, w=0.5)])
        if self.rng.random() < 0.03:
            # duplicate keys: jsonb keeps the last one
            valid = Pairs([('type', 1), ('type', 'dup-ok')] + [(k, v) for k, v in e.items() if k != 'type'])
        else:
            valid = e
        return Hole(path, valid, [
            bad(1, INVAL), bad('event', INVAL), bad(None, INVAL), bad([], INVAL),
            bad([{'type': 'x'}], INVAL), bad(True, INVAL),
            bad(Pairs([('type', 'a'), ('type', 1)]), INVAL),
        ])

    def events_arg(self, for_complete):
        n = self.pick([(10, 0), (40, 1), (25, 2), (15, 3), (10, lambda: self.rng.randint(4, 8))])
        elems = [self.event_elem('events[%d]' % i, for_complete) for i in range(n)]
        dup_id = self.fresh('fz:dup:')
        badlist = [
            bad(JsonArg({'type': 'x'}), INVAL, w=2), bad(JsonArg('events'), INVAL),
            bad(JsonArg(1), INVAL), bad(JsonArg(None), INVAL), bad(JsonArg(True), INVAL),
            bad(SqlArg("(SELECT jsonb_agg(jsonb_build_object('type', 't')) FROM generate_series(1, %d))" % (LIST_LIMIT + 1),
                       '10001 events'), INVAL, w=0.4),
            # complete looks its parent up first (SPEC 4 lists NOT_FOUND first)
            bad(JsonArg([{'id': dup_id, 'type': 'a'}, {'id': dup_id, 'type': 'b'}]),
                *((DUP, NOT_FOUND) if for_complete else (DUP,)), w=2),
        ] + [bad(JsonArg([x[0]]), *x[1], w=x[2]) for x in self.json_cast_bad()[:3]]
        if not for_complete:
            badlist.append(bad(SqlArg('NULL::jsonb'), NULL_CODE, w=2))
        valid = JsonArg(elems)
        if for_complete and self.rng.random() < 0.25:
            valid = SqlArg('NULL::jsonb')
        return Hole('events', valid, badlist)

    # -- per function

    def f_append(self):
        return 'a2_append', [self.session_arg(), self.events_arg(False)], 2

    def f_read(self):
        bound = lambda p: self.sql_int(p, 'bigint', 0, [0, 1, 2, 3, 5, 10, 100], required=False, null_weight=60)
        maxev = self.sql_int('max_events', 'integer', 1, [1, 2, 3, 100], required=False, null_weight=60)
        return 'a2_read', [self.session_arg(), bound('after_index'), bound('through_index'), maxev], 1

    def exclude_arg(self):
        v = self.pick([
            (50, 'NULL::bigint[]'), (20, "'{}'::bigint[]"), (15, "'{1}'::bigint[]"),
            (10, "'{1,2,3,2}'::bigint[]"), (3, "'{9223372036854775807}'::bigint[]"),
            (1, "(SELECT array_agg(g) FROM generate_series(1::bigint, %d) g)" % LIST_LIMIT),
        ])
        return Hole('exclude_indexes', SqlArg(v), [
            bad(SqlArg("'{0}'::bigint[]"), INVAL, w=2),
            bad(SqlArg("'{2,-1}'::bigint[]"), INVAL),
            bad(SqlArg("'{-9223372036854775808}'::bigint[]"), INVAL),
            # SPEC: NULL means absent for exclude_indexes itself; a NULL
            # element is neither an integer >= 1 nor absent: 22004 or 22023
            bad(SqlArg("'{1,NULL}'::bigint[]"), NULL_CODE, INVAL),
            bad(SqlArg("(SELECT array_agg(g) FROM generate_series(1::bigint, %d) g)" % (LIST_LIMIT + 1),
                       '10001 indexes'), INVAL, w=0.5),
            # a two-dimensional array is not a list; flattening it is tolerable
            bad(SqlArg("'{{1,2},{3,4}}'::bigint[]"), OK, INVAL),
            bad(SqlArg("'{1.5}'::bigint[]"), CAST),
            bad(SqlArg("'{9223372036854775808}'::bigint[]"), CAST),
        ])

    def f_claim(self):
        expires = self.expires_arg()
        ttl = self.ttl_arg('ttl_ms')
        return 'a2_claim', [self.session_arg(), self.name_arg('holder', ['w1', 'w2', 'w3']), ttl,
                            expires, self.exclude_arg(), self.queues_arg()], 3

    def claims_arg(self):
        n = self.pick([(10, 0), (40, 1), (30, 2), (20, lambda: self.rng.randint(3, 6))])
        idxs = self.rng.sample(range(1, 13), n)
        elems = []
        for i, idx in enumerate(idxs):
            p = 'claims[%d]' % i
            elems.append(Hole(p, {
                'index': Hole(p + '.index', self.int_forms(idx), self.json_int_bad(1, True)),
                'attempt': self.json_int(p + '.attempt', 1, [1, 1, 2, 3]),
                'holder': Hole(p + '.holder', ABSENT, [bad('w1', INVAL)]),
            }, [bad(1, INVAL), bad('x', INVAL), bad(None, INVAL), bad([1, 1], INVAL)]))
        valid = JsonArg(elems)
        if self.rng.random() < 0.01:
            valid = SqlArg("(SELECT jsonb_agg(jsonb_build_object('index', g, 'attempt', 1)) FROM generate_series(1, %d) g)"
                           % LIST_LIMIT, '10000 claims')
        return Hole('claims', valid, [
            bad(SqlArg('NULL::jsonb'), NULL_CODE, w=2),
            bad(JsonArg({'index': 1, 'attempt': 1}), INVAL, w=2), bad(JsonArg('x'), INVAL),
            bad(JsonArg(None), INVAL), bad(JsonArg(7), INVAL),
            bad(SqlArg("(SELECT jsonb_agg(jsonb_build_object('index', g, 'attempt', 1)) FROM generate_series(1, %d) g)"
                       % (LIST_LIMIT + 1), '10001 claims'), INVAL, w=0.4),
            # the seed accepts an index listed twice; SPEC is silent
            bad(JsonArg([{'index': 1, 'attempt': 1}, {'index': 1, 'attempt': 2}]), OK, INVAL),
        ] + [bad(JsonArg([x[0]]), *x[1], w=x[2]) for x in self.json_cast_bad()[:2]])

    def f_renew(self):
        expires = self.expires_arg()
        ttl = self.ttl_arg('ttl_ms')
        return 'a2_renew', [self.session_arg(), self.name_arg('holder', ['w1', 'w2', 'w3']),
                            self.claims_arg(), ttl, expires], 4

    def f_complete(self):
        return 'a2_complete', [self.session_arg(), self.index_sql(), self.attempt_sql(),
                               self.events_arg(True)], 3

    def f_fail(self):
        err = self.pick([
            (40, "'boom'::text"), (20, 'NULL::text'), (10, "''::text"),
            (10, lambda: sql_text(self.weird_name())),
            (2, lambda: sql_text(BigStr('e', 3_000_000))),
            (5, "E'line1\\nline2\\ttab'::text"),
        ])
        maxf = self.sql_int('max_failures', 'integer', 1, [1, 2, 3, 3, 5, 100])
        return 'a2_fail', [self.session_arg(), self.index_sql(), self.attempt_sql(),
                           Hole('error', SqlArg(err), []), maxf, self.retry_after_arg()], 5

    def f_claim_next(self):
        expires = self.expires_arg()
        ttl = self.ttl_arg('ttl_ms')
        maxs = Hole('max_sessions', SqlArg("'%d'::integer" % self.rng.choice([1, 1, 2, 3, 10, 10000])),
                    self.sql_int_bad('integer', 1, True) + [
                        bad(SqlArg("'10001'::integer"), INVAL), bad(SqlArg("'%d'::integer" % I32_MAX), INVAL)])
        # (a2_claim_next walks an index per queue served: 10,000 queues cost
        # it 1.4 to 2.1 s a call on the shared test machine, a2_claim little)
        return 'a2_claim_next', [self.name_arg('holder', ['w1', 'w2', 'w3']), ttl, maxs, expires,
                                 self.queues_arg(most=300)], 2

    def f_redrive(self):
        return 'a2_redrive', [self.session_arg(), self.index_sql()], 2

    def f_redrive_session(self):
        return 'a2_redrive', [self.session_arg()], 1

    def f_cancel(self):
        v = self.pick([
            (35, 'NULL::bigint[]'), (10, "'{}'::bigint[]"),
            (35, lambda: "'{%d}'::bigint[]" % self.rng.choice([1, 2, 3, 5, 8, 12])),
            (15, "'{1,2}'::bigint[]"), (5, "'{3,1,2}'::bigint[]"),
            # an index no event has: Z2003, and nothing cancelled
            (3, "'{1,9223372036854775807}'::bigint[]"),
            (1, "(SELECT array_agg(g) FROM generate_series(1::bigint, %d) g)" % LIST_LIMIT),
        ])
        indexes = Hole('indexes', SqlArg(v), [
            bad(SqlArg("'{0}'::bigint[]"), INVAL, w=2),
            bad(SqlArg("'{2,-1}'::bigint[]"), INVAL),
            bad(SqlArg("'{-9223372036854775808}'::bigint[]"), INVAL),
            bad(SqlArg("'{1,NULL}'::bigint[]"), NULL_CODE),
            bad(SqlArg("'{1,1}'::bigint[]"), INVAL),
            bad(SqlArg("'{{1,2},{3,4}}'::bigint[]"), INVAL),
            bad(SqlArg("(SELECT array_agg(g) FROM generate_series(1::bigint, %d) g)" % (LIST_LIMIT + 1),
                       '10001 indexes'), INVAL, w=0.5),
            bad(SqlArg("'{1.5}'::bigint[]"), CAST),
        ])
        reason = self.pick([
            (40, 'NULL::text'), (30, "'stop'::text"), (10, "''::text"),
            (10, lambda: sql_text(self.weird_name())),
            (5, "repeat('r', 1024)"), (2, "repeat('\u00e9', 512)"),
        ])
        reason = Hole('reason', SqlArg(reason), [
            bad(SqlArg("repeat('r', 1025)"), INVAL),
            bad(SqlArg("repeat('é', 513)"), INVAL),
            bad(SqlArg("repeat('r', 3000000)"), INVAL, w=0.3),
        ])
        return 'a2_cancel', [self.session_arg(), indexes, reason], 1

    # -- recurring schedules (0.4.0, docs/functions.md "Schedules")

    SCHED_NAMES = ['fz-sch-1', 'fz-sch-2', 'fz-sch-3', 'fz-sch-4']
    SCHED_SESSIONS = ['fz:sch:1', 'fz:sch:2', 'fz:sch:3']
    SPECS_OK = ['* * * * *', '*/15 * * * *', '0 9 * * mon-fri', '0 0 29 2 *', '0 0 13 * fri',
                '1-10/3 * * * *', '50/5 0 * * *', '0 0 1 jan,JUL *', '0 12 * * 7',
                '@hourly', '@daily', '@midnight', '@weekly', '@monthly', '@yearly', '@annually',
                'every 30 seconds', 'every 1 second', 'every minute', 'every 15 minutes',
                'every 2 hours', 'every 1 day', 'every 3650 days', '  0   9  *  *  *  ']
    SPECS_BAD = ['', ' ', '* * * *', '* * * * * *', '60 * * * *', '* 24 * * *', '* * 0 * *',
                 '* * * 13 *', '* * * * 8', '10-5 * * * *', '*/0 * * * *', '*/x * * * *',
                 '1,,2 * * * *', '* * * foo *', '* * * * monday', '0 0 1 nov-feb *', '0 0 30 2 *',
                 '0 0 31 4,6,9,11 *', '@reboot', '@every', 'every 0 minutes', 'every 5 fortnights',
                 'every 3651 days', 'every -1 minutes', 'every 1.5 hours',
                 '* * * * * ; DROP TABLE a2_schedules']
    ZONES_OK = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata',
                'Pacific/Honolulu', 'Etc/GMT+12', 'Pacific/Kiritimati']

    def sched_name_arg(self, path='name'):
        v = self.pick([(85, lambda: self.rng.choice(self.SCHED_NAMES)),
                       (10, lambda: self.rng.choice(['fz-sch-\U0001F600', "fz-sch-'q\"", 'fz-sch-%_'])),
                       (5, lambda: 'fz-sch-' + 'n' * 249)])     # 256 bytes, the limit
        return Hole(path, SqlArg(sql_text(v)), [
            bad(SqlArg('NULL::text'), NULL_CODE, w=2),
            bad(SqlArg("''::text"), INVAL, w=2),
            bad(SqlArg(sql_text('fz-sch-' + 'n' * 250), '257 bytes'), INVAL, w=2),
            bad(SqlArg(sql_text('\U0001F600' * 64 + 'a'), 'emoji*64+a (257 bytes)'), INVAL),
        ])

    def spec_arg(self, path='spec'):
        return Hole(path, SqlArg(sql_text(self.rng.choice(self.SPECS_OK))),
                    [bad(SqlArg(sql_text(x)), INVAL) for x in self.SPECS_BAD]
                    + [bad(SqlArg('NULL::text'), NULL_CODE, w=2),
                       bad(SqlArg("repeat('* ', 100000)"), INVAL, w=0.3)])

    def sched_event(self):
        """A schedule's event: what a2_append takes, without id, cause or
        notBefore (the schedule sets them)."""
        ev = {
            'type': Hole('event.type', self.rng.choice(['tick', 'tock', 'x']), [
                bad(ABSENT, INVAL, w=2), bad(None, INVAL), bad(1, INVAL), bad([], INVAL)]),
            'payload': Hole('event.payload', self.pick([(60, ABSENT), (40, self.rand_json)]), []),
            'lane': Hole('event.lane', self.pick([(70, ABSENT), (30, 'L1')]), self.name_bad_json(required=False)[:4]),
            'settled': Hole('event.settled', self.pick([(70, ABSENT), (15, True), (15, False)]),
                            [bad('true', INVAL), bad(1, INVAL)]),
            'queue': Hole('event.queue', self.queue_valid(), self.name_bad_json(required=False)[:4]),
            'priority': Hole('event.priority', self.priority_valid(), self.priority_bad()[:4]),
            'concurrencyKey': Hole('event.concurrencyKey', self.key_valid(), self.name_bad_json(required=False)[:4]),
            'id': Hole('event.id', ABSENT, [bad('fz:sch-id', INVAL, w=2), bad(None, OK, INVAL, w=0.5)]),
            'cause': Hole('event.cause', ABSENT, [bad({'index': 1, 'attempt': 1}, INVAL, w=2),
                                                  bad(None, OK, INVAL, w=0.5)]),
            'notBefore': Hole('event.notBefore', ABSENT, [bad(iso_z(self.now_ms), INVAL, w=2),
                                                          bad(None, OK, INVAL, w=0.5)]),
            'paylaod': Hole('event.paylaod', ABSENT, [bad(1, INVAL)]),
        }
        return Hole('event', JsonArg(ev), [
            bad(SqlArg('NULL::jsonb'), NULL_CODE, w=2), bad(JsonArg([{'type': 'x'}]), INVAL, w=2),
            bad(JsonArg('x'), INVAL), bad(JsonArg(None), INVAL), bad(JsonArg(1), INVAL),
            bad(JsonArg({}), INVAL),
        ])

    def sched_options(self):
        opts = {
            'timezone': Hole('options.timezone', self.pick([(40, ABSENT), (60, lambda: self.rng.choice(self.ZONES_OK))]), [
                bad('Mars/Olympus_Mons', INVAL, w=2), bad('', INVAL), bad(1, INVAL), bad(None, INVAL),
                bad('utc ', INVAL), bad(BigStr('z', 100000), INVAL, w=0.2)]),
            'missed': Hole('options.missed', self.pick([(40, ABSENT), (60, lambda: self.rng.choice(['skip', 'latest', 'backfill']))]), [
                bad('never', INVAL, w=2), bad('Skip', INVAL), bad('', INVAL), bad(1, INVAL), bad(None, INVAL),
                bad(['skip'], INVAL)]),
            'backfillLimit': Hole('options.backfillLimit', self.pick([(60, ABSENT), (40, lambda: self.rng.choice([1, 3, 100, 100000]))]), [
                bad(0, INVAL, w=2), bad(100001, INVAL, w=2), bad(-1, INVAL), bad(Raw('1.5'), INVAL),
                bad('5', INVAL), bad(None, INVAL), bad(Raw('1e400'), INVAL), bad(I64_MAX, INVAL),
                # docs/errors.md: "2.0 counts as 2"; a2_schedule refuses it
                bad(Raw('2.0'), OK, INVAL, w=0.5)]),
            'graceMs': Hole('options.graceMs', self.pick([(60, ABSENT), (40, lambda: self.rng.choice([0, 1000, 60000, 999999999999999]))]), [
                bad(-1, INVAL, w=2), bad(Raw('1.5'), INVAL), bad('1000', INVAL), bad(None, INVAL),
                bad(Raw('1e400'), INVAL), bad(1000000000000000, INVAL), bad(True, INVAL)]),
            'paused': Hole('options.paused', self.pick([(70, ABSENT), (30, lambda: self.rng.choice([True, False]))]), [
                bad('true', INVAL), bad(1, INVAL), bad(None, INVAL)]),
            'zone': Hole('options.zone', ABSENT, [bad('UTC', INVAL, w=2)]),
        }
        valid = self.pick([(15, SqlArg("'{}'::jsonb")), (85, JsonArg(opts))])
        return Hole('options', valid, [
            bad(SqlArg('NULL::jsonb'), NULL_CODE, w=2), bad(JsonArg([]), INVAL, w=2), bad(JsonArg('x'), INVAL),
            bad(JsonArg(None), INVAL), bad(JsonArg([{'missed': 'skip'}]), INVAL),
        ])

    def f_schedule(self):
        sess = Hole('session_id', SqlArg(sql_text(self.rng.choice(self.SCHED_SESSIONS))), self.name_bad_sql())
        return 'a2_schedule', [self.sched_name_arg(), self.spec_arg(), sess, self.sched_event(),
                               self.sched_options()], 4

    def sched_lookup_arg(self, missing):
        """The name argument of the calls that look a schedule up: a name
        a2_schedule refuses is just one no schedule has (docs/functions.md:
        only NULL is an error), so it answers `missing`."""
        h = self.sched_name_arg()
        h.bad = [(v, codes if NULL_CODE in codes else frozenset({missing}), w) for v, codes, w in h.bad]
        return h

    def f_unschedule(self):
        return 'a2_unschedule', [self.sched_lookup_arg(OK)], 1

    def f_pause_schedule(self):
        return 'a2_pause_schedule', [self.sched_lookup_arg(NOT_FOUND)], 1

    def f_resume_schedule(self):
        return 'a2_resume_schedule', [self.sched_lookup_arg(NOT_FOUND)], 1

    def f_fire_schedules(self):
        v = self.pick([(50, 'NULL::integer'), (20, "'1'::integer"), (15, "'2'::integer"), (15, "'1000'::integer")])
        # its one argument is the only hole: most cases keep it valid, so
        # that passes fire what the cases scheduled
        badlist = [] if self.rng.random() < 0.6 else [
            bad(SqlArg("'0'::integer"), INVAL, w=2), bad(SqlArg("'-1'::integer"), INVAL),
            bad(SqlArg("'%d'::integer" % I32_MIN), INVAL), bad(SqlArg("'1.5'::integer"), CAST, w=0.5)]
        return 'a2_fire_schedules', [Hole('max_schedules', SqlArg(v), badlist)], 0

    def f_schedule_ticks(self):
        zone = Hole('timezone', SqlArg(sql_text(self.rng.choice(self.ZONES_OK))), [
            bad(SqlArg("'Mars/Olympus_Mons'::text"), INVAL, w=2), bad(SqlArg("''::text"), INVAL),
            bad(SqlArg('NULL::text'), NULL_CODE, w=2)])
        after = Hole('after', SqlArg(self.ts_valid()), self.ts_bad(True))
        count = Hole('count', SqlArg("'%d'::integer" % self.rng.choice([0, 1, 1, 3, 10, 100000])), [
            bad(SqlArg("'100001'::integer"), INVAL, w=2), bad(SqlArg("'-1'::integer"), INVAL, w=2),
            bad(SqlArg("'%d'::integer" % I32_MAX), INVAL), bad(SqlArg('NULL::integer'), NULL_CODE)])
        return 'a2_schedule_ticks', [self.spec_arg(), zone, after, count], 3

    def f_list_schedules(self):
        return 'a2_list_schedules', [], 0

    def reducer_arg(self):
        return self.name_arg('reducer_name', ['r1', 'r1', 'r2'])

    def f_read_state(self):
        bound = lambda p: self.sql_int(p, 'bigint', 0, [0, 1, 2, 3, 5, 8], required=False, null_weight=60)
        return 'a2_read_state', [self.session_arg(), self.reducer_arg(), bound('through_index'),
                                 bound('snapshot_through_index')], 2

    def f_read_states(self):
        n = self.pick([(10, 0), (40, 1), (30, 2), (20, lambda: self.rng.randint(3, 6))])
        elems = []
        for i in range(n):
            p = 'requests[%d]' % i
            req = {'sessionId': Hole(p + '.sessionId', self.session_name(), self.name_bad_json(True))}
            for key in ('throughIndex', 'snapshotThroughIndex'):
                v = self.pick([(50, ABSENT), (10, None), (40, lambda: self.int_forms(self.rng.choice([0, 1, 2, 3, 5, 8])))])
                req[key] = Hole(p + '.' + key, v, self.json_int_bad(0, False))
            req['through'] = Hole(p + '.through', ABSENT, [bad(1, INVAL), bad(None, INVAL, w=0.5)])
            elems.append(Hole(p, req, [bad('fz:s1', INVAL), bad(None, INVAL), bad([], INVAL), bad(1, INVAL)]))
        valid = JsonArg(elems)
        if self.rng.random() < 0.01:
            valid = SqlArg("(SELECT jsonb_agg(jsonb_build_object('sessionId', 'fz:none:' || g)) FROM generate_series(1, %d) g)"
                           % LIST_LIMIT, '10000 requests')
        requests = Hole('requests', valid, [
            bad(SqlArg('NULL::jsonb'), NULL_CODE, w=2), bad(JsonArg({'sessionId': 'fz:s1'}), INVAL, w=2),
            bad(JsonArg('fz:s1'), INVAL), bad(JsonArg(None), INVAL),
            bad(SqlArg("(SELECT jsonb_agg(jsonb_build_object('sessionId', 'fz:none:' || g)) FROM generate_series(1, %d) g)"
                       % (LIST_LIMIT + 1), '10001 requests'), INVAL, w=0.4),
        ])
        return 'a2_read_states', [requests, self.reducer_arg()], 2

    def f_put_snapshots(self):
        n = self.pick([(10, 0), (45, 1), (30, 2), (15, 3)])
        elems = []
        for i in range(n):
            p = 'snapshots[%d]' % i
            pins_valid = self.pick([(50, ABSENT), (10, None), (10, []),
                                    (30, lambda: [Hole('%s.pinEventIndexes[%d]' % (p, j), self.int_forms(self.rng.randint(1, 12)),
                                                       self.json_int_bad(1, True, in_list=True))
                                                  for j in range(self.rng.randint(1, 4))])])
            snap = {
                'index': self.json_int(p + '.index', 0, [0, 1, 2, 3, 4, 5, 6, 8]),
                'state': Hole(p + '.state', self.payload_valid(), self.json_cast_bad()[:3]),
                'pinEventIndexes': Hole(p + '.pinEventIndexes', pins_valid, [
                    bad(1, INVAL), bad('1', INVAL), bad({}, INVAL), bad(True, INVAL),
                    bad(Sql("(SELECT jsonb_agg(g) FROM generate_series(1, %d) g)" % (LIST_LIMIT + 1),
                            '10001 pins'), INVAL, w=0.4),
                ]),
                'pins': Hole(p + '.pins', ABSENT, [bad([1], INVAL), bad(None, INVAL, w=0.5)]),
            }
            elems.append(Hole(p, snap, [bad(1, INVAL), bad(None, INVAL), bad([], INVAL), bad('s', INVAL)]))
        valid = JsonArg(elems)
        if self.rng.random() < 0.01:
            valid = JsonArg([{'index': 9, 'state': 1,
                              'pinEventIndexes': Sql("(SELECT jsonb_agg(g) FROM generate_series(1, %d) g)" % LIST_LIMIT,
                                                     '10000 pins')}])
        snapshots = Hole('snapshots', valid, [
            bad(SqlArg('NULL::jsonb'), NULL_CODE, w=2), bad(JsonArg({'index': 1, 'state': 1}), INVAL, w=2),
            bad(JsonArg(None), INVAL), bad(JsonArg(3), INVAL),
            bad(SqlArg("(SELECT jsonb_agg(jsonb_build_object('index', g, 'state', g)) FROM generate_series(1, %d) g)"
                       % (LIST_LIMIT + 1), '10001 snapshots'), INVAL, w=0.4),
        ])
        return 'a2_put_snapshots', [self.session_arg(), self.reducer_arg(), snapshots], 3

    def ns_arg(self, path):
        return self.name_arg(path, ['fz:ns1', 'fz:ns1', 'fz:ns2'])

    def f_presence_set(self):
        n = self.pick([(10, 0), (45, 1), (30, 2), (15, 3)])
        pairs = []
        for i in range(n):
            p = 'values.field%d' % i
            name = self.pick([(85, lambda: self.rng.choice(['status', 'cursor', 'typing', 'f\u00e9'])),
                              (15, self.weird_name)])
            key = Hole(p + '<name>', name, [bad('', INVAL), bad('a' * 1025, INVAL),
                                            bad('\U0001F600' * 256 + 'a', INVAL)])
            val = self.pick([(70, self.rand_json), (25, None), (5, self.payload_valid)])
            if val is ABSENT:
                val = None
            pairs.append((key, Hole(p, val, self.json_cast_bad()[:2])))
        valid = JsonArg(Pairs(pairs))
        if self.rng.random() < 0.01:
            valid = SqlArg("(SELECT jsonb_object_agg('f' || g, g) FROM generate_series(1, %d) g)" % LIST_LIMIT,
                           '10000 fields')
        values = Hole('values', valid, [
            bad(SqlArg('NULL::jsonb'), NULL_CODE, w=2), bad(JsonArg([]), INVAL, w=2),
            bad(JsonArg([{'status': 1}]), INVAL), bad(JsonArg('x'), INVAL), bad(JsonArg(1), INVAL),
            bad(JsonArg(None), INVAL), bad(JsonArg(False), INVAL),
            bad(SqlArg("(SELECT jsonb_object_agg('f' || g, g) FROM generate_series(1, %d) g)" % (LIST_LIMIT + 1),
                       '10001 fields'), INVAL, w=0.4),
        ])
        at = Hole('at', SqlArg(self.ts_valid()), self.ts_bad(True))
        seen = self.pick([(60, lambda: str(self.rng.randint(0, 100))), (10, str(I64_MAX)), (10, str(I64_MIN)),
                          (10, '-1'), (10, str(self.now_ms))])
        seen = Hole('seen', SqlArg("'%s'::bigint" % seen), [
            bad(SqlArg('NULL::bigint'), NULL_CODE, w=2),
            bad(SqlArg("'9223372036854775808'::bigint"), CAST), bad(SqlArg("'0.5'::bigint"), CAST)])
        return 'a2_presence_set', [self.ns_arg('ns'), self.name_arg('participant', ['p1', 'p2', 'p3']),
                                   values, at, seen, self.ttl_arg('ttl_ms')], 6

    def f_presence_read(self):
        return 'a2_presence_read', [self.ns_arg('ns')], 1

    FUNCS = ['f_append', 'f_read', 'f_claim', 'f_renew', 'f_complete', 'f_fail',
             'f_read_state', 'f_read_states', 'f_put_snapshots', 'f_presence_set',
             'f_presence_read', 'f_claim_next', 'f_redrive', 'f_redrive_session', 'f_cancel',
             'f_schedule', 'f_unschedule', 'f_pause_schedule', 'f_resume_schedule', 'f_fire_schedules',
             'f_schedule_ticks', 'f_list_schedules']
    WEIGHTS = [16, 8, 10, 8, 12, 10, 7, 7, 9, 9, 4, 6, 5, 2, 4,
               8, 1, 1.5, 1.5, 4, 3, 0.5]
    # schedule calls run at their own clock, 14 years after the others, so
    # that no tick of theirs is due on the wall clock: the background
    # scheduler never fires them, only the cases' a2_fire_schedules does
    SCHED_FUNCS = {'a2_schedule', 'a2_unschedule', 'a2_pause_schedule', 'a2_resume_schedule',
                   'a2_fire_schedules', 'a2_list_schedules'}
    SCHED_CLOCK_MS = 441_504_000_000

    # Parameter types, and whether each is required (SPEC 5, NULL).
    SIGNATURES = {
        'a2_append': [('text', True), ('jsonb', True)],
        'a2_read': [('text', True), ('bigint', False), ('bigint', False), ('integer', False)],
        'a2_claim': [('text', True), ('text', True), ('bigint', True), ('timestamptz', False), ('bigint[]', False),
                     ('text[]', False)],
        'a2_renew': [('text', True), ('text', True), ('jsonb', True), ('bigint', True), ('timestamptz', False)],
        'a2_complete': [('text', True), ('bigint', True), ('integer', True), ('jsonb', False)],
        'a2_fail': [('text', True), ('bigint', True), ('integer', True), ('text', False), ('integer', True),
                    ('bigint', False)],
        'a2_read_state': [('text', True), ('text', True), ('bigint', False), ('bigint', False)],
        'a2_read_states': [('jsonb', True), ('text', True)],
        'a2_put_snapshots': [('text', True), ('text', True), ('jsonb', True)],
        'a2_presence_set': [('text', True), ('text', True), ('jsonb', True), ('timestamptz', True),
                            ('bigint', True), ('bigint', True)],
        'a2_presence_read': [('text', True)],
        'a2_claim_next': [('text', True), ('bigint', True), ('integer', True), ('timestamptz', False),
                          ('text[]', False)],
        'a2_redrive': [('text', True), ('bigint', True)],
        'a2_redrive_session': [('text', True)],
        'a2_cancel': [('text', True), ('bigint[]', False), ('text', False)],
        'a2_schedule': [('text', True), ('text', True), ('text', True), ('jsonb', True), ('jsonb', True)],
        'a2_unschedule': [('text', True)],
        'a2_pause_schedule': [('text', True)],
        'a2_resume_schedule': [('text', True)],
        'a2_fire_schedules': [('integer', False)],
        'a2_schedule_ticks': [('text', True), ('text', True), ('timestamptz', True), ('integer', True)],
        'a2_list_schedules': [],
    }

    def null_cases(self):
        """SQL NULL in every argument position of every function, the
        other arguments valid: 22004 when required, else a valid call."""
        out = []
        for fname in self.FUNCS:
            sig = self.SIGNATURES['a2_' + fname[2:]]
            for pos, (typ, required) in enumerate(sig):
                out.append((fname, pos, typ, required))
        return out

    # -- one case

    def case(self, cid, forced_null=None):
        self.now_ms += self.rng.randint(0, 2500)
        if forced_null:
            fname = forced_null[0]
        else:
            fname = self.rng.choices(self.FUNCS, self.WEIGHTS)[0]
        fn, args, min_args = getattr(self, fname)()

        # zero, one or two replacements
        k = 0 if forced_null else self.pick([(30, 0), (62, 1), (8, 2)])
        chosen = []
        for _ in range(k):
            cands = [h for h in holes_of(args, []) if h.bad]
            if not cands:
                break
            h = self.rng.choice(cands)
            weights = [b[2] for b in h.bad]
            h.chosen = self.rng.choices(range(len(h.bad)), weights)[0]
            chosen.append(h)

        # SPEC: expires_at, when given, replaces now + ttl_ms; whether a
        # ttl_ms that would overflow is still refused then is not specified
        if fn in ('a2_claim', 'a2_renew', 'a2_claim_next'):
            ttl, exp = {'a2_claim': (2, 3), 'a2_renew': (3, 4), 'a2_claim_next': (1, 3)}[fn]
            ttl, exp = args[ttl], args[exp]
            if resolve(exp).expr != 'NULL::timestamptz' and ttl.chosen in ttl.overflow:
                ttl.bad[ttl.chosen] = (ttl.bad[ttl.chosen][0], frozenset({OK, INVAL}), 1)

        r = Renderer(self.rng)
        exprs = [r.arg(a) for a in args]
        # sometimes leave trailing optional arguments to their defaults
        if self.rng.random() < 0.4:
            while len(exprs) > min_args and exprs[-1].startswith('NULL::') and \
                    not any(h.chosen is not None and h is args[len(exprs) - 1] for h in chosen):
                exprs.pop()

        label_extra = ''
        if forced_null:
            _, pos, typ, required = forced_null
            while len(exprs) <= pos:
                exprs.append('NULL::' + self.SIGNATURES[fn][len(exprs)][0])
            exprs[pos] = 'NULL::' + typ
            label_extra = ': argument %d <- NULL' % (pos + 1)
            if required:
                chosen = [Hole('arg%d' % (pos + 1), None, [bad(None, NULL_CODE)])]
                chosen[0].chosen = 0

        expect = set()
        all_may_pass = True
        for h in chosen:
            codes = h.bad[h.chosen][1]
            expect |= codes - {OK}
            if OK not in codes:
                all_may_pass = False
        if all_may_pass:
            expect |= {OK} | STATE_CODES.get(fn, set())
        if any(CORRUPT_SESSION in e for e in exprs):
            expect.add(CORRUPT)
        # a2_claim_next serves any session, the corrupt one too once a lease
        # an a2_claim took there (excluding the corrupt event) expires
        if fn == 'a2_claim_next' and all_may_pass:
            expect.add(CORRUPT)
        # deep or huge values may exceed the server's stack or size limits
        # while being cast, before a2 runs
        if any("repeat('['" in e or "repeat('{" in e for e in exprs):
            expect.add(CAST)

        label = fn + label_extra
        if chosen and not forced_null:
            label += ': ' + '; '.join('%s <- %r' % (h.path, h.bad[h.chosen][0]) for h in chosen)
        now = iso(self.now_ms + (self.SCHED_CLOCK_MS if fn in self.SCHED_FUNCS else 0))
        return cid, fn, exprs, sorted(expect), now, label[:400]


def iso(ms):
    """Epoch milliseconds as a timestamptz literal, computed exactly."""
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    return t.strftime('%Y-%m-%d %H:%M:%S.') + '%03d+00' % (t.microsecond // 1000)


def iso_z(ms):
    """Epoch milliseconds as a2 prints them: ISO-8601, UTC, milliseconds."""
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    return t.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (t.microsecond // 1000)


def iso_offset(ms, minutes):
    """The same instant as a timestamptz literal at another UTC offset."""
    tz = datetime.timezone(datetime.timedelta(minutes=minutes))
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(milliseconds=ms)
    t = t.astimezone(tz)
    sign = '+' if minutes >= 0 else '-'
    return t.strftime('%Y-%m-%d %H:%M:%S.') + '%03d%s%02d:%02d' % (
        t.microsecond // 1000, sign, abs(minutes) // 60, abs(minutes) % 60)


def dollar(s):
    tag = 'fz'
    while '$%s$' % tag in s:
        tag += 'z'
    return '$%s$%s$%s$' % (tag, s, tag)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seed', type=int, default=20260301)
    ap.add_argument('--cases', type=int, default=3000)
    opts = ap.parse_args()

    g = Gen(opts.seed)
    out = sys.stdout
    out.write('-- generated by test/fuzz/gen_cases.py --seed %d --cases %d\n' % (opts.seed, opts.cases))
    nulls = g.null_cases()
    for cid in range(1, opts.cases + 1):
        forced = nulls[cid - 1] if cid <= len(nulls) else None
        cid, fn, exprs, expect, now, label = g.case(cid, forced)
        out.write('INSERT INTO a2_fuzz.cases (id, fn, args, expect, now, label) VALUES (%d, %s, ARRAY[%s]::text[], %s, %s, %s);\n' % (
            cid, sql_str(fn), ', '.join(dollar(e) for e in exprs),
            sql_str('{' + ','.join(expect) + '}') + '::text[]', sql_str(now), dollar(label)))


if __name__ == '__main__':
    main()
