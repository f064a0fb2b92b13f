"""Posthorn's Kubernetes manifests, rendered and played on this machine.

1. Renders deploy/kubernetes/overlays/{demo,production} with `kubectl kustomize` (written
   for Debian's kubectl 1.20, kustomize v2.0.3) and checks what they hold: the workloads,
   probes, resources, security contexts, disruption budgets, and every setting of the
   book's Configuration page in the ConfigMap or the Secret.
2. Plays the demo with `podman kube play --network host` (deploy/kube_play.py): the
   database, the migration Job, two servers and the dispatcher become ready; an event
   reaches a receiver; the dashboard signs in; under 100 events/s one server and the
   dispatcher are killed and come back, then a new image is rolled over every pod; no
   acknowledged event is lost and none is delivered twice beyond what the lease allows.

    .venv/bin/python deploy/test_kube.py            (run by `make test`)

POSTHORN_KUBECTL names kubectl (default: Debian's under .tools/kubernetes-client, else
`kubectl`); POSTHORN_BIN and LEPTOS_SITE_ROOT the build the test image is made of
(`.ci/dev.sh build` exports both); POSTHORN_KUBE_RENDER_ONLY=1 stops after step 1.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KUBE = os.path.join(ROOT, "deploy", "kubernetes")
sys.path.insert(0, os.path.join(ROOT, "deploy"))
sys.dont_write_bytecode = True  # no __pycache__ left in deploy/

# Settings whose values are credentials: they belong in the Secret.
SECRET_SETTINGS = {"DATABASE_URL", "POSTHORN_ENCRYPTION_KEY", "POSTHORN_SMTP_URL",
                   "POSTHORN_EGRESS_PROXY", "POSTHORN_METRICS_TOKEN"}
WORKLOADS = {"posthorn-server", "posthorn-dispatcher", "posthorn-migrate"}


def log(msg: str) -> None:
    print(f"[kube {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def kubectl() -> str:
    debian = os.path.join(ROOT, ".tools", "kubernetes-client", "usr", "bin", "kubectl")
    return os.environ.get("POSTHORN_KUBECTL") or (debian if os.path.exists(debian) else "kubectl")


def render(overlay: str) -> list[dict]:
    out = subprocess.run([kubectl(), "kustomize", os.path.join(KUBE, "overlays", overlay)],
                         check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def base_name(doc: dict) -> str:
    """A generated ConfigMap's or Secret's name without kustomize's content hash."""
    name = doc["metadata"]["name"]
    if doc["kind"] in ("ConfigMap", "Secret"):
        return re.sub(r"-[a-z0-9]{10}$", "", name)
    return name


def index(docs: list[dict]) -> dict[tuple[str, str], dict]:
    return {(d["kind"], base_name(d)): d for d in docs}


def documented_settings() -> set[str]:
    """The variables of the Configuration page's reference table."""
    with open(os.path.join(ROOT, "docs", "src", "configuration.md")) as f:
        return set(re.findall(r"^\| `([A-Z_][A-Z0-9_]*)` \|", f.read(), re.M))


def containers(doc: dict) -> list[dict]:
    return doc["spec"]["template"]["spec"]["containers"]


# Read by `posthorn listen` on a developer's machine, never by a server.
CLI_ONLY = {"POSTHORN_API_KEY", "POSTHORN_URL"}


def check_settings(ix: dict) -> None:
    config = ix[("ConfigMap", "posthorn-config")].get("data", {})
    secret = ix[("Secret", "posthorn-secrets")].get("data", {})
    both = set(config) & set(secret)
    assert not both, f"settings in both the ConfigMap and the Secret: {both}"
    missing = documented_settings() - CLI_ONLY - set(config) - set(secret)
    assert not missing, f"settings of the Configuration page in neither: {sorted(missing)}"
    misplaced = SECRET_SETTINGS & set(config)
    assert not misplaced, f"credentials in the ConfigMap: {misplaced}"
    assert SECRET_SETTINGS <= set(secret), f"the Secret lacks {SECRET_SETTINGS - set(secret)}"


def check_security(name: str, pod: dict) -> None:
    ctx = pod.get("securityContext", {})
    assert ctx.get("runAsNonRoot") is True, f"{name}: runAsNonRoot"
    assert pod.get("automountServiceAccountToken") is False, f"{name}: service account token"
    for c in pod["containers"]:
        sc = c.get("securityContext", {})
        assert sc.get("readOnlyRootFilesystem") is True, f"{name}: read-only root"
        assert sc.get("allowPrivilegeEscalation") is False, f"{name}: privilege escalation"
        assert sc.get("capabilities", {}).get("drop") == ["ALL"], f"{name}: capabilities"
        res = c.get("resources", {})
        assert res.get("requests", {}).get("cpu") and res.get("requests", {}).get("memory"), \
            f"{name}: resource requests"
        assert res.get("limits", {}).get("memory"), f"{name}: memory limit"


def check_workloads(ix: dict) -> None:
    server = ix[("Deployment", "posthorn-server")]
    dispatcher = ix[("Deployment", "posthorn-dispatcher")]
    job = ix[("Job", "posthorn-migrate")]
    for name, doc in (("server", server), ("dispatcher", dispatcher), ("migrate", job)):
        check_security(name, doc["spec"]["template"]["spec"])
        refs = {r.get("configMapRef", r.get("secretRef", {})).get("name")
                for c in containers(doc) for r in c.get("envFrom", [])}
        assert {ix[("ConfigMap", "posthorn-config")]["metadata"]["name"],
                ix[("Secret", "posthorn-secrets")]["metadata"]["name"]} <= refs, \
            f"{name} reads the ConfigMap and the Secret"
    assert containers(server)[0]["args"] == ["serve", "--no-dispatch"]
    assert containers(dispatcher)[0]["args"] == ["dispatch"]
    probes = containers(server)[0]
    ready, live = probes["readinessProbe"]["httpGet"], probes["livenessProbe"]["httpGet"]
    assert (ready["path"], live["path"]) == ("/readyz", "/livez"), "readiness apart from liveness"
    # The dispatcher drains for at most 25 s after SIGTERM; the servers finish requests.
    grace = dispatcher["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= 30, f"the dispatcher's grace period {grace} s does not cover its drain"
    assert server["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pdbs = {n for (k, n) in ix if k == "PodDisruptionBudget"}
    assert pdbs == {"posthorn-server", "posthorn-dispatcher"}, pdbs
    service = ix[("Service", "posthorn")]
    assert service["spec"]["selector"].get("app.kubernetes.io/component") == "server"


def check_demo(ix: dict) -> None:
    pg = ix[("Deployment", "posthorn-postgres")]
    spec = pg["spec"]["template"]["spec"]
    check_security("postgres", spec)
    claim = next(v for v in spec["volumes"] if "persistentVolumeClaim" in v)
    assert ("PersistentVolumeClaim", claim["persistentVolumeClaim"]["claimName"]) in ix
    port = next(e["value"] for e in spec["containers"][0]["env"] if e["name"] == "PGPORT")
    assert port != "5432", "the demo's database keeps off this machine's 5432"
    url = secret_value(ix[("Secret", "posthorn-secrets")], "DATABASE_URL")
    assert f":{port}/" in url, f"the demo's DATABASE_URL reaches its database: {url}"
    assert containers(ix[("Job", "posthorn-migrate")])[0]["args"] == ["seed-demo"]
    # On the host's network the server listens on loopback: its probes must go there.
    server = containers(ix[("Deployment", "posthorn-server")])[0]
    addr = ix[("ConfigMap", "posthorn-config")]["data"]["LEPTOS_SITE_ADDR"]
    assert addr.startswith("127.0.0.1:"), addr
    for probe in ("readinessProbe", "livenessProbe"):
        assert server[probe]["httpGet"].get("host") == "127.0.0.1", f"demo {probe} host"


def check_production(ix: dict) -> None:
    assert ("Deployment", "posthorn-postgres") not in ix, "production brings no database"
    assert ix[("Deployment", "posthorn-dispatcher")]["spec"]["replicas"] >= 2
    assert ix[("Deployment", "posthorn-server")]["spec"]["replicas"] >= 2
    for name in WORKLOADS:
        kind = "Job" if name == "posthorn-migrate" else "Deployment"
        c = containers(ix[(kind, name)])[0]
        env = {e["name"]: e for e in c.get("env", [])}
        ref = env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]
        assert ref["name"] == "posthorn-database", f"{name}: DATABASE_URL from its Secret"
        assert "secretKeyRef" in env["POSTHORN_ENCRYPTION_KEY"]["valueFrom"]
        assert not c["image"].endswith(":latest"), f"{name}: a pinned release, not latest"
    assert not secret_value(ix[("Secret", "posthorn-secrets")], "DATABASE_URL")


def secret_value(secret: dict, key: str) -> str:
    import base64

    return base64.b64decode(secret.get("data", {}).get(key, "")).decode()


def describe(docs: list[dict]) -> list[str]:
    return [f"{d['kind']} {d['metadata']['name']}" for d in docs]


def check_renders() -> dict[str, list[dict]]:
    version = subprocess.run([kubectl(), "version", "--client", "--short"],
                             capture_output=True, text=True).stdout.strip()
    log(f"kubectl kustomize with {kubectl()} ({version or 'version unknown'})")
    rendered = {}
    for overlay, check in (("demo", check_demo), ("production", check_production)):
        docs = render(overlay)
        ix = index(docs)
        check_settings(ix)
        check_workloads(ix)
        check(ix)
        log(f"{overlay}: {len(docs)} manifests, checked: " + "; ".join(describe(docs)))
        rendered[overlay] = docs
    return rendered


def main() -> None:
    started = time.time()
    rendered = check_renders()
    if os.environ.get("POSTHORN_KUBE_RENDER_ONLY") == "1":
        log(f"render checks passed in {time.time() - started:.1f} s")
        return
    import kube_play

    kube_play.run(rendered["demo"])
    log(f"passed in {time.time() - started:.1f} s")


if __name__ == "__main__":
    main()
