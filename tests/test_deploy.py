"""deploy/: its YAML parses, it wires what docs/deployment.md says, and every `serve` flag in it exists.

Docker and Kubernetes are not installed where the tests run, so the files are read as data: the
compose file and the manifest with ``yaml.safe_load``, and each `serve` command line is handed to
the real command-line parser (with the server's start replaced) so a renamed flag or a bad value fails here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from speech_to_speech import cli
from speech_to_speech.config import ServerSettings

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
INTERPOLATION = re.compile(r"\$\{(\w+)(?::?-([^}]*)|:?\?[^}]*)?\}")


def env_file(path: Path) -> dict[str, str]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}``, from ``env``."""
    return INTERPOLATION.sub(lambda m: env.get(m.group(1), m.group(2) or ""), text)


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def manifests() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / "kubernetes.yaml").read_text()) if doc]


def kind(name: str, kind_: str) -> dict[str, Any]:
    return next(m for m in manifests() if m["kind"] == kind_ and m["metadata"]["name"] == name)


def replica_commands() -> dict[str, list[str]]:
    """Every `speech-to-speech` command line in deploy/, by where it comes from."""
    vllm = env_file(DEPLOY / "vllm.env")
    replica = compose()["services"]["replica-a"]
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.M)
    assert cmd is not None
    container = kind("speech-to-speech", "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return {
        "compose": shlex.split(interpolate(replica["command"], {})),
        "compose --env-file vllm.env": shlex.split(interpolate(replica["command"], vllm)),
        "Dockerfile CMD": yaml.safe_load(cmd.group(1)),
        "kubernetes.yaml": list(container["args"]),
    }


@pytest.fixture
def serve_settings(monkeypatch: pytest.MonkeyPatch) -> list[ServerSettings]:
    from speech_to_speech.realtime.app import server

    calls: list[ServerSettings] = []
    monkeypatch.setattr(server, "run", calls.append)
    monkeypatch.setenv("SPEECH_TO_SPEECH_API_KEY", "test-key")  # what the deployments set: a public host needs one
    return calls


@pytest.fixture(scope="module")
def serve_help() -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    return out.getvalue()


@pytest.mark.parametrize("source", list(replica_commands()))
def test_every_serve_flag_in_deploy_exists_and_parses(source: str, serve_help: str,
                                                       serve_settings: list[ServerSettings]) -> None:
    argv = replica_commands()[source]
    assert argv[0] == "serve"
    flags = [arg for arg in argv if arg.startswith("--")]
    known = set(re.findall(r"--[a-z][a-z0-9_-]*", serve_help))
    unknown = [flag for flag in flags if flag not in known]
    assert unknown == [], f"{source}: not flags of `serve --help`: {unknown}"
    assert cli.main(argv) == 0, source  # the values too: parsed as `serve` would
    settings = serve_settings[-1]
    assert settings.server.host == "0.0.0.0" and settings.server.port == 8765


def test_compose_runs_two_replicas_on_redis_behind_nginx_with_vllm_optional() -> None:
    services = compose()["services"]
    assert {"replica-a", "replica-b", "redis", "balancer", "vllm"} <= set(services)
    for name in ("replica-a", "replica-b"):
        command = services[name]["command"]
        assert "--session_store redis://redis:6379/0" in command
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    assert services["redis"]["image"].startswith("redis:7")
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in services["balancer"]["volumes"]
    assert services["vllm"]["profiles"] == ["vllm"]
    assert "profiles" not in services["replica-a"]  # the replicas run with or without the profile
    vllm_flags = env_file(DEPLOY / "vllm.env")["S2S_LLM_FLAGS"]
    assert "--llm chat-completions" in vllm_flags and "--llm_base_url http://vllm:8000/v1" in vllm_flags


def test_compose_gives_the_drain_time_to_finish_before_docker_kills() -> None:
    replica = compose()["services"]["replica-a"]
    drain = float(re.search(r"--shutdown_drain_s (\S+)", replica["command"]).group(1))  # type: ignore[union-attr]
    assert float(replica["stop_grace_period"].rstrip("s")) > drain


def test_nginx_upgrades_websockets_to_every_replica_without_sticky_sessions() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    code = "\n".join(line.split("#", 1)[0] for line in conf.splitlines())
    assert "proxy_set_header Upgrade $http_upgrade;" in code
    assert "proxy_set_header Connection $connection_upgrade;" in code
    assert "proxy_http_version 1.1;" in code
    upstreams = set(re.findall(r"^\s*server\s+([\w-]+):(\d+)", code, re.M))
    assert upstreams == {("replica-a", "8765"), ("replica-b", "8765")}
    assert "location = /ready" in code and "http_503" in code
    assert not re.search(r"\b(ip_hash|sticky|hash)\b", code)
    assert code.count("{") == code.count("}")


def test_kubernetes_probes_grace_period_and_affinity() -> None:
    pod = kind("speech-to-speech", "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    args = container["args"]
    drain = float(args[args.index("--shutdown_drain_s") + 1])
    assert pod["terminationGracePeriodSeconds"] > drain
    assert "preStop" not in container.get("lifecycle", {})  # SIGTERM itself starts the drain
    assert kind("speech-to-speech", "Service")["spec"]["sessionAffinity"] == "ClientIP"
    assert {m["kind"] for m in manifests()} >= {"Deployment", "Service", "PodDisruptionBudget"}


def test_the_image_runs_the_console_script_the_package_installs() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["speech-to-speech"]' in dockerfile
    assert re.search(r'^speech-to-speech = "', (ROOT / "pyproject.toml").read_text(), re.M)
    assert "make install" in dockerfile  # the README's install
    assert "STOPSIGNAL SIGTERM" in dockerfile
