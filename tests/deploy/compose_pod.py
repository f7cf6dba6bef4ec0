#!/usr/bin/python3
"""compose_pod.py - runs docker/compose.yml's services under podman, for test_image.sh.

Debian 12's podman-compose (1.0.3) passes `network_mode: "service:livegate"` to podman as it
is (podman knows `container:NAME`) and puts every service on a bridge network besides, so it
cannot run services that share one network namespace. This does what compose would, from the
file itself: each service's image is built from its `build` (context, dockerfile, target,
args), then the services start in `depends_on` order, the first (the one the others join) in
a network namespace of its own with only loopback (`--network none`: the test reaches it
from inside, and `ports` are left out), the others in that one (`container:NAME`), each with
its `volumes` (named ones prefixed by the project) and `command`.

Usage: compose_pod.py build COMPOSE_FILE
       compose_pod.py up COMPOSE_FILE PROJECT     (prints SERVICE CONTAINER lines)
       compose_pod.py down COMPOSE_FILE PROJECT
"""
import os
import re
import subprocess
import sys

import yaml


def interpolate(text):
    """${VAR:-default} and ${VAR}, as compose reads them from the environment."""
    def value(m):
        name, default = m.group(1), m.group(3)
        return os.environ.get(name) or (default if default is not None else "")
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", value, text)


def load(path):
    with open(path) as f:
        return yaml.safe_load(interpolate(f.read()))


def order(services):
    """Services sorted so that each comes after what it depends on."""
    done, out = set(), []

    def visit(name, depth=0):
        if name in done:
            return
        if depth > len(services):
            sys.exit(f"compose_pod.py: depends_on cycle at {name}")
        svc = services[name]
        deps = svc.get("depends_on", [])
        for dep in deps if isinstance(deps, list) else deps.keys():
            visit(dep, depth + 1)
        net = svc.get("network_mode", "")
        if net.startswith("service:"):
            visit(net[len("service:"):], depth + 1)
        done.add(name)
        out.append(name)

    for name in services:
        visit(name)
    return out


def podman(*args, capture=False):
    r = subprocess.run(["podman", *args], text=True,
                       stdout=subprocess.PIPE if capture else sys.stderr)
    if r.returncode != 0:
        sys.exit(f"compose_pod.py: podman {' '.join(args)} exited {r.returncode}")
    return r.stdout


def build(compose, base_dir, extra):
    for name in order(compose["services"]):
        svc = compose["services"][name]
        b = svc.get("build")
        if not b:
            continue
        args = ["build", "--format", "docker", "-t", image(compose, name),
                "-f", os.path.join(base_dir, b["context"], b["dockerfile"])]
        if b.get("target"):
            args += ["--target", b["target"]]
        for k, v in (b.get("args") or {}).items():
            args += ["--build-arg", f"{k}={v}"]
        podman(*args, *extra, os.path.join(base_dir, b["context"]))


def image(compose, name):
    """What compose names a service's image: its `image`, else PROJECT-SERVICE."""
    return compose["services"][name].get("image") or f"localhost/{compose['name']}-{name}:latest"


def container(project, name):
    return f"{project}_{name}"


def up(compose, base_dir, project):
    services = compose["services"]
    for name in order(services):
        svc = services[name]
        net = svc.get("network_mode", "")
        args = ["run", "-d", "--pull=never", "--name", container(project, name),
                "--network", f"container:{container(project, net[8:])}" if net.startswith("service:") else "none"]
        for v in svc.get("volumes", []):
            src, rest = v.split(":", 1)
            if src.startswith(".") or src.startswith("/"):
                src = os.path.normpath(os.path.join(base_dir, src))
            else:
                src = f"{project}_{src}"
            args += ["-v", f"{src}:{rest}"]
        podman(*args, image(compose, name), *svc.get("command", []), capture=True)
        print(name, container(project, name))


def down(compose, project):
    # One at a time, those that joined a namespace first: podman refuses to remove a container
    # whose namespace another still uses.
    for name in reversed(order(compose["services"])):
        subprocess.run(["podman", "rm", "--ignore", "-f", "-t", "10", container(project, name)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for vol in compose.get("volumes") or {}:
        subprocess.run(["podman", "volume", "rm", "-f", f"{project}_{vol}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    verb, path = sys.argv[1], sys.argv[2]
    compose = load(path)
    base_dir = os.path.dirname(os.path.abspath(path))
    if verb == "build":
        build(compose, base_dir, sys.argv[3:])
    elif verb == "up" and len(sys.argv) == 4:
        up(compose, base_dir, sys.argv[3])
    elif verb == "down" and len(sys.argv) == 4:
        down(compose, sys.argv[3])
    else:
        sys.exit(__doc__)


main()
