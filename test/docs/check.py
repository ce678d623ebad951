#!/usr/bin/python3
"""test/docs/check.py: keep docs/ true to the code (run by test/suites/05-docs.sh).

    check.py functions docs/functions.md PROCS      every function of the extension
                                                    documented, with its exact signature
    check.py errors docs/errors.md ERRCODES_H       the error table lists exactly the
                                                    SQLSTATEs src/*.c and src/sql/objects/*.sql raise
    check.py snippets docs/clients.md               every code block of the cookbook is
                                                    a verbatim excerpt of a program
    check.py links README.md docs/*.md              relative links and #anchors resolve

PROCS has one line per function of the extension, as psql -At prints
  name|pg_get_function_arguments|pg_get_function_result
ERRCODES_H is PostgreSQL's utils/errcodes.h (ERRCODE_* macro -> SQLSTATE).
Paths are relative to the repository root (the current directory).
Exit status 0 = docs agree; otherwise each disagreement is printed.
"""

import glob
import os
import re
import sys
import textwrap

TYPE_ALIASES = {
    "timestamptz": "timestamp with time zone",
    "int": "integer",
    "int4": "integer",
    "int8": "bigint",
    "bool": "boolean",
    "varchar": "character varying",
}

problems = []


def problem(msg):
    problems.append(msg)


def split_top(s, sep=","):
    """Split at sep outside quotes, parentheses and brackets."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in s:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def norm_type(t):
    t = " ".join(t.split())
    base, arr = (t[:-2], "[]") if t.endswith("[]") else (t, "")
    return TYPE_ALIASES.get(base, base) + arr


def norm_arg(a):
    """'[OUT] name type [DEFAULT expr]' with casts in defaults removed."""
    a = " ".join(a.split())
    default = None
    m = re.search(r"\s+DEFAULT\s+(.*)$", a, re.I)
    if m:
        default = re.sub(r"::[a-z ]+(\[\])?$", "", m.group(1).strip())
        a = a[:m.start()]
    words = a.split(" ")
    mode = ""
    if words[0] in ("IN", "OUT", "INOUT", "VARIADIC"):
        mode, words = words[0], words[1:]
    name, typ = words[0].strip('"'), norm_type(" ".join(words[1:]))
    return (mode, name, typ, default)


def norm_result(r):
    r = " ".join(r.split())
    m = re.match(r"TABLE\s*\((.*)\)$", r)
    if m:
        return "TABLE(" + ", ".join(" ".join(x for x in norm_arg(c)[1:3]) for c in split_top(m.group(1))) + ")"
    return norm_type(r)


def signature(name, args, result):
    return (name, tuple(norm_arg(a) for a in split_top(args)), norm_result(result))


def show(sig):
    name, args, result = sig
    parts = []
    for mode, n, t, d in args:
        parts.append(" ".join(x for x in (mode, n, t) if x) + (f" DEFAULT {d}" if d is not None else ""))
    return f"{name}({', '.join(parts)}) RETURNS {result}"


def code_blocks(text):
    """(start line, info string, body) of every fenced block."""
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = re.match(r"^(\s*)(```+)(.*)$", lines[i])
        if m:
            fence, start, body = m.group(2), i, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            blocks.append((start, m.group(3).strip(), body))
        i += 1
    return blocks


def check_functions(doc, procs):
    text = open(doc, encoding="utf-8").read()
    documented = {}
    for start, info, body in code_blocks(text):
        joined = " ".join(" ".join(body).split())
        m = re.match(r"^(a2_\w+)\s*\((.*)\)\s+RETURNS\s+(.+)$", joined)
        if not m:
            continue
        sig = signature(m.group(1), m.group(2), m.group(3))
        documented[sig] = start + 1
    actual = set()
    for line in open(procs, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line:
            continue
        name, args, result = line.split("|")
        actual.add(signature(name, args, result))
    for sig in sorted(actual - set(documented)):
        problem(f"{doc}: no signature block for {show(sig)}")
    for sig in sorted(set(documented) - actual):
        problem(f"{doc}:{documented[sig]}: documents {show(sig)}, which the extension does not have")
    # every function also has its own heading
    for sig in actual:
        if not re.search(r"^#{2,4} " + re.escape(sig[0]) + r"\s*$", text, re.M):
            problem(f"{doc}: no heading '### {sig[0]}'")
    print(f"functions: {len(actual)} in the extension, {len(documented)} signature blocks in {doc}")


def raised_sqlstates(errcodes_h):
    """SQLSTATEs the C code and the SQL scripts raise."""
    macros = {}
    headers = [errcodes_h] + glob.glob("src/*.h")
    for h in headers:
        for m in re.finditer(r"#define\s+(ERRCODE_\w+)\s+MAKE_SQLSTATE\(\s*'(.)'\s*,\s*'(.)'\s*,\s*'(.)'\s*,"
                             r"\s*'(.)'\s*,\s*'(.)'\s*\)", open(h, encoding="utf-8").read()):
            macros[m.group(1)] = "".join(m.group(i) for i in range(2, 7))
    found = {}
    for f in sorted(glob.glob("src/*.c") + glob.glob("src/*.h")):
        for m in re.finditer(r"\b(?:GUC_check_)?errcode\s*\(\s*(\w+)\s*\)", open(f, encoding="utf-8").read()):
            code = macros.get(m.group(1))
            if code is None:
                problem(f"{f}: errcode({m.group(1)}) is not a known SQLSTATE macro")
                continue
            found.setdefault(code, set()).add(f)
    for f in sorted(glob.glob("src/sql/objects/*.sql")):
        for m in re.finditer(r"ERRCODE\s*=\s*'([0-9A-Z]{5})'", open(f, encoding="utf-8").read()):
            found.setdefault(m.group(1), set()).add(f)
    return found


def table_codes(text, heading):
    """SQLSTATEs in the first column of the table under a heading."""
    m = re.search(r"^#{2,3} " + re.escape(heading) + r"\s*$", text, re.M)
    if not m:
        problem(f"errors: no heading '{heading}'")
        return set()
    codes = set()
    rest = text[m.end():]
    nxt = re.search(r"^#{1,3} ", rest, re.M)
    section = rest[:nxt.start()] if nxt else rest
    for line in section.split("\n"):
        cm = re.match(r"^\|\s*`([0-9A-Z]{5})`", line)
        if cm:
            codes.add(cm.group(1))
    return codes


def check_errors(doc, errcodes_h):
    text = open(doc, encoding="utf-8").read()
    raised = raised_sqlstates(errcodes_h)
    listed = table_codes(text, "SQLSTATEs a2 raises")
    for code in sorted(set(raised) - listed):
        problem(f"{doc}: SQLSTATE {code} is raised by {', '.join(sorted(raised[code]))} "
                f"but not in the table 'SQLSTATEs a2 raises'")
    for code in sorted(listed - set(raised)):
        problem(f"{doc}: the table 'SQLSTATEs a2 raises' lists {code}, which no errcode in src/ "
                f"or ERRCODE in src/sql/objects/*.sql raises")
    print(f"errors: {len(raised)} SQLSTATEs raised ({' '.join(sorted(raised))}), {len(listed)} listed")


def check_snippets(doc):
    text = open(doc, encoding="utf-8").read()
    lines = text.split("\n")
    count = 0
    for start, info, body in code_blocks(text):
        marker = None
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            marker = re.match(r"^<!--\s*from\s+(\S+)\s*-->$", lines[j].strip())
        if not marker:
            problem(f"{doc}:{start + 1}: code block without '<!-- from examples/clients/... -->' "
                    "(a snippet the suite does not run is not in the cookbook)")
            continue
        path = marker.group(1)
        if not os.path.isfile(path):
            problem(f"{doc}:{start + 1}: {path} does not exist")
            continue
        src = open(path, encoding="utf-8").read().split("\n")
        want = [ln.rstrip() for ln in body]
        while want and not want[-1]:
            want.pop()
        n = len(want)
        # verbatim up to a common indentation (an excerpt from inside a function)
        dedent = lambda lines: textwrap.dedent("\n".join(ln.rstrip() for ln in lines))  # noqa: E731
        if n == 0 or not any(dedent(src[i:i + n]) == dedent(want) for i in range(len(src) - n + 1)):
            problem(f"{doc}:{start + 1}: this block is not a verbatim excerpt of {path}")
        count += 1
    print(f"snippets: {count} code blocks in {doc}, each a verbatim excerpt of a program")


def slug(heading):
    """GitHub's anchor for a heading: links unwrapped, lower case, only
    letters, digits, '_', '-' and spaces kept, spaces turned into '-'."""
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    text = open(path, encoding="utf-8").read()
    seen, out = {}, set()
    in_code = False
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            in_code = not in_code
            continue
        m = None if in_code else re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            out.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
    return out


def check_links(files):
    count = 0
    for f in files:
        text = open(f, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            count += 1
            if not os.path.exists(dest):
                problem(f"{f}: link to {target}: {dest} does not exist")
            elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problem(f"{f}: link to {target}: no heading with anchor #{anchor} in {dest}")
    print(f"links: {count} relative links in {len(files)} files")


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "functions":
        check_functions(*args)
    elif cmd == "errors":
        check_errors(*args)
    elif cmd == "snippets":
        check_snippets(*args)
    elif cmd == "links":
        check_links(args)
    else:
        sys.exit(__doc__)
    for p in problems:
        print("DOCS: " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main(sys.argv)
