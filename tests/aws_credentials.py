"""Which credentials botocore finds when a shell command runs: the probe the pipeline's
tests put in place of `make test` to show that the synth step hides every source."""

from __future__ import annotations

import subprocess
import sys

PROBE = (
    f"{sys.executable} -c 'import botocore.session as s; "
    'c = s.get_session().get_credentials(); print(c.method if c else "none")\''
)


def credential_method(command: str, env: dict[str, str]) -> str:
    """botocore's credential method ('env', 'container-role', ...) or 'none', for a shell
    command that ends in PROBE, run with only `env` (and a PATH and a region)."""
    base = {"PATH": "/usr/bin:/bin", "AWS_DEFAULT_REGION": "us-east-1"}
    done = subprocess.run(
        ["sh", "-c", command],
        check=False,
        env=base | env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
