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
from collections.abc import Callable, Iterable, Mapping
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
    lexer = _Lexer(text, subs)
    n = len(text)
    while lexer.i < n:
        _BY_CHARACTER.get(text[lexer.i], _Lexer.ordinary)(lexer)
    lexer.flush()
    return lexer.tokens, lexer.complete


@dataclass(slots=True)
class _Lexer:
    """The tokeniser's state: the word being built and where reading is in ``text``.

    Each ``on_…`` method reads what starts at ``text[i]`` (a character class picks it, see
    ``_BY_CHARACTER``) and moves ``i`` past it.
    """

    text: str
    subs: list[str]
    i: int = 0
    tokens: list[_Word | str] = field(default_factory=list)
    complete: bool = True
    buf: list[str] = field(default_factory=list)
    in_word: bool = False
    quoted: bool = False  # part of the word was quoted or escaped
    dynamic: bool = False  # the word holds a $-expansion or a substitution
    pattern: bool = False  # the word holds an unquoted glob character
    brace: bool = False  # the word holds an unquoted "{"

    def flush(self) -> None:
        """End the word being built (brace-expanded into several when it has a ``{``)."""
        if self.in_word:
            word = "".join(self.buf)
            for text in _braces(word) if self.brace else (word,):
                self.tokens.append(_Word(text, self.dynamic, self.pattern))
        self.buf.clear()
        self.in_word = self.quoted = self.dynamic = self.pattern = self.brace = False

    def quoted_part(self, part: str, end: int) -> None:
        self.buf.append(part)
        self.in_word = self.quoted = True
        self.i = end

    def substitution(self, open_at: int) -> None:
        """``$(``, ``<(`` or ``>(`` whose ``(`` is at ``open_at``: its text to ``subs``, ``i`` past ``)``."""
        end = _matching_paren(self.text, open_at + 1)
        if end < 0:
            self.complete = False
            self.subs.append(self.text[open_at + 1 :])
            self.i = len(self.text)
            return
        self.subs.append(self.text[open_at + 1 : end])
        self.dynamic = True
        self.i = end + 1

    def backquoted(self, start: int) -> None:
        """The `` `…` `` whose text starts at ``start``: its text to ``subs``, ``i`` past the closing quote."""
        end = _backquote_end(self.text, start)
        if end < 0:
            self.complete = False
            end = len(self.text)
        self.subs.append(self.text[start:end])
        self.buf.append("`…`")
        self.dynamic = True
        self.i = end + 1

    # -- one handler per character class ---------------------------------------------------------
    def on_blank(self) -> None:
        self.flush()
        self.i += 1

    def on_hash(self) -> None:
        if self.in_word:  # inside a word "#" is an ordinary character
            self.ordinary()
            return
        end = self.text.find("\n", self.i)
        self.i = len(self.text) if end < 0 else end

    def on_backslash(self) -> None:
        i = self.i
        if self.text[i + 1 : i + 2] == "\n":  # a line continuation
            self.i += 2
            return
        self.quoted_part(self.text[i + 1 : i + 2], i + 2)

    def on_single_quote(self) -> None:
        end = self.text.find("'", self.i + 1)
        if end < 0:
            self.complete = False
            end = len(self.text)
        self.quoted_part(self.text[self.i + 1 : end], end + 1)

    def on_double_quote(self) -> None:
        text, n = self.text, len(self.text)
        self.in_word = self.quoted = True
        self.i += 1
        while self.i < n and text[self.i] != '"':
            self.double_quoted_character()
        if self.i >= n:
            self.complete = False
        self.i += 1

    def double_quoted_character(self) -> None:
        text, i = self.text, self.i
        c = text[i]
        if c == "\\" and text[i + 1 : i + 2] in _DQ_ESCAPABLE:
            if text[i + 1] != "\n":
                self.buf.append(text[i + 1])
            self.i += 2
        elif c == "$" and text[i + 1 : i + 2] == "(":
            self.substitution(i + 1)
            self.buf.append("$(…)")
        elif c == "`":
            self.backquoted(i + 1)
        else:
            self.dynamic = self.dynamic or c == "$"
            self.buf.append(c)
            self.i += 1

    def on_dollar(self) -> None:
        after = self.text[self.i + 1 : self.i + 2]
        if after == "'":  # $'…': ANSI-C quoting
            self.ansi_c_quoted()
        elif after == '"':  # $"…": a translated "…"
            self.i += 1
        elif after == "(":
            self.substitution(self.i + 1)
            self.buf.append("$(…)")
            self.in_word = True
        else:
            self.dynamic = True
            self.ordinary()

    def ansi_c_quoted(self) -> None:
        text, n = self.text, len(self.text)
        end = self.i + 2
        while end < n and text[end] != "'":
            end += 2 if text[end] == "\\" else 1
        if end >= n:
            self.complete = False
        self.quoted_part(_ansi_c(text[self.i + 2 : end]), end + 1)

    def on_backquote(self) -> None:
        self.backquoted(self.i + 1)
        self.in_word = True

    def on_redirection(self) -> None:
        if self.text[self.i + 1 : self.i + 2] != "(":
            self.on_operator()
            return
        self.flush()  # <(…) or >(…): a process substitution is a word of its own
        self.substitution(self.i + 1)
        self.tokens.append(_Word("<(…)", dynamic=True))
        self.dynamic = False

    def on_operator(self) -> None:
        if self.in_word and self.text[self.i] in "<>" and not self.quoted and "".join(self.buf).isdigit():
            self.buf.clear()  # an IO number (2>&1): not an argument
            self.in_word = False
        self.flush()
        op = next(op for op in _OPERATORS if self.text.startswith(op, self.i))
        self.tokens.append(op)
        self.i += len(op)

    def ordinary(self) -> None:
        """A run of characters with no meaning to the tokeniser, noting globs and braces."""
        found = _ORDINARY.match(self.text, self.i + 1)
        end = found.end() if found else self.i + 1
        run = self.text[self.i : end]
        self.pattern = self.pattern or not _GLOB_CHARS.isdisjoint(run)
        self.brace = self.brace or "{" in run
        self.buf.append(run)
        self.in_word = True
        self.i = end


_DQ_ESCAPABLE = frozenset({"$", "`", '"', "\\", "\n"})
_BY_CHARACTER: Mapping[str, Callable[[_Lexer], None]] = {
    " ": _Lexer.on_blank,
    "\t": _Lexer.on_blank,
    "\r": _Lexer.on_blank,
    "#": _Lexer.on_hash,
    "\\": _Lexer.on_backslash,
    "'": _Lexer.on_single_quote,
    '"': _Lexer.on_double_quote,
    "$": _Lexer.on_dollar,
    "`": _Lexer.on_backquote,
    **{c: _Lexer.on_operator for c in _OPERATOR_START},
    "<": _Lexer.on_redirection,
    ">": _Lexer.on_redirection,
}
# Characters no handler claims; "#" inside a word is ordinary too, but ends a run to be looked at.
_ORDINARY = re.compile("[^" + re.escape("".join(_BY_CHARACTER)) + "]*")


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
    assigned, words = _leading_assignments(words, variables)
    if not words:
        variables.update(assigned)  # X=rm; $X -rf …
        return
    argv = _argv(words, {**variables, **assigned}, state)
    if not argv or not argv[0]:
        state.simple = False
        return
    if words[0].pattern:
        state.simple = False  # the shell expands the program's name: /bin/r?
    _invocations(argv, state, depth, program_is_pattern=words[0].pattern)


def _leading_assignments(
    words: list[_Word], variables: Mapping[str, str]
) -> tuple[dict[str, str], list[_Word]]:
    """(the known values of the ``NAME=value`` words before the program, the words after them)."""
    assigned: dict[str, str] = {}
    while words and "=" in words[0].text and _NAME.fullmatch(words[0].text.split("=", 1)[0]):
        name, value = words[0].text.split("=", 1)
        if not words[0].dynamic:
            assigned[name] = value
        else:
            expanded, known = _expand(_Word(value, True), variables)
            if known:
                assigned[name] = " ".join(expanded)
        words = words[1:]
    return assigned, words


def _argv(words: list[_Word], scope: Mapping[str, str], state: _Parse) -> list[str]:
    """The words expanded; an unknown variable makes the command not simple, and every argument
    is kept in ``state.words`` in case a shell reads it as a command."""
    argv: list[str] = []
    for index, word in enumerate(words):
        expanded, known = _expand(word, scope)
        if not known:
            state.simple = False
        argv.extend(expanded)
        if index > 0:
            state.words.extend(expanded)
    return argv


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
            i = _wrapper_long_option(argv, i, spec, texts)
        elif arg.startswith("-") and len(arg) > 1 and not (leading and _looks_numeric(arg)):
            i = _wrapper_short_options(argv, i, spec, texts)
        elif spec.assignments and "=" in arg and _NAME.fullmatch(arg.split("=", 1)[0]):
            i += 1
        elif leading:
            leading -= 1
            i += 1
        else:
            break
    i += min(leading, len(argv) - i)  # after "--": the leading operands, then the command
    return argv[i:], texts


def _wrapper_long_option(argv: list[str], i: int, spec: Wrapper, texts: list[str]) -> int:
    """The ``--name[=value]`` at ``argv[i]``: its value to ``texts`` if it is shell text; the index after it."""
    name, eq, value = argv[i][2:].partition("=")
    takes_text = name in spec.shell_text or name in spec.argv_text
    if (takes_text or name in spec.long_values) and not eq and i + 1 < len(argv):
        i += 1
        value = argv[i]
    if takes_text:
        texts.append(value)
    return i + 1


def _wrapper_short_options(argv: list[str], i: int, spec: Wrapper, texts: list[str]) -> int:
    """The option cluster at ``argv[i]``: the value of its first option that takes one (to ``texts``
    if it is shell text), attached or the next word; the index after it."""
    arg = argv[i]
    for j, ch in enumerate(arg[1:], start=1):
        takes_text = ch in spec.shell_text or ch in spec.argv_text
        if takes_text or ch in spec.values:
            value = arg[j + 1 :]
            if not value and i + 1 < len(argv):
                i += 1
                value = argv[i]
            if takes_text:
                texts.append(value)
            break
    return i + 1


def _looks_numeric(arg: str) -> bool:
    return arg[1:].replace(".", "", 1).isdigit()


def _shell(argv: list[str], state: _Parse, depth: int) -> None:
    """``sh -c TEXT``: TEXT's invocations. ``sh script``: unknown. ``sh`` alone: reads standard input."""
    command_text, operands = _shell_options(argv, state)
    if command_text:
        if operands:
            _parse_text(operands[0], state, dict(_DEFAULT_VARIABLES), depth + 1)
        return
    state.simple = False
    if not operands:
        state.stdin_shell = True


def _shell_options(argv: list[str], state: _Parse) -> tuple[bool, list[str]]:
    """(whether ``-c`` makes the first operand the command text, the operands) of a shell's argv.

    ``-s`` marks a shell that reads commands from its standard input.
    """
    command_text = False
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in ("--", "-"):
            i += 1
            break
        if arg.startswith("--") and len(arg) > 2:
            command_text = command_text or arg[2:] == "command"
            i += 2 if arg[2:] in _SHELL_LONG_VALUES else 1
        elif arg[:1] in "-+" and len(arg) > 1:
            cluster = arg[1:]
            command_text = command_text or "c" in cluster
            if "s" in cluster:
                state.stdin_shell = True
            i += 2 if any(ch in _SHELL_VALUES for ch in cluster) else 1
        else:
            break
    return command_text, argv[i:]


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
