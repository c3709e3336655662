"""Who a NATS connection is: one nkey per user, and how a process is handed its own.

A user's seed, its secret, lives in ``OVERSEER_HOME/nats/keys/<user>.nk`` (0600, in a 0700
directory) for the embedded server; a deployment may keep it anywhere and hand a process its
path (``OVERSEER_NATS_NKEY_SEED_FILE``), or use a password against a server configured that way.
What each user may do is :mod:`overseer_runtime.permissions`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import nkeys

from overseer_runtime.config import Settings
from overseer_runtime.home import write_private
from overseer_runtime.permissions import USERS


def keys_dir(home: Path) -> Path:
    """Where the embedded server's keys are kept under ``OVERSEER_HOME``."""
    return Path(home) / "nats" / "keys"


@dataclass(frozen=True)
class NatsCredential:
    """How one NATS user proves who it is: an nkey seed file (the embedded server) or a password.

    ``user`` also names the connection's inbox prefix (``_INBOX.<user>``): the permissions let a
    user receive only under its own prefix. No user (an external server without authorization)
    means an anonymous connection with the default prefix.
    """

    user: str | None = None
    password: str | None = None
    seed_file: Path | None = None

    def env(self) -> dict[str, str]:
        """The environment that hands this credential to a child process (a path, never the seed)."""
        env: dict[str, str] = {}
        if self.user:
            env["OVERSEER_NATS_USER"] = self.user
        if self.seed_file is not None:
            env["OVERSEER_NATS_NKEY_SEED_FILE"] = str(self.seed_file)
        if self.password:
            env["OVERSEER_NATS_PASSWORD"] = self.password
        return env


def credentials_for(settings: Settings, user: str) -> NatsCredential:
    """``user``'s credential: from the environment (``OVERSEER_NATS_USER`` with ``_NKEY_SEED_FILE``
    or ``_PASSWORD``), else the embedded server's keyring under ``OVERSEER_HOME``.

    A server without authorization ignores the user name, so passing one is always safe.
    """
    seed = os.environ.get("OVERSEER_NATS_NKEY_SEED_FILE")
    password = os.environ.get("OVERSEER_NATS_PASSWORD")
    if seed or password:
        return NatsCredential(
            os.environ.get("OVERSEER_NATS_USER") or user, password, Path(seed) if seed else None
        )
    return Keyring(keys_dir(settings.home)).find(user)


class Keyring:
    """One NATS nkey per user (every service, the reader and the provisioner) under ``<dir>``.

    A user's seed, its secret, is ``<dir>/<user>.nk`` (0600, in a 0700 directory); the server's
    configuration holds only public keys, so it reveals nothing that lets anyone connect. Each
    process is handed the path of its own seed alone.
    """

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)

    @classmethod
    def load_or_create(cls, directory: Path) -> Keyring:
        keyring = cls(directory)
        keyring.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        keyring.dir.chmod(0o700)
        for user in USERS:
            seed = keyring.seed_file(user)
            if not seed.is_file():
                write_private(seed, nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode())
        return keyring

    def seed_file(self, user: str) -> Path:
        return self.dir / f"{user}.nk"

    def public_key(self, user: str) -> str:
        seed = bytearray(self.seed_file(user).read_bytes().strip())
        return str(nkeys.from_seed(seed).public_key.decode())

    def credential(self, user: str) -> NatsCredential:
        return NatsCredential(user=user, seed_file=self.seed_file(user))

    def find(self, user: str) -> NatsCredential:
        """``user``'s credential when its seed is here, else an anonymous one (a server without keys)."""
        return self.credential(user) if self.seed_file(user).is_file() else NatsCredential()
