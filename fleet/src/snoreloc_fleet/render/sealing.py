"""Secrets sealed for the hub with `age` (Debian's `age` binary): the one way a fleet tree in Git holds a secret.

`fleet render --git` encrypts each Secret it would have written in plain text (a site's files, the shared files)
to the hub's age recipients (`age1...`, the public half of the key the hub's Argo CD plugin holds), ASCII-armored so
that Git stores text. Only the holder of the identity reads it back: the Argo CD config-management plugin
(`deploy/argocd/cmp-plugin.yaml`) on the hub, and `fleet diff --identity` in a pipeline that was given the key.

Why the `age` binary and not `pyrage`: the hub side must decrypt too, and there a shell in a plugin sidecar runs
`age --decrypt`; the fleet owner's side runs the very same program, so what is written is what the plugin reads
(one implementation of the format, from Debian, on both sides), and the fleet's wheel carries no compiled Rust
extension. The plaintext only ever passes through the process's standard input and output, never a file, and it is
never logged (`snoreloc.adapters.command` does not log stdin; age's own complaints are masked by `snoreloc.redact`).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence

from snoreloc.siblings import command, errors, redact

AGE = "age"
ARMOR_BEGIN = "-----BEGIN AGE ENCRYPTED FILE-----"
# A native age recipient: "age1" and 58 bech32 characters (the X25519 public key), as `age-keygen -y` prints it.
RECIPIENT = re.compile(r"^age1[02-9ac-hj-np-z]{58}$")
TIMEOUT = 60.0  # seconds for one file (a site's files are at most a few MiB)
INSTALL_HINT = "Install Debian's age (apt-get install age), or put an `age` binary on PATH."


def recipient_problem(text: str) -> str | None:
    """Why `text` is no age recipient this tree can be sealed for (None: it is one). Never quotes a secret key."""
    if text.startswith("AGE-SECRET-KEY-"):
        return "this is an age identity (a secret key), not a recipient: give its public half (age-keygen -y FILE)"
    if not RECIPIENT.match(text):
        return "an age recipient is `age1` followed by 58 characters, as `age-keygen -y HUB-KEY` prints it"
    return None


def check_recipients(recipients: Sequence[str], where: str) -> None:
    """Raise ConfigError (65) naming each recipient that is not one, before anything is written."""
    problems = [
        errors.Problem(f"{where} #{index}", problem)
        for index, given in enumerate(recipients, 1)
        if (problem := recipient_problem(given.strip()))
    ]
    if problems:
        raise errors.ConfigError("cannot seal the secrets for these recipients; nothing was written", problems=problems)
    if not recipients:
        raise errors.UsageError(
            "--git needs the hub's age recipient (--age-recipient age1...), or --secret-store for references",
            hint="The hub's key: age-keygen -o hub.key; its recipient: age-keygen -y hub.key",
        )


def _binary() -> str:
    found = shutil.which(AGE)
    if found is None:
        raise errors.UnavailableError("the `age` program is not installed on this machine", hint=INSTALL_HINT)
    return found


def seal(plaintext: str, recipients: Sequence[str]) -> str:
    """`plaintext` encrypted to every recipient, armored (text beginning with `ARMOR_BEGIN`)."""
    argv = [_binary(), "--encrypt", "--armor"]
    for recipient in recipients:
        argv += ["--recipient", recipient.strip()]
    result = command.SubprocessRunner().run(argv, input=plaintext, timeout=TIMEOUT, check=False)
    if not result.ok or not result.stdout.startswith(ARMOR_BEGIN):
        raise errors.UnavailableError(f"age could not encrypt: {redact.redact(result.stderr.strip())}")
    return result.stdout


def unseal(armored: str, identity: str, where: str) -> str:
    """The plaintext of an armored age file, with the identity file `identity`; ConfigError (65) naming `where`
    when this identity cannot open it (sealed for another hub) or it is no age file."""
    argv = [_binary(), "--decrypt", "--identity", identity]
    result = command.SubprocessRunner().run(argv, input=armored, timeout=TIMEOUT, check=False)
    if not result.ok:
        raise errors.ConfigError(
            f"{where}: age could not decrypt it: {redact.redact(result.stderr.strip())[:300]}",
            hint="Give the hub's identity (the key its recipient was made from) with --identity.",
        )
    return result.stdout
