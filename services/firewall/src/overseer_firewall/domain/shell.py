"""What a ``shell.run`` command would run, read from its parsed arguments rather than its text.

A glob over the command's text is beaten by spelling: ``rm -fr``, ``rm -r -f``,
``rm --recursive --force``, ``/bin/rm -rf``, ``r''m -rf``, ``sudo rm -rf``,
``xargs rm -rf``, ``sh -c 'rm -rf x'``, ``echo $(rm -rf x)``. So the command is
tokenised the way a POSIX shell does (quotes, escapes, operators, comments,
command and process substitutions), split into simple commands on ``;``,
``&``, ``&&``, ``||``, ``|``, newlines, parentheses and backquotes, and every
simple command becomes an :class:`Invocation`: the program's base name, its
options normalised (clusters split, long names and aliases resolved per
program, GNU prefixes included) and its operands. Wrappers that run another
command (``sudo``, ``env``, ``xargs``, ``timeout``, ``nice``, ``find -exec``,
``sh -c``, ``eval`` …) add the command they run as an invocation of its own.

An admin rule names invocations with the same syntax (``"rm -r -f"``,
``"dd of=/dev/*"``, ``"mkfs*"``): a pattern matches an invocation whose
program matches its program glob, that has all of its options (however they
were spelled) and, for each operand glob, an operand matching it.

Parsing over-approximates what runs: when in doubt, text is read as commands
(a here-document's lines, a quoted word fed to a shell's standard input).
What cannot be known before running (a program name in an unknown variable, a
script file) makes the command not :attr:`ParsedCommand.simple`, and a rule
that would lower a command's level needs a simple one. The jail the executor
runs commands in is the wall; this is the firewall's reading of intent.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

MAX_DEPTH = 8

# ------------------------------------------------------------------------------ tables ---
# Operators, longest first. Everything else unquoted and not blank is a word.
_OPERATORS = (
    "&>>",
    "<<<",
    "<<-",
    "&&",
    "||",
    ";;",
    "|&",
    "&>",
    ">>",
    "<<",
    "<>",
    ">&",
    "<&",
    ">|",
    ";",
    "&",
    "|",
    "(",
    ")",
    "<",
    ">",
    "\n",
)
_OPERATOR_START = frozenset(op[0] for op in _OPERATORS)
_REDIRECTIONS = frozenset({"&>>", "<<<", "<<-", "&>", ">>", "<<", "<>", ">&", "<&", ">|", "<", ">"})
# Words that open or close a compound command; they are not the program.
_RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time", "coproc"}
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_GLOB_CHARS = frozenset("*?[")
# Variables whose value is known before anything runs (``rm${IFS}-rf`` is ``rm -rf``).
_DEFAULT_VARIABLES = {"IFS": " "}


@dataclass(frozen=True, slots=True)
class ProgramOptions:
    """How one program spells its options: long name or short alias → the canonical flag."""

    long: Mapping[str, str] = field(default_factory=dict)
    short: Mapping[str, str] = field(default_factory=dict)
    # Short options whose value follows (in the cluster or as the next word).
    values: frozenset[str] = frozenset()
    # ``-delete`` is one option, not a cluster (find).
    single_dash_words: bool = False


_RM = ProgramOptions(
    long={
        "recursive": "r",
        "force": "f",
        "dir": "d",
        "verbose": "v",
        "interactive": "interactive",
        "one-file-system": "one-file-system",
        "no-preserve-root": "no-preserve-root",
        "preserve-root": "preserve-root",
        "help": "help",
        "version": "version",
    },
    short={"R": "r"},
)
_RECURSIVE_R = ProgramOptions(
    long={
        "recursive": "R",
        "changes": "c",
        "silent": "f",
        "quiet": "f",
        "verbose": "v",
        "reference": "reference",
    }
)
PROGRAM_OPTIONS: Mapping[str, ProgramOptions] = {
    "rm": _RM,
    "chmod": _RECURSIVE_R,
    "chown": _RECURSIVE_R,
    "chgrp": _RECURSIVE_R,
    "shred": ProgramOptions(
        long={"remove": "u", "zero": "z", "force": "f", "iterations": "n", "exact": "x", "verbose": "v"},
        values=frozenset("ns"),
    ),
    "find": ProgramOptions(single_dash_words=True),
}
_GENERIC = ProgramOptions()


@dataclass(frozen=True, slots=True)
class Wrapper:
    """A program that runs another command given in its arguments.

    ``values``/``long_values``: options whose value is a separate word (or
    attached); ``leading``: operands before the command (``timeout 5 cmd``);
    ``shell_text``: options whose value is shell text (``su -c``);
    ``argv_text``: options whose value is a command split on blanks (``env -S``);
    ``assignments``: ``NAME=value`` words come before the command (``env``).
    """

    values: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    leading: int = 0
    shell_text: frozenset[str] = frozenset()
    argv_text: frozenset[str] = frozenset()
    assignments: bool = False


WRAPPERS: Mapping[str, Wrapper] = {
    "sudo": Wrapper(
        values=frozenset("ughpCDrtTU"),
        long_values=frozenset(
            {
                "user",
                "group",
                "host",
                "prompt",
                "close-from",
                "chdir",
                "role",
                "type",
                "command-timeout",
                "other-user",
            }
        ),
    ),
    "doas": Wrapper(values=frozenset("uC")),
    "pkexec": Wrapper(long_values=frozenset({"user"})),
    "su": Wrapper(
        values=frozenset("sgG"),
        long_values=frozenset({"shell", "group", "supp-group", "whitelist-environment"}),
        shell_text=frozenset({"c", "command", "session-command"}),
        leading=1,
    ),
    "runuser": Wrapper(
        values=frozenset("ugGs"),
        long_values=frozenset({"user", "group", "supp-group", "shell"}),
        shell_text=frozenset({"c", "command", "session-command"}),
    ),
    "env": Wrapper(
        values=frozenset("uC"),
        long_values=frozenset({"unset", "chdir"}),
        argv_text=frozenset({"S", "split-string"}),
        assignments=True,
    ),
    "xargs": Wrapper(
        values=frozenset("adEILlnPs"),
        long_values=frozenset({"arg-file", "delimiter", "max-lines", "max-args", "max-procs", "max-chars"}),
    ),
    "nice": Wrapper(values=frozenset("n"), long_values=frozenset({"adjustment"})),
    "ionice": Wrapper(values=frozenset("cnp"), long_values=frozenset({"class", "classdata", "pid"})),
    "nohup": Wrapper(),
    "setsid": Wrapper(),
    "command": Wrapper(),
    "builtin": Wrapper(),
    "exec": Wrapper(values=frozenset("a")),
    "time": Wrapper(values=frozenset("fo"), long_values=frozenset({"format", "output"})),
    "stdbuf": Wrapper(values=frozenset("ioe"), long_values=frozenset({"input", "output", "error"})),
    "timeout": Wrapper(values=frozenset("sk"), long_values=frozenset({"signal", "kill-after"}), leading=1),
    "chroot": Wrapper(long_values=frozenset({"userspec", "groups"}), leading=1),
    "taskset": Wrapper(leading=1),
    "chrt": Wrapper(leading=1),
    "flock": Wrapper(
        values=frozenset("wE"),
        long_values=frozenset({"timeout", "wait", "conflict-exit-code"}),
        shell_text=frozenset({"c", "command"}),
        leading=1,
    ),
    "setpriv": Wrapper(
        long_values=frozenset(
            {
                "reuid",
                "regid",
                "ruid",
                "rgid",
                "euid",
                "egid",
                "groups",
                "inh-caps",
                "ambient-caps",
                "bounding-set",
            }
        )
    ),
    "unshare": Wrapper(values=frozenset(["S", "G", "R", "w"])),
    "nsenter": Wrapper(values=frozenset("tSGrw"), long_values=frozenset({"target", "setuid", "setgid"})),
    "strace": Wrapper(values=frozenset("eoOpPsSuIXbE")),
    "ltrace": Wrapper(values=frozenset("eoplnsuaAD")),
    "unbuffer": Wrapper(),
    "catchsegv": Wrapper(),
    "busybox": Wrapper(),
    "watch": Wrapper(values=frozenset("nq"), long_values=frozenset({"interval", "equexit"})),
}
# Wrappers whose command is shell text joined from their operands.
_TEXT_WRAPPERS = frozenset({"eval", "watch"})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "posh", "yash", "fish", "rbash"})
_SHELL_VALUES = frozenset("oO")
_SHELL_LONG_VALUES = frozenset({"rcfile", "init-file"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


# ------------------------------------------------------------------------------ results ---
@dataclass(frozen=True, slots=True)
class Invocation:
    """One program that would run: its base name, normalised flags, operands and argv as written."""

    program: str
    flags: frozenset[str]
    operands: tuple[str, ...]
    argv: tuple[str, ...]
    # The program name is a glob (``/bin/r?``) the shell would expand.
    program_is_pattern: bool = False


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    invocations: tuple[Invocation, ...]
    # False when what runs cannot be fully known from the text: substitutions, unknown
    # variables, redirections, scripts, a shell fed on its standard input, quotes left open.
    simple: bool


@dataclass(slots=True)
class _Word:
    text: str
    dynamic: bool = False  # holds a $-expansion
    pattern: bool = False  # holds an unquoted glob character


@dataclass(slots=True)
class _Parse:
    invocations: list[Invocation] = field(default_factory=list)
    simple: bool = True
    stdin_shell: bool = False
    words: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- tokenise ---
def _matching_paren(text: str, start: int) -> int:
    """Index of the ``)`` closing the ``(`` just before ``start`` (quotes respected), or -1."""
    depth = 1
    i = start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return -1
            i = end + 1
            continue
        if c == '"':
            i += 1
            while i < len(text) and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _backquote_end(text: str, start: int) -> int:
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            return i
        i += 1
    return -1


def _tokenise(text: str, subs: list[str]) -> tuple[list[_Word | str], bool]:
    """Words and operators (operators as plain ``str``); substitutions' texts go to ``subs``.

    Returns ``(tokens, complete)``: ``complete`` is False when a quote or a
    substitution is left open (the rest is then taken literally).
    """
    tokens: list[_Word | str] = []
    complete = True
    buf: list[str] = []
    in_word = False
    quoted = False
    dynamic = False
    pattern = False
    brace = False
    i = 0
    n = len(text)

    def flush() -> None:
        nonlocal in_word, quoted, dynamic, pattern, brace
        if in_word:
            word = "".join(buf)
            for text_ in _braces(word) if brace else (word,):
                tokens.append(_Word(text_, dynamic, pattern))
        buf.clear()
        in_word = quoted = dynamic = pattern = brace = False

    def substitution(open_at: int) -> int:
        """``$(``, ``<(`` or ``>(`` whose ``(`` is at ``open_at``: record it, return the index after ``)``."""
        nonlocal complete, dynamic
        end = _matching_paren(text, open_at + 1)
        if end < 0:
            complete = False
            subs.append(text[open_at + 1 :])
            return n
        subs.append(text[open_at + 1 : end])
        dynamic = True
        return end + 1

    while i < n:
        c = text[i]
        if c in " \t\r":
            flush()
            i += 1
            continue
        if c == "#" and not in_word:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2
                continue
            buf.append(text[i + 1 : i + 2])
            in_word = quoted = True
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                complete = False
                end = n
            buf.append(text[i + 1 : end])
            in_word = quoted = True
            i = end + 1
            continue
        if c == '"':
            in_word = quoted = True
            i += 1
            while i < n and text[i] != '"':
                d = text[i]
                if d == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
                    if text[i + 1] != "\n":
                        buf.append(text[i + 1])
                    i += 2
                elif d == "$" and text[i + 1 : i + 2] == "(":
                    i = substitution(i + 1)
                    buf.append("$(…)")
                elif d == "`":
                    end = _backquote_end(text, i + 1)
                    if end < 0:
                        complete = False
                        end = n
                    subs.append(text[i + 1 : end])
                    dynamic = True
                    buf.append("`…`")
                    i = end + 1
                else:
                    if d == "$":
                        dynamic = True
                    buf.append(d)
                    i += 1
            if i >= n:
                complete = False
            i += 1
            continue
        if c == "$" and text[i + 1 : i + 2] == "'":  # $'…': ANSI-C quoting
            end = i + 2
            while end < n and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            if end >= n:
                complete = False
            buf.append(_ansi_c(text[i + 2 : end]))
            in_word = quoted = True
            i = end + 1
            continue
        if c == "$" and text[i + 1 : i + 2] == '"':  # $"…": a translated "…"
            i += 1
            continue
        if c == "$" and text[i + 1 : i + 2] == "(":
            i = substitution(i + 1)
            buf.append("$(…)")
            in_word = True
            continue
        if c == "`":
            end = _backquote_end(text, i + 1)
            if end < 0:
                complete = False
                end = n
            subs.append(text[i + 1 : end])
            buf.append("`…`")
            in_word = dynamic = True
            i = end + 1
            continue
        if c in "<>" and text[i + 1 : i + 2] == "(":
            flush()
            i = substitution(i + 1)
            tokens.append(_Word("<(…)", dynamic=True))
            dynamic = False
            continue
        if c in _OPERATOR_START:
            if in_word and c in "<>" and not quoted and buf and "".join(buf).isdigit():
                buf.clear()  # an IO number (2>&1): not an argument
                in_word = False
            flush()
            for op in _OPERATORS:
                if text.startswith(op, i):
                    tokens.append(op)
                    i += len(op)
                    break
            continue
        if c == "$":
            dynamic = True
        elif c in _GLOB_CHARS:
            pattern = True
        elif c == "{":
            brace = True
        buf.append(c)
        in_word = True
        i += 1
    flush()
    return tokens, complete


_ANSI_C = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|u[0-9A-Fa-f]{1,4}|.)", re.DOTALL)
_ANSI_C_NAMED = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v"}
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")
MAX_BRACE_WORDS = 64


def _ansi_c(body: str) -> str:
    """The text of a ``$'…'`` string: ``$'\\x72m'`` is ``rm``."""

    def decode(m: re.Match[str]) -> str:
        code = m.group(1)
        if code[0] == "x":
            return chr(int(code[1:], 16))
        if code[0] == "u" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        return _ANSI_C_NAMED.get(code, code)

    return _ANSI_C.sub(decode, body)


def _braces(word: str) -> list[str]:
    """Brace expansion: ``{rm,-rf,x}`` is three words, ``a{b,c}`` two (at most MAX_BRACE_WORDS)."""
    words = [word]
    for _ in range(MAX_BRACE_WORDS):
        expanded: list[str] = []
        changed = False
        for w in words:
            m = _BRACE.search(w)
            if m is None:
                expanded.append(w)
                continue
            changed = True
            expanded.extend(w[: m.start()] + part + w[m.end() :] for part in m.group(1).split(","))
        words = expanded[:MAX_BRACE_WORDS]
        if not changed:
            break
    return words


# ------------------------------------------------------------------------------- parse ---
def parse_command(text: str) -> ParsedCommand:
    """Every invocation ``text`` could run, wrappers and substitutions included."""
    state = _Parse()
    _parse_text(text, state, dict(_DEFAULT_VARIABLES), 0)
    if state.stdin_shell:
        # A shell reads commands from its standard input: any word around it may be one.
        state.simple = False
        for word in list(state.words):
            _parse_text(word, state, dict(_DEFAULT_VARIABLES), 1)
    return ParsedCommand(tuple(dict.fromkeys(state.invocations)), state.simple)


def _parse_text(text: str, state: _Parse, variables: dict[str, str], depth: int) -> None:
    if depth >= MAX_DEPTH:
        state.simple = False
        return
    subs: list[str] = []
    tokens, complete = _tokenise(text, subs)
    if not complete:
        state.simple = False
    if subs:
        state.simple = False
    for sub in subs:
        _parse_text(sub, state, variables, depth + 1)
    current: list[_Word] = []
    skip_next = False
    for token in tokens:
        if isinstance(token, str):
            if token in _REDIRECTIONS:
                state.simple = False
                skip_next = True
                continue
            _simple_command(current, state, variables, depth)
            current = []
            continue
        if skip_next:
            skip_next = False
            continue
        current.append(token)
    _simple_command(current, state, variables, depth)


def _expand(word: _Word, variables: Mapping[str, str]) -> tuple[list[str], bool]:
    """The word with known variables substituted (and then split on blanks); False if some stay unknown."""
    if not word.dynamic:
        return [word.text], True
    known = True

    def replace(m: re.Match[str]) -> str:
        nonlocal known
        name = m.group(1) or m.group(2)
        if name in variables:
            return variables[name]
        known = False
        return m.group(0)

    text = _VARIABLE.sub(replace, word.text)
    if "$" in text or "`" in text:
        known = False
    return (text.split() or [""]), known


def _simple_command(words: list[_Word], state: _Parse, variables: dict[str, str], depth: int) -> None:
    while words and not words[0].dynamic and words[0].text in _RESERVED:
        words = words[1:]
    assigned: dict[str, str] = {}
    while words and "=" in words[0].text and _NAME.fullmatch(words[0].text.split("=", 1)[0]):
        name, value = words[0].text.split("=", 1)
        if words[0].dynamic:
            expanded, known = _expand(_Word(value, True), variables)
            if known:
                assigned[name] = " ".join(expanded)
        else:
            assigned[name] = value
        words = words[1:]
    if not words:
        variables.update(assigned)  # X=rm; $X -rf …
        return
    scope = {**variables, **assigned}
    argv: list[str] = []
    for index, word in enumerate(words):
        expanded, known = _expand(word, scope)
        if not known:
            state.simple = False
        argv.extend(expanded)
        if index > 0:
            state.words.extend(expanded)
    if not argv or not argv[0]:
        state.simple = False
        return
    if words[0].pattern:
        state.simple = False  # the shell expands the program's name: /bin/r?
    _invocations(argv, state, depth, program_is_pattern=words[0].pattern)


def _invocations(argv: list[str], state: _Parse, depth: int, *, program_is_pattern: bool = False) -> None:
    """``argv``'s invocation, then those of the command it wraps."""
    if depth >= MAX_DEPTH:
        state.simple = False
        return
    invocation = make_invocation(argv, program_is_pattern=program_is_pattern)
    state.invocations.append(invocation)
    program = invocation.program
    if program in SHELLS:
        _shell(argv, state, depth)
    elif program in _TEXT_WRAPPERS:
        inner, texts = _unwrap(argv, WRAPPERS.get(program, Wrapper()))
        if inner:
            _parse_text(" ".join(inner), state, dict(_DEFAULT_VARIABLES), depth + 1)
        for text in texts:
            _parse_text(text, state, dict(_DEFAULT_VARIABLES), depth + 1)
    elif program in WRAPPERS:
        inner, texts = _unwrap(argv, WRAPPERS[program])
        for text in texts:
            _parse_text(text, state, dict(_DEFAULT_VARIABLES), depth + 1)
        if inner:
            _invocations(inner, state, depth + 1)
    elif program == "find":
        _find_exec(argv, state, depth)


def _unwrap(argv: list[str], spec: Wrapper) -> tuple[list[str], list[str]]:
    """(the wrapped command's argv, shell texts given to options) of a wrapper's argv."""
    texts: list[str] = []
    leading = spec.leading
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            needs_value = name in spec.long_values or name in spec.shell_text or name in spec.argv_text
            if needs_value and not eq and i + 1 < len(argv):
                i += 1
                value = argv[i]
            if name in spec.shell_text or name in spec.argv_text:
                texts.append(value)
            i += 1
            continue
        if arg.startswith("-") and len(arg) > 1 and not (leading and _looks_numeric(arg)):
            for j, ch in enumerate(arg[1:], start=1):
                if ch in spec.values or ch in spec.shell_text or ch in spec.argv_text:
                    value = arg[j + 1 :]
                    if not value and i + 1 < len(argv):
                        i += 1
                        value = argv[i]
                    if ch in spec.shell_text or ch in spec.argv_text:
                        texts.append(value)
                    break
            i += 1
            continue
        if spec.assignments and "=" in arg and _NAME.fullmatch(arg.split("=", 1)[0]):
            i += 1
            continue
        if leading:
            leading -= 1
            i += 1
            continue
        break
    while leading and i < len(argv):  # after "--": the leading operands, then the command
        leading -= 1
        i += 1
    return argv[i:], texts


def _looks_numeric(arg: str) -> bool:
    return arg[1:].replace(".", "", 1).isdigit()


def _shell(argv: list[str], state: _Parse, depth: int) -> None:
    """``sh -c TEXT``: TEXT's invocations. ``sh script``: unknown. ``sh`` alone: reads standard input."""
    command_text = False
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("--", "-"):
            i += 1
            break
        if arg.startswith("--") and len(arg) > 2:
            if arg[2:] in _SHELL_LONG_VALUES:
                i += 1
            elif arg[2:] == "command":
                command_text = True
            i += 1
            continue
        if arg[:1] in "-+" and len(arg) > 1:
            cluster = arg[1:]
            if "c" in cluster:
                command_text = True
            if any(ch in _SHELL_VALUES for ch in cluster):
                i += 1
            if "s" in cluster:
                state.stdin_shell = True
            i += 1
            continue
        break
    operands = argv[i:]
    if command_text:
        if operands:
            _parse_text(operands[0], state, dict(_DEFAULT_VARIABLES), depth + 1)
        return
    state.simple = False
    if not operands:
        state.stdin_shell = True


def _find_exec(argv: list[str], state: _Parse, depth: int) -> None:
    i = 1
    while i < len(argv):
        if argv[i] in _FIND_EXEC:
            end = i + 1
            while end < len(argv) and argv[end] not in (";", "+"):
                end += 1
            inner = [a for a in argv[i + 1 : end] if a != "{}"] or []
            if inner:
                _invocations(inner, state, depth + 1)
            i = end
        i += 1


# ------------------------------------------------------------------------ invocations ---
def program_name(word: str) -> str:
    """``/bin/rm`` → ``rm``."""
    return word.rstrip("/").rsplit("/", 1)[-1] or word


def normalise_flags(program: str, args: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(flags, operands) of ``args``: clusters split, long options and aliases resolved, ``--`` honoured.

    Options may follow operands (GNU argument permutation): ``rm x -rf`` is recursive and forced.
    """
    spec = PROGRAM_OPTIONS.get(program, _GENERIC)
    flags: set[str] = set()
    operands: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if arg == "--":
            operands.extend(items[i:])
            break
        if arg.startswith("--") and len(arg) > 2:
            flags.add(_long_flag(spec, arg[2:].split("=", 1)[0]))
            continue
        if arg.startswith("-") and len(arg) > 1:
            if spec.single_dash_words:
                flags.add(arg[1:])
                continue
            for j, ch in enumerate(arg[1:], start=1):
                flags.add(spec.short.get(ch, ch))
                if ch in spec.values:
                    if j == len(arg) - 1:
                        i += 1  # the value is the next word
                    break
            continue
        operands.append(arg)
    return frozenset(flags), tuple(operands)


def _long_flag(spec: ProgramOptions, name: str) -> str:
    if name in spec.long:
        return spec.long[name]
    candidates = {flag for long, flag in spec.long.items() if long.startswith(name)}
    return candidates.pop() if len(candidates) == 1 else name


def make_invocation(argv: list[str], *, program_is_pattern: bool = False) -> Invocation:
    program = program_name(argv[0])
    flags, operands = normalise_flags(program, argv[1:])
    return Invocation(program, flags, operands, tuple(argv), program_is_pattern)


# ---------------------------------------------------------------------------- patterns ---
@dataclass(frozen=True, slots=True)
class InvocationPattern:
    """``"rm -r -f"``, ``"dd of=/dev/*"``, ``"mkfs*"``: a program glob, flags it needs, operand globs."""

    text: str
    program: str
    flags: frozenset[str]
    operands: tuple[str, ...]

    def matches(self, invocation: Invocation) -> bool:
        if not fnmatchcase(invocation.program, self.program):
            example = "".join(c for c in self.program if c not in _GLOB_CHARS)
            if not (invocation.program_is_pattern and fnmatchcase(example, invocation.program)):
                return False
        if not self.flags <= invocation.flags:
            return False
        return all(any(fnmatchcase(o, glob) for o in invocation.operands) for glob in self.operands)


def parse_pattern(text: str) -> InvocationPattern:
    """An admin rule's invocation pattern; raises ValueError when it is not one simple command."""
    subs: list[str] = []
    tokens, complete = _tokenise(text, subs)
    if not complete or subs or any(isinstance(t, str) for t in tokens) or not tokens:
        raise ValueError(f"{text!r} is not one program with its options and operands")
    words = [t.text for t in tokens if isinstance(t, _Word)]
    program = program_name(words[0])
    flags, operands = normalise_flags(program, words[1:])
    return InvocationPattern(text, program, flags, operands)


def matching(patterns: Iterable[InvocationPattern], parsed: ParsedCommand) -> Invocation | None:
    """The first invocation of ``parsed`` that some pattern matches, or None."""
    pats = tuple(patterns)
    for invocation in parsed.invocations:
        if any(p.matches(invocation) for p in pats):
            return invocation
    return None


def all_match(patterns: Iterable[InvocationPattern], parsed: ParsedCommand) -> bool:
    """Every invocation is matched by a pattern, and nothing unknown runs (what a lowering rule needs)."""
    pats = tuple(patterns)
    return (
        parsed.simple
        and bool(parsed.invocations)
        and all(any(p.matches(i) for p in pats) for i in parsed.invocations)
    )
