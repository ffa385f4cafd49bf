"""The Docker tier (``pytest -m docker``): the CPU image built, and an Inspect eval run in it.

The eval runs in the compose file's two containers: the agent's (``default``) and the
harness's (``scorer``, read-only root, another user), where every harness run is made.

Needs a Docker Engine >= 24.0.6 with Compose v2 and buildx; ``bash scripts/docker_setup.sh``
sets one up on a bare Debian 12 machine. Run the tier in a shell that sourced the
``sandbox.env`` the script writes, so that these builds (and Inspect's own ``compose build``)
get the same base image, wheel folder and CA certificates. Skipped with a one-line reason when
no engine answers. The image build takes minutes the first time, the eval about a minute.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from tests.helpers import CPU_KERNELS, ROOT

pytestmark = pytest.mark.docker

COMPOSE = ROOT / "sandboxes" / "cpu" / "compose.yaml"
IMAGE = "kernelseek/cpu:0.1.0"
HASHES = "/opt/kernelseek/INSTALL_HASHES.txt"


def _docker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module", autouse=True)
def _engine() -> None:
    """Skip the module with one line when no Docker Engine answers (the default machine)."""
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI: run scripts/docker_setup.sh")
    try:
        version = _docker("version", "--format", "{{.Server.Version}}", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.skip("the Docker Engine did not answer within 30 s")
    if version.returncode != 0:
        pytest.skip("no Docker Engine answers: run scripts/docker_setup.sh")


@pytest.fixture(scope="module")
def image() -> str:
    """The CPU image, built from this checkout (cached layers make a rebuild seconds)."""
    started = time.monotonic()
    built = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "build"],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    # Compose prints some failures (an old buildx) and still exits 0: the image must exist.
    inspected = _docker("image", "inspect", IMAGE, "--format", "{{.Size}}")
    hint = "\n(no registry here? source the sandbox.env that scripts/docker_setup.sh wrote)"
    assert built.returncode == 0 and inspected.returncode == 0, built.stdout + built.stderr + hint
    size_mb = int(inspected.stdout) / 1e6
    print(f"docker compose build: {time.monotonic() - started:.0f} s, {IMAGE} {size_mb:.0f} MB")
    return IMAGE


def _in_image(image: str, script: str) -> subprocess.CompletedProcess[str]:
    return _docker("run", "--rm", "--network", "none", image, "sh", "-c", script)


def test_image_hashes_verify_and_the_context_left_out_what_the_agent_must_not_see(image):
    checked = _in_image(image, f"sha256sum -c --quiet {HASHES} && wc -l < {HASHES}")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert int(checked.stdout.split()[-1]) > 10  # the installed package's files
    # Dockerfile.dockerignore applies only under BuildKit (buildx): the classic builder would
    # copy the test kernels (correct faster examples) and recorded results into the image.
    listed = _in_image(image, "ls /opt/kernelseek")
    assert listed.returncode == 0 and "evals" in listed.stdout.split()
    assert not {"tests", "results", "bank", ".git", ".venv"} & set(listed.stdout.split())


def _out(tool: str, **args: str) -> ModelOutput:
    out = ModelOutput.for_tool_call(model="mockllm/model", tool_name=tool, tool_arguments=args)
    out.usage = ModelUsage(input_tokens=10, output_tokens=10, total_tokens=20)  # offline count
    return out


# The agent's turns: install the faster kernel (the host path is not in the container, so its
# text goes in), report the keep-alive (PID 1's only child before any orphan), leave two
# processes running (one in its own session), then submit.
AGENT = [
    _out(
        "bash",
        command="echo {} | base64 -d > kernel.cpp && sha256sum kernel.cpp".format(
            base64.b64encode((CPU_KERNELS / "fast.cpp").read_bytes()).decode()
        ),
    ),
    _out("bash", command="echo keep=$(cat /proc/1/task/1/children)"),
    _out(
        "bash",
        command="sleep 600 >/dev/null 2>&1 & echo left=$!; "
        "setsid sleep 601 >/dev/null 2>&1 & echo left=$!",
    ),
    _out("submit"),
]


@pytest.fixture(scope="module")
def evaluated(
    image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[EvalLog, list[str]]]:
    """One eval of tasks/cpu_attention in Docker; its container kept for the tests, then removed."""
    before = set(_docker("ps", "-aq").stdout.split())
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)  # Inspect resolves a task folder relative to the working directory
        [log] = inspect_eval(
            "tasks/cpu_attention",
            task_args={"sandbox": "docker", "suite": "smoke", "score_suite": "smoke"},
            model=get_model("mockllm/model", custom_outputs=AGENT),
            log_dir=str(tmp_path_factory.mktemp("docker-eval")),
            display="none",
            sandbox_cleanup=False,
        )
    print(f"inspect eval tasks/cpu_attention -T sandbox=docker: {time.monotonic() - started:.0f} s")
    containers = new_containers(image, before)
    try:
        yield log, containers
    finally:
        compose_down(containers)


SERVICE_LABEL = '{{index .Config.Labels "com.docker.compose.service"}}'
PROJECT_LABEL = '{{index .Config.Labels "com.docker.compose.project"}}'


def new_containers(image: str, before: set[str]) -> dict[str, str]:
    """The eval's containers of ``image`` started since ``before``: service -> container id."""
    found = [
        c
        for c in _docker("ps", "-aq", "--filter", f"ancestor={image}").stdout.split()
        if c not in before
    ]
    services = {_docker("inspect", "--format", SERVICE_LABEL, c).stdout.strip(): c for c in found}
    assert len(services) == len(found), f"one sample's containers expected: {found}"
    return services


def compose_down(containers: dict[str, str]) -> None:
    projects = {
        _docker("inspect", "--format", PROJECT_LABEL, c).stdout.strip()
        for c in containers.values()
    }
    for project in projects - {""}:
        _docker("compose", "-p", project, "down", "--timeout", "1")


def processes(container: str) -> list[tuple[int, int, str]]:
    """(pid, ppid, command line) of every process in ``container`` but this listing's own."""
    listed = _docker(
        "exec",
        container,
        "python3",
        "-c",
        "import os\n"
        "for p in sorted(int(n) for n in os.listdir('/proc') if n.isdigit()):\n"
        "    try:\n"
        "        s = open(f'/proc/{p}/stat').read(); c = open(f'/proc/{p}/cmdline', 'rb').read()\n"
        "    except OSError:\n"
        "        continue\n"
        "    if p != os.getpid():\n"
        "        ppid = s[s.rindex(')') + 2:].split()[1]\n"
        "        print(p, ppid, c.replace(bytes(1), b' ').decode().strip())\n",
    )
    assert listed.returncode == 0, listed.stderr
    rows = [line.split(" ", 2) for line in listed.stdout.splitlines()]
    return [(int(p), int(pp), (c[0] if c else "")) for p, pp, *c in rows]


def _said(log: EvalLog, key: str) -> list[int]:
    """The numbers the agent's tool calls printed as ``key=N ...``."""
    text = " ".join(m.text for m in log.samples[0].messages if m.role == "tool")
    return [int(n) for group in re.findall(rf"{key}=([\d ]+)", text) for n in group.split()]


def test_eval_in_docker_scores_the_kernel_after_stopping_only_the_agents_processes(evaluated):
    log, containers = evaluated
    assert log.status == "success", log.error
    score = log.samples[0].scores["kernel_speedup"]
    print(f"score: {score.value}; stopped: {score.metadata['stopped_processes']}")
    assert score.value["success"] == 1, score.explanation
    assert score.value["speedup"] > 0 and score.metadata["provenance"]["harness_version"]
    [keep] = _said(log, "keep")
    left = _said(log, "left")
    stopped = score.metadata["stopped_processes"]
    assert stopped["all_user_processes"] is True and len(left) == 2
    assert set(left) <= set(stopped["killed"]) and keep not in stopped["killed"]
    # the container outlived the cleanup and the score: its keep-alive still runs
    assert set(containers) == {"default", "scorer"}
    container = containers["default"]
    alive = _docker(
        "exec",
        container,
        "sh",
        "-c",
        f"cat /proc/{keep}/comm; for p in {' '.join(map(str, left))}; "
        "do test -e /proc/$p && echo still=$p; done; true",
    )
    assert alive.returncode == 0 and alive.stdout.split() == ["tail"], alive.stdout + alive.stderr


def test_eval_leaves_the_harness_and_its_hashes_unchanged(evaluated, image):
    _, containers = evaluated
    fresh = _in_image(image, f"sha256sum {HASHES}")
    for container in containers.values():
        after = _docker(
            "exec", container, "sh", "-c", f"sha256sum -c --quiet {HASHES} && sha256sum {HASHES}"
        )
        assert after.returncode == 0, after.stdout + after.stderr
        assert after.stdout.split()[0] == fresh.stdout.split()[0]


def test_every_harness_run_was_made_in_the_scorer_container(evaluated):
    """The score and the submission's check ran in `scorer`, as uid 1001, on a read-only root."""
    log, containers = evaluated
    events = [
        e.data["scorer_cleanup"]
        for e in log.samples[0].events
        if e.event == "info" and isinstance(e.data, dict) and "scorer_cleanup" in e.data
    ]
    assert [e["command"] for e in events][-1] == "score" and len(events) >= 2, events
    assert all(e["after"].get("kept_in_memory") for e in events), events
    score = log.samples[0].scores["kernel_speedup"]
    assert score.metadata["kernel_sha256"]
    scorer = containers["scorer"]
    ident = _docker("exec", scorer, "sh", "-c", "id -u; touch /opt/x 2>&1; touch /usr/x 2>&1")
    assert ident.stdout.splitlines()[0] == "1001"
    assert ident.stdout.count("Read-only file system") == 2, ident.stdout
    # the relay kills what it leaves: only the init, the keep-alive and this listing remain
    assert [cmd for _, _, cmd in processes(scorer)] == [
        "/sbin/docker-init -- tail -f /dev/null",
        "tail -f /dev/null",
    ]
