"""The pipeline's synth step runs `make test` where botocore finds no AWS credentials,
and the roles that use the repository connection get the actions of its service.

botocore is run for real, in a subprocess, through the synth step's own test command
(with `make test` swapped for a probe), against each credential source a CodeBuild box
or a careless test could offer: environment keys, a shared credentials file, the
container endpoint CodeBuild serves the project role from, and the instance metadata
service (both served here on 127.0.0.1). Each one is first shown to work without the
wrapper, so a pass means the wrapper hid it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pytest

from novapod.stacks.pipeline import connection_actions, synth_commands
from tests.aws_credentials import PROBE, credential_method

KEYS = {
    "AccessKeyId": "AKIAFAKEFAKEFAKEFAKE",
    "SecretAccessKey": "fake",
    "Token": "fake",
    "Expiration": (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
}


class _Credentials(BaseHTTPRequestHandler):
    """The ECS/CodeBuild container endpoint at /creds and IMDSv2 under /latest/."""

    def do_PUT(self) -> None:  # IMDSv2 session token
        self._reply("imds-token")

    def do_GET(self) -> None:
        if self.path == "/latest/meta-data/iam/security-credentials/":
            self._reply("build-role")
        elif self.path in ("/creds", "/latest/meta-data/iam/security-credentials/build-role"):
            self._reply(json.dumps({"Code": "Success", **KEYS}))
        else:
            self.send_error(404)

    def _reply(self, body: str) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Credentials)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def wrapped_probe() -> str:
    """The synth step's test command, `make test` replaced by the probe."""
    (command,) = [c for c in synth_commands("p.yaml") if c.endswith(" make test")]
    return command.removesuffix("make test") + PROBE


def sources(endpoint: str, home: Path) -> dict[str, tuple[dict[str, str], str]]:
    """Each credential source: its environment and the method botocore reports for it."""
    (home / ".aws").mkdir(parents=True, exist_ok=True)
    (home / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = AKIAFAKEFAKEFAKEFAKE\naws_secret_access_key = fake\n"
    )
    nothing_else = {"HOME": str(home.parent)}  # no ~/.aws there
    return {
        "environment": (
            {**nothing_else, "AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "x"},
            "env",
        ),
        "shared file": ({"HOME": str(home)}, "shared-credentials-file"),
        "container": (
            {**nothing_else, "AWS_CONTAINER_CREDENTIALS_FULL_URI": f"{endpoint}/creds"},
            "container-role",
        ),
        "instance metadata": (
            {
                **nothing_else,
                "AWS_EC2_METADATA_SERVICE_ENDPOINT": f"{endpoint}/",
                "AWS_METADATA_SERVICE_TIMEOUT": "2",
            },
            "iam-role",
        ),
    }


@pytest.mark.parametrize("source", ["environment", "shared file", "container", "instance metadata"])
def test_make_test_runs_without_credentials(endpoint, tmp_path, source) -> None:
    env, method = sources(endpoint, tmp_path / "home")[source]
    assert credential_method(PROBE, env) == method  # the source works unwrapped
    assert credential_method(wrapped_probe(), env) == "none"


def test_the_wrapper_hides_codebuilds_own_endpoint_variable() -> None:
    # CodeBuild sets the relative form (served at 169.254.170.2, unreachable here).
    assert "-u AWS_CONTAINER_CREDENTIALS_RELATIVE_URI " in wrapped_probe()


def test_only_the_test_command_loses_credentials() -> None:
    commands = synth_commands("config/pipeline.yaml")
    assert commands[0] == "make setup"
    assert commands[1].startswith("env -u AWS_ACCESS_KEY_ID ")
    # The review upload needs the project role.
    assert commands[-1].startswith("aws s3 cp ")
    assert not any(c.startswith("env ") for c in commands[2:])


@pytest.mark.parametrize(
    ("arn", "source", "clone"),
    [
        (
            "arn:aws:codeconnections:us-east-1:111122223333:connection/x",
            ["codeconnections:UseConnection"],
            ["codeconnections:UseConnection", "codeconnections:GetConnectionToken"],
        ),
        (
            "arn:aws:codestar-connections:eu-west-1:111122223333:connection/x",
            ["codestar-connections:UseConnection"],
            ["codestar-connections:UseConnection", "codestar-connections:GetConnectionToken"],
        ),
    ],
)
def test_connection_actions_follow_the_arns_service(arn, source, clone) -> None:
    assert connection_actions(arn, clone=False) == source
    assert connection_actions(arn, clone=True) == clone


def test_connection_actions_refuse_another_service() -> None:
    with pytest.raises(ValueError, match="not a CodeConnections connection ARN"):
        connection_actions("arn:aws:codecommit:us-east-1:111122223333:repo", clone=True)
