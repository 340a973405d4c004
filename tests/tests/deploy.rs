//! The deployment files of `deploy/`, checked and run.
//!
//! - Every Kubernetes manifest of `deploy/k8s` passes the Kubernetes schemas (`kubernetes-validate
//!   --strict`: an unknown field is an error), the kustomization lists every manifest, and what
//!   the manifests refer to exists (Secret keys, Services' pods and ports, the exporter's
//!   headless Service).
//! - `deploy/compose.yaml` passes the Compose specification's JSON schema
//!   (`tests/schemas/compose-spec.json`), every named volume it uses is declared, `env.example`
//!   has every `${VAR}` it uses, and the export directory lies on a volume.
//! - Each of those checks refuses a deliberately broken copy.
//! - The server runs the way the image and the manifests run it: the user, `ENV`, `WORKDIR`,
//!   `HOME`, `ENTRYPOINT` and `CMD` come from `deploy/Dockerfile`, and the container's args, env,
//!   security context and volume mounts from the manifests, parsed here (so a change to either
//!   is what runs). The real `memsync-server` binary is placed where the image has it and runs as
//!   the manifests' uid/gid (with the pod's `fsGroup`), without capabilities and with
//!   `no_new_privs`, in a private mount namespace whose every file system is read-only except
//!   the volumes the manifest mounts (a temporary directory per volume, prepared like the kubelet
//!   does) and `/dev/shm`. Two settings are changed, and only these: `--listen` becomes
//!   `127.0.0.1:0` and `MEMSYNC_METRICS_LISTEN` `127.0.0.1:0` (loopback, a free port); the
//!   Secret's values are the test database's URL and the test signing key. This needs root
//!   (`unshare -m`, `mount`, `setpriv` from util-linux, overlayfs), as the tests have here and
//!   in CI; without it the tests fail and say what is missing.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use memsync_e2e::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Files and tools

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn deploy_dir() -> PathBuf {
    repo_root().join("deploy")
}

fn k8s_dir() -> PathBuf {
    deploy_dir().join("k8s")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The documents of a (multi-document) YAML file, empty ones left out.
fn yaml_docs(path: &Path) -> Vec<Value> {
    let text = read(path);
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn yaml_doc(path: &Path) -> Value {
    let mut docs = yaml_docs(path);
    assert_eq!(docs.len(), 1, "{} holds one document", path.display());
    docs.remove(0)
}

/// The `kubernetes-validate` binary `scripts/test` installs (pinned) into a virtualenv.
fn kubernetes_validate() -> PathBuf {
    let p = std::env::var_os("MEMSYNC_KUBERNETES_VALIDATE").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "MEMSYNC_KUBERNETES_VALIDATE is not set: it names the kubernetes-validate 1.37.0 binary \
             (from a Python environment that also has jsonschema, a dependency of it) that these \
             tests validate the deployment files with. Run the tests with `scripts/test`, which \
             installs both (pinned) into target/kubernetes-validate-venv"
        )
    });
    assert!(
        p.is_file(),
        "MEMSYNC_KUBERNETES_VALIDATE names {}, which does not exist",
        p.display()
    );
    p
}

/// The Python of kubernetes-validate's environment, which has `jsonschema` and `yaml`.
fn python() -> PathBuf {
    let kv = kubernetes_validate();
    let dir = kv.parent().expect("bin dir");
    let p = dir.join("python");
    assert!(
        p.exists(),
        "no python beside {}: MEMSYNC_KUBERNETES_VALIDATE must name the binary of a virtualenv",
        kv.display()
    );
    p
}

fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

// ---------------------------------------------------------------------------------------------
// Kubernetes schemas

/// The manifests of `deploy/k8s` (every YAML file but the kustomization), sorted.
fn k8s_manifests(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("deploy/k8s")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml" || e == "yml")
                && p.file_name().is_some_and(|n| n != "kustomization.yaml")
        })
        .collect();
    files.sort();
    files
}

/// `kubernetes-validate --strict FILE`: Ok when every document of the file passed its schema.
/// (The tool only warns, and exits 0, for a kind or apiVersion it has no schema for: that
/// counts as a failure here.)
fn validate_manifest(path: &Path) -> Result<String, String> {
    let docs = yaml_docs(path).len();
    let out = Command::new(kubernetes_validate())
        .arg("--strict")
        .arg(path)
        .output()
        .expect("run kubernetes-validate");
    let text = output_text(&out);
    let passed = text
        .lines()
        .filter(|l| l.starts_with("INFO ") && l.contains(" passed for resource "))
        .count();
    let complaints = text
        .lines()
        .any(|l| l.starts_with("WARN") || l.starts_with("ERROR"));
    if out.status.success() && docs > 0 && passed == docs && !complaints {
        Ok(text)
    } else {
        Err(text)
    }
}

#[test]
fn every_kubernetes_manifest_passes_the_kubernetes_schemas() {
    let files = k8s_manifests(&k8s_dir());
    let names: BTreeSet<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for want in [
        "deployment.yaml",
        "service.yaml",
        "pdb.yaml",
        "export-statefulset.yaml",
        "export-service.yaml",
        "migrate-job.yaml",
        "secret.example.yaml",
    ] {
        assert!(names.contains(want), "deploy/k8s/{want} is missing");
    }
    let mut failures = Vec::new();
    for f in &files {
        match validate_manifest(f) {
            Ok(text) => print!("{text}"),
            Err(text) => failures.push(format!("{}:\n{text}", f.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "manifests the Kubernetes schemas refuse:\n{}",
        failures.join("\n")
    );
}

/// A copy of `src` with `from` replaced by `to` (which must occur), in `dir`.
fn broken_copy(src: &Path, dir: &Path, from: &str, to: &str) -> PathBuf {
    let text = read(src);
    assert!(text.contains(from), "{} has no {from:?}", src.display());
    let dest = dir.join(src.file_name().expect("name"));
    std::fs::write(&dest, text.replacen(from, to, 1)).expect("write copy");
    dest
}

#[test]
fn the_kubernetes_schema_check_refuses_broken_manifests() {
    let k8s = k8s_dir();
    let cases = [
        (
            "deployment.yaml",
            "imagePullPolicy: IfNotPresent",
            "imagePullPolicy: IfNotPresent\n          imagePullPolicyy: Always",
            "'imagePullPolicyy' was unexpected",
        ),
        (
            "export-statefulset.yaml",
            "replicas: 1",
            "replicas: one",
            "'one' is not of type 'integer'",
        ),
        (
            "export-statefulset.yaml",
            "              mountPath: /var/lib/memsync",
            "              mountPath: /var/lib/memsync\n              readOnlyy: true",
            "'readOnlyy' was unexpected",
        ),
        (
            "export-service.yaml",
            "apiVersion: v1",
            "apiVersion: v9",
            "Couldn't find schema",
        ),
    ];
    for (file, from, to, says) in cases {
        let tmp = tempfile::tempdir().expect("tmp");
        let copy = broken_copy(&k8s.join(file), tmp.path(), from, to);
        match validate_manifest(&copy) {
            Ok(text) => panic!("{file} with {to:?} passed:\n{text}"),
            Err(text) => assert!(text.contains(says), "{file} with {to:?}: {text}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Kustomization and cross-references

/// Applied on their own, on purpose (see the kustomization's comment).
const NOT_IN_KUSTOMIZATION: [&str; 2] = ["secret.example.yaml", "migrate-job.yaml"];

fn kind_of(doc: &Value) -> &str {
    doc["kind"].as_str().unwrap_or("")
}

fn name_of(doc: &Value) -> &str {
    doc["metadata"]["name"].as_str().unwrap_or("")
}

/// Whether every label of `selector` is among `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .is_some_and(|sel| !sel.is_empty() && sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

/// What is wrong with the kustomization and the references between the manifests of `dir`.
fn kustomization_problems(dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let kustomization = yaml_doc(&dir.join("kustomization.yaml"));
    let listed: Vec<String> = kustomization["resources"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    for r in &listed {
        if !dir.join(r).is_file() {
            problems.push(format!(
                "kustomization.yaml lists {r}, which does not exist"
            ));
        }
        if NOT_IN_KUSTOMIZATION.contains(&r.as_str()) {
            problems.push(format!(
                "kustomization.yaml lists {r}, which is meant to be applied on its own"
            ));
        }
    }
    for f in k8s_manifests(dir) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if !listed.contains(&name) && !NOT_IN_KUSTOMIZATION.contains(&name.as_str()) {
            problems.push(format!("{name} is not listed in kustomization.yaml"));
        }
    }
    for n in NOT_IN_KUSTOMIZATION {
        if !dir.join(n).is_file() {
            problems.push(format!("{n} is missing"));
        }
    }

    // Every document of every manifest, with whether the kustomization applies it.
    let mut docs: Vec<(bool, String, Value)> = Vec::new();
    for f in k8s_manifests(dir) {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        for d in yaml_docs(&f) {
            docs.push((listed.contains(&name), name.clone(), d));
        }
    }
    let secret_keys: BTreeMap<String, BTreeSet<String>> = docs
        .iter()
        .filter(|(_, _, d)| kind_of(d) == "Secret")
        .map(|(_, _, d)| {
            let mut keys = BTreeSet::new();
            for field in ["stringData", "data"] {
                if let Some(o) = d[field].as_object() {
                    keys.extend(o.keys().cloned());
                }
            }
            (name_of(d).to_owned(), keys)
        })
        .collect();
    let workloads: Vec<&(bool, String, Value)> = docs
        .iter()
        .filter(|(_, _, d)| matches!(kind_of(d), "Deployment" | "StatefulSet" | "Job"))
        .collect();
    let services: Vec<&(bool, String, Value)> = docs
        .iter()
        .filter(|(applied, _, d)| *applied && kind_of(d) == "Service")
        .collect();
    let mut images = BTreeSet::new();
    for (_, file, w) in &workloads {
        let pod = &w["spec"]["template"];
        if let Some(sel) = w["spec"]["selector"]["matchLabels"].as_object()
            && !selects(&Value::Object(sel.clone()), &pod["metadata"]["labels"])
        {
            problems.push(format!(
                "{file}: the selector does not match the pod's labels"
            ));
        }
        for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
            images.insert(c["image"].as_str().unwrap_or("").to_owned());
            for e in c["env"].as_array().into_iter().flatten() {
                let r = &e["valueFrom"]["secretKeyRef"];
                if r.is_null() {
                    continue;
                }
                let (s, k) = (
                    r["name"].as_str().unwrap_or(""),
                    r["key"].as_str().unwrap_or(""),
                );
                if !secret_keys.get(s).is_some_and(|keys| keys.contains(k)) {
                    problems.push(format!(
                        "{file}: {} refers to key {k} of Secret {s}, which secret.example.yaml does not have",
                        e["name"].as_str().unwrap_or("")
                    ));
                }
            }
        }
        if kind_of(w) == "StatefulSet" {
            let svc = w["spec"]["serviceName"].as_str().unwrap_or("");
            match services.iter().find(|(_, _, s)| name_of(s) == svc) {
                None => problems.push(format!(
                    "{file}: serviceName {svc} names no Service the kustomization applies"
                )),
                Some((_, _, s)) => {
                    if s["spec"]["clusterIP"].as_str() != Some("None") {
                        problems.push(format!("{file}: Service {svc} is not headless"));
                    }
                    if !selects(&s["spec"]["selector"], &pod["metadata"]["labels"]) {
                        problems.push(format!("{file}: Service {svc} does not select its pods"));
                    }
                }
            }
            // The URL the API replicas forward clones to is the pod's name under that Service.
            let advertise = pod["spec"]["containers"][0]["env"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["name"] == "MEMSYNC_EXPORT_ADVERTISE_URL")
                .and_then(|e| e["value"].as_str())
                .unwrap_or("");
            if !advertise.starts_with(&format!("http://$(POD_NAME).{svc}:")) {
                problems.push(format!(
                    "{file}: MEMSYNC_EXPORT_ADVERTISE_URL {advertise:?} is not http://$(POD_NAME).{svc}:PORT"
                ));
            }
        }
    }
    if images.len() > 1 {
        problems.push(format!("the workloads run different images: {images:?}"));
    }
    // Every Service selects the pods of one applied workload, at a port those pods name.
    for (_, file, s) in &services {
        let Some((_, _, w)) = workloads.iter().find(|(applied, _, w)| {
            *applied
                && selects(
                    &s["spec"]["selector"],
                    &w["spec"]["template"]["metadata"]["labels"],
                )
        }) else {
            problems.push(format!(
                "{file}: Service {} selects no workload's pods",
                name_of(s)
            ));
            continue;
        };
        let ports: BTreeSet<String> = w["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["ports"].as_array().into_iter().flatten())
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect();
        for p in s["spec"]["ports"].as_array().into_iter().flatten() {
            let target = p["targetPort"].as_str().unwrap_or("");
            if !ports.contains(target) {
                problems.push(format!(
                    "{file}: Service {} targets port {target:?}, which its pods do not name",
                    name_of(s)
                ));
            }
        }
    }
    for (_, file, pdb) in docs
        .iter()
        .filter(|(_, _, d)| kind_of(d) == "PodDisruptionBudget")
    {
        let sel = &pdb["spec"]["selector"]["matchLabels"];
        if !workloads
            .iter()
            .any(|(_, _, w)| selects(sel, &w["spec"]["template"]["metadata"]["labels"]))
        {
            problems.push(format!(
                "{file}: the PodDisruptionBudget selects no workload's pods"
            ));
        }
    }
    problems
}

#[test]
fn the_kustomization_lists_every_manifest_and_references_resolve() {
    let problems = kustomization_problems(&k8s_dir());
    assert!(problems.is_empty(), "{problems:#?}");
}

/// A copy of deploy/k8s in a temporary directory.
fn k8s_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    for e in std::fs::read_dir(k8s_dir()).expect("deploy/k8s") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, tmp.path().join(p.file_name().unwrap())).expect("copy");
    }
    tmp
}

#[test]
fn the_kustomization_check_refuses_broken_layouts() {
    let edit = |dir: &Path, file: &str, from: &str, to: &str| {
        let p = dir.join(file);
        let text = read(&p);
        assert!(text.contains(from), "{file} has no {from:?}");
        std::fs::write(&p, text.replacen(from, to, 1)).expect("write");
    };
    type Breakage<'a> = (&'a str, &'a dyn Fn(&Path), &'a str);
    let cases: [Breakage; 6] = [
        (
            "a manifest left out",
            &|d| edit(d, "kustomization.yaml", "  - export-service.yaml\n", ""),
            "export-service.yaml is not listed in kustomization.yaml",
        ),
        (
            "a listed file missing",
            &|d| std::fs::remove_file(d.join("pdb.yaml")).expect("rm"),
            "kustomization.yaml lists pdb.yaml, which does not exist",
        ),
        (
            "an unknown Secret key",
            &|d| {
                edit(
                    d,
                    "export-statefulset.yaml",
                    "key: jwt-secret",
                    "key: jwt-key",
                )
            },
            "refers to key jwt-key of Secret memsync-server",
        ),
        (
            "a StatefulSet without its headless Service",
            &|d| edit(d, "export-service.yaml", "  clusterIP: None\n", ""),
            "Service memsync-export is not headless",
        ),
        (
            "an advertised URL under another name",
            &|d| {
                edit(
                    d,
                    "export-statefulset.yaml",
                    "http://$(POD_NAME).memsync-export:7878",
                    "http://memsync-export:7878",
                )
            },
            "MEMSYNC_EXPORT_ADVERTISE_URL",
        ),
        (
            "a Service port the pods do not name",
            &|d| edit(d, "service.yaml", "targetPort: http", "targetPort: web"),
            "targets port \"web\"",
        ),
    ];
    for (what, break_it, says) in cases {
        let tmp = k8s_copy();
        assert!(
            kustomization_problems(tmp.path()).is_empty(),
            "the copy is fine"
        );
        break_it(tmp.path());
        let problems = kustomization_problems(tmp.path());
        assert!(
            problems.iter().any(|p| p.contains(says)),
            "{what}: expected a problem saying {says:?}, got {problems:#?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Compose

const COMPOSE_SCHEMA_CHECK: &str = r#"
import json, sys
import jsonschema, yaml
schema = json.load(open(sys.argv[1]))
doc = yaml.safe_load(open(sys.argv[2]))
errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(doc), key=lambda e: list(map(str, e.path)))
for e in errors:
    print("/".join(map(str, e.path)) or "(root)", ":", e.message)
sys.exit(1 if errors else 0)
"#;

/// The compose file against the Compose specification's JSON schema: Ok, or the errors.
fn compose_schema_errors(compose: &Path) -> Result<(), String> {
    let schema = repo_root().join("tests/schemas/compose-spec.json");
    let out = Command::new(python())
        .arg("-c")
        .arg(COMPOSE_SCHEMA_CHECK)
        .arg(&schema)
        .arg(compose)
        .output()
        .expect("run python");
    if out.status.success() {
        Ok(())
    } else {
        Err(output_text(&out))
    }
}

/// Every string in a YAML tree.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            strings(x, out)
        }),
        _ => {}
    }
}

/// What the schema cannot say about a compose file and its env.example.
fn compose_problems(compose: &Path, env_example: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let doc = yaml_doc(compose);
    let declared: BTreeSet<String> = doc["volumes"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    let services = doc["services"].as_object().cloned().unwrap_or_default();
    for (name, svc) in &services {
        let mut mounts = Vec::new();
        for v in svc["volumes"].as_array().into_iter().flatten() {
            let (source, target, is_volume) = match v {
                Value::String(s) => {
                    let mut parts = s.split(':');
                    let source = parts.next().unwrap_or("").to_owned();
                    let target = parts.next().unwrap_or("").to_owned();
                    let named = !source.is_empty()
                        && !source.starts_with(['.', '/', '~', '$'])
                        && !target.is_empty();
                    (source, target, named)
                }
                v => (
                    v["source"].as_str().unwrap_or("").to_owned(),
                    v["target"].as_str().unwrap_or("").to_owned(),
                    v["type"] == "volume",
                ),
            };
            if is_volume && !declared.contains(&source) {
                problems.push(format!(
                    "service {name} mounts the volume {source}, which is not declared under volumes:"
                ));
            }
            mounts.push(target);
        }
        // The export directory must be on a volume: the root filesystem is read-only (and a
        // container's own files go with it).
        if let Some(dir) = svc["environment"]["MEMSYNC_EXPORT_DIR"].as_str()
            && !mounts
                .iter()
                .any(|m| !m.is_empty() && Path::new(dir).starts_with(m))
        {
            problems.push(format!(
                "service {name}: MEMSYNC_EXPORT_DIR {dir} is on no volume"
            ));
        }
    }

    // ${VAR}, ${VAR:-default}, ${VAR:?message}, ... ($$ escapes a dollar sign).
    let var = regex::Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-?+])?").expect("regex");
    let mut used: BTreeMap<String, bool> = BTreeMap::new(); // name -> has a default
    let mut all = Vec::new();
    strings(&doc, &mut all);
    for s in all {
        let s = s.replace("$$", "");
        for c in var.captures_iter(&s) {
            let has_default = c.get(2).is_some_and(|m| m.as_str().ends_with('-'));
            let e = used.entry(c[1].to_owned()).or_insert(true);
            *e &= has_default;
        }
    }
    let env_text = read(env_example);
    let mut set = BTreeSet::new();
    let mut mentioned = BTreeSet::new();
    for line in env_text.lines() {
        let (commented, l) = match line.strip_prefix('#') {
            Some(rest) => (true, rest.trim_start()),
            None => (false, line.trim()),
        };
        if let Some((k, _)) = l.split_once('=')
            && !k.is_empty()
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            mentioned.insert(k.to_owned());
            if !commented {
                set.insert(k.to_owned());
            }
        }
    }
    for (name, has_default) in &used {
        if !mentioned.contains(name) {
            problems.push(format!(
                "{name} is used by the compose file but not in env.example"
            ));
        } else if !has_default && !set.contains(name) {
            problems.push(format!(
                "{name} has no default in the compose file, but env.example only mentions it in a comment"
            ));
        }
    }
    for name in &mentioned {
        if !used.contains_key(name) {
            problems.push(format!(
                "env.example has {name}, which the compose file does not use"
            ));
        }
    }
    problems
}

#[test]
fn the_compose_file_passes_the_compose_schema_and_its_references_resolve() {
    let compose = deploy_dir().join("compose.yaml");
    if let Err(e) = compose_schema_errors(&compose) {
        panic!("deploy/compose.yaml does not pass the Compose specification schema:\n{e}");
    }
    let problems = compose_problems(&compose, &deploy_dir().join("env.example"));
    assert!(problems.is_empty(), "{problems:#?}");
    // The server keeps its export on a named volume, and so does PostgreSQL.
    let doc = yaml_doc(&compose);
    let server = &doc["services"]["memsync-server"];
    assert_eq!(
        server["read_only"], true,
        "the server's root filesystem is read-only"
    );
    assert!(
        server["volumes"].as_array().is_some_and(|v| v
            .iter()
            .any(|m| m.as_str().is_some_and(|s| s.ends_with(":/var/lib/memsync")))),
        "the server's /var/lib/memsync is a volume"
    );
}

#[test]
fn the_compose_checks_refuse_broken_files() {
    let compose = deploy_dir().join("compose.yaml");
    let env_example = deploy_dir().join("env.example");

    // Wrong types and unknown fields: the schema.
    for (from, to, says) in [
        ("retries: 12", "retries: [12]", "is not of type"),
        (
            "read_only: true",
            "read_only: true\n    restartt: always",
            "'restartt' does not match",
        ),
        (
            "stop_grace_period: 45s",
            "stop_grace_period: {seconds: 45}",
            "is not of type",
        ),
    ] {
        let tmp = tempfile::tempdir().expect("tmp");
        let copy = broken_copy(&compose, tmp.path(), from, to);
        match compose_schema_errors(&copy) {
            Ok(()) => panic!("compose.yaml with {to:?} passed the schema"),
            Err(e) => assert!(e.contains(says), "{to:?}: {e}"),
        }
    }

    // What the schema cannot see.
    let cases = [
        (
            "  memsync-data:\n",
            "",
            "mounts the volume memsync-data, which is not declared",
        ),
        (
            "MEMSYNC_LOG: ${MEMSYNC_LOG:-info,sqlx=warn,tower_http=warn}",
            "MEMSYNC_LOG: ${MEMSYNC_LOG_FILTER}",
            "MEMSYNC_LOG_FILTER is used by the compose file but not in env.example",
        ),
        (
            "MEMSYNC_EXPORT_DIR: /var/lib/memsync/git",
            "MEMSYNC_EXPORT_DIR: /srv/git",
            "MEMSYNC_EXPORT_DIR /srv/git is on no volume",
        ),
    ];
    for (from, to, says) in cases {
        let tmp = tempfile::tempdir().expect("tmp");
        let copy = broken_copy(&compose, tmp.path(), from, to);
        let problems = compose_problems(&copy, &env_example);
        assert!(
            problems.iter().any(|p| p.contains(says)),
            "{to:?}: expected {says:?}, got {problems:#?}"
        );
    }
    // A required value only mentioned in a comment.
    let tmp = tempfile::tempdir().expect("tmp");
    let env_copy = broken_copy(
        &env_example,
        tmp.path(),
        "\nPOSTGRES_PASSWORD=",
        "\n#POSTGRES_PASSWORD=",
    );
    let problems = compose_problems(&compose, &env_copy);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("POSTGRES_PASSWORD has no default")),
        "{problems:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The image, as deploy/Dockerfile builds it

/// `PATH` of the runtime stage's base image (it sets none of its own).
const BASE_IMAGE: &str = "debian:bookworm-slim";
const BASE_IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

#[derive(Debug)]
struct Image {
    uid: u32,
    gid: u32,
    home: String,
    workdir: String,
    /// Owner and mode of the WORKDIR the image creates (`install -d -o U -g G -m MODE DIR`).
    workdir_mode: u32,
    env: Vec<(String, String)>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    /// Where the server binary is copied to.
    binary: String,
}

/// The instructions of the Dockerfile's last stage: (INSTRUCTION, rest), continuation lines
/// joined and comment lines dropped.
fn final_stage(text: &str) -> Vec<(String, String)> {
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(body) = t.strip_suffix('\\') {
            current.push_str(body);
            current.push(' ');
            continue;
        }
        current.push_str(t);
        let (ins, rest) = current
            .split_once(char::is_whitespace)
            .unwrap_or((&current, ""));
        instructions.push((ins.to_uppercase(), rest.trim().to_owned()));
        current.clear();
    }
    let last_from = instructions
        .iter()
        .rposition(|(i, _)| i == "FROM")
        .expect("a FROM");
    instructions.split_off(last_from)
}

fn image() -> Image {
    let text = read(&deploy_dir().join("Dockerfile"));
    let stage = final_stage(&text);
    let from = &stage[0].1;
    assert_eq!(
        from, BASE_IMAGE,
        "the runtime stage is now FROM {from}: check its PATH and update BASE_IMAGE_PATH here"
    );
    let all = |ins: &'static str| {
        stage
            .iter()
            .filter(move |(i, _)| i == ins)
            .map(|(_, r)| r.as_str())
    };
    let one = |ins: &'static str| {
        let v: Vec<&str> = all(ins).collect();
        assert_eq!(v.len(), 1, "one {ins} in the runtime stage");
        v[0].to_owned()
    };
    let json_array = |ins: &'static str| -> Vec<String> {
        serde_json::from_str(&one(ins)).unwrap_or_else(|e| panic!("{ins} is not a JSON array: {e}"))
    };
    let user = one("USER");
    let (uid, gid) = user.split_once(':').expect("USER uid:gid");
    let (uid, gid): (u32, u32) = (
        uid.parse().expect("numeric uid"),
        gid.parse().expect("numeric gid"),
    );
    let runs: Vec<&str> = all("RUN").collect();
    let capture = |re: &str| -> Vec<String> {
        let re = regex::Regex::new(re).expect("regex");
        runs.iter()
            .flat_map(|r| {
                re.captures_iter(r)
                    .map(|c| c[1].to_owned())
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    // The runtime needs git (clones through `git http-backend`, mirror pushes) and CA
    // certificates (TLS to PostgreSQL, https mirrors).
    let installs = capture(r"apt-get install ([^&]*)").join(" ");
    for pkg in ["git", "ca-certificates", "openssh-client"] {
        assert!(
            installs.split_whitespace().any(|w| w == pkg),
            "the image does not install {pkg}: {installs}"
        );
    }
    let uids = capture(r"useradd [^&]*--uid (\d+)");
    assert_eq!(
        uids,
        [uid.to_string()],
        "the image's user has the uid of USER"
    );
    let home = capture(r"useradd [^&]*--home-dir (\S+)");
    assert_eq!(home.len(), 1, "the image's user has a home directory");
    let workdir = one("WORKDIR");
    let install_d = regex::Regex::new(r"install -d -o \S+ -g \S+ -m ([0-7]+) (\S+)").expect("re");
    let workdir_mode = runs
        .iter()
        .flat_map(|r| install_d.captures_iter(r).collect::<Vec<_>>())
        .find(|c| c[2] == workdir)
        .map(|c| u32::from_str_radix(&c[1], 8).expect("mode"))
        .unwrap_or_else(|| panic!("the image creates its WORKDIR {workdir} with install -d"));
    let mut env = Vec::new();
    for e in all("ENV") {
        for pair in e.split_whitespace() {
            let (k, v) = pair.split_once('=').expect("ENV KEY=VALUE");
            env.push((k.to_owned(), v.trim_matches('"').to_owned()));
        }
    }
    let copy = all("COPY")
        .find(|c| c.contains("memsync-server"))
        .expect("COPY of the server binary");
    let binary = copy
        .split_whitespace()
        .last()
        .expect("destination")
        .to_owned();
    Image {
        uid,
        gid,
        home: home[0].clone(),
        workdir,
        workdir_mode,
        env,
        entrypoint: json_array("ENTRYPOINT"),
        cmd: json_array("CMD"),
        binary,
    }
}

// ---------------------------------------------------------------------------------------------
// A pod, as a manifest describes it

/// A volume mounted into the container: its directory on this machine, prepared like the
/// kubelet prepares it.
struct Mount {
    path: String,
    read_only: bool,
    host: PathBuf,
}

/// One container of a manifest, ready to run the way the cluster would.
struct Pod {
    uid: u32,
    gid: u32,
    fs_group: Option<u32>,
    no_new_privs: bool,
    drop_all_caps: bool,
    workdir: String,
    workdir_mode: u32,
    binary: String,
    /// ENTRYPOINT + CMD, or the container's command/args, `--listen` made loopback.
    argv: Vec<String>,
    env: BTreeMap<String, String>,
    mounts: Vec<Mount>,
    /// Stands in for the container's /dev/shm.
    shm: PathBuf,
    tmp: tempfile::TempDir,
    log: PathBuf,
}

/// The workload `name` of kind `kind` in deploy/k8s/`file`.
fn workload(file: &str, kind: &str, name: &str) -> Value {
    yaml_docs(&k8s_dir().join(file))
        .into_iter()
        .find(|d| kind_of(d) == kind && name_of(d) == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/k8s/{file}"))
}

/// What the container environment's `$(VAR)` references expand to (earlier variables only).
fn expand(value: &str, env: &BTreeMap<String, String>) -> String {
    let re = regex::Regex::new(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)").expect("regex");
    re.replace_all(value, |c: &regex::Captures| match c.get(1) {
        None => "$".to_owned(),
        Some(n) => env
            .get(n.as_str())
            .cloned()
            .unwrap_or_else(|| c[0].to_owned()),
    })
    .into_owned()
}

fn mode(path: &Path, m: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).expect("chmod");
}

fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
}

impl Pod {
    /// The first container of `w`'s pod template, with `secrets` standing for the Secret's values.
    fn new(w: &Value, secrets: &[(&str, &str)]) -> Pod {
        let image = image();
        let kind = kind_of(w);
        let spec = &w["spec"]["template"]["spec"];
        let c = &spec["containers"][0];
        let psc = &spec["securityContext"];
        let csc = &c["securityContext"];
        let pick = |field: &str| csc[field].as_u64().or_else(|| psc[field].as_u64());
        let uid = pick("runAsUser").map_or(image.uid, |u| u as u32);
        let gid = pick("runAsGroup").map_or(image.gid, |g| g as u32);
        assert_eq!(
            (uid, gid),
            (image.uid, image.gid),
            "the manifest runs as another user than the image's USER"
        );
        assert!(
            psc["runAsNonRoot"] == true || csc["runAsNonRoot"] == true,
            "runAsNonRoot is set"
        );
        assert_eq!(
            csc["readOnlyRootFilesystem"], true,
            "the container's root filesystem is read-only"
        );
        let fs_group = psc["fsGroup"].as_u64().map(|g| g as u32);
        let no_new_privs = csc["allowPrivilegeEscalation"] == false;
        let drop_all_caps = csc["capabilities"]["drop"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "ALL"));

        // ENTRYPOINT/CMD, as Kubernetes combines them with command/args.
        let strings = |v: &Value| -> Option<Vec<String>> {
            v.as_array().map(|a| {
                a.iter()
                    .map(|s| s.as_str().expect("string").to_owned())
                    .collect()
            })
        };
        let (command, args) = (strings(&c["command"]), strings(&c["args"]));
        let mut argv = match (command, args) {
            (Some(cmd), Some(args)) => [cmd, args].concat(),
            (Some(cmd), None) => cmd,
            (None, Some(args)) => [image.entrypoint.clone(), args].concat(),
            (None, None) => [image.entrypoint.clone(), image.cmd.clone()].concat(),
        };
        let ports: BTreeMap<String, u64> = c["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or("").to_owned(),
                    p["containerPort"].as_u64().expect("containerPort"),
                )
            })
            .collect();
        if let Some(i) = argv.iter().position(|a| a == "--listen") {
            let listen = argv[i + 1].clone();
            assert!(
                listen.ends_with(&format!(":{}", ports["http"])),
                "--listen {listen} is not the container port named http ({})",
                ports["http"]
            );
            // The one change to the arguments: loopback, a free port.
            argv[i + 1] = "127.0.0.1:0".into();
        } else if argv.iter().any(|a| a == "serve") {
            panic!("`serve` without --listen would listen on 127.0.0.1 only: {argv:?}");
        }

        // The environment: the image's, HOME of its user, then the container's in order.
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert("PATH".into(), BASE_IMAGE_PATH.into());
        env.insert("HOME".into(), image.home.clone());
        for (k, v) in &image.env {
            env.insert(k.clone(), v.clone());
        }
        let pod_name = match kind {
            "StatefulSet" => format!("{}-0", name_of(w)),
            _ => format!("{}-7d9f8b6c5d-x2x4q", name_of(w)),
        };
        // Kubernetes sets HOSTNAME to the pod's name.
        env.insert("HOSTNAME".into(), pod_name.clone());
        for e in c["env"].as_array().into_iter().flatten() {
            let name = e["name"].as_str().expect("env name").to_owned();
            let value = if let Some(v) = e["value"].as_str() {
                expand(v, &env)
            } else if let Some(r) = e["valueFrom"]["secretKeyRef"].as_object() {
                let key = r["key"].as_str().expect("key");
                secrets
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| (*v).to_owned())
                    .unwrap_or_else(|| panic!("no test value for the Secret's key {key}"))
            } else if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                match path {
                    "metadata.name" => pod_name.clone(),
                    "metadata.namespace" => "memsync".to_owned(),
                    other => panic!("no test value for the field {other}"),
                }
            } else {
                panic!("env {name}: a kind of value this test does not know: {e}")
            };
            env.insert(name, value);
        }
        if let Some(m) = env.get_mut("MEMSYNC_METRICS_LISTEN") {
            assert!(
                m.ends_with(&format!(":{}", ports.get("metrics").copied().unwrap_or(0))),
                "MEMSYNC_METRICS_LISTEN {m} is not the container port named metrics"
            );
            // The other change: loopback, a free port.
            *m = "127.0.0.1:0".into();
        }

        // The volumes, prepared like the kubelet does: an emptyDir is a fresh directory of mode
        // 0777, a PersistentVolume's root is root's; with an fsGroup both belong to that group,
        // group-writable and setgid.
        let tmp = tempfile::Builder::new()
            .prefix("memsync-pod-")
            .tempdir()
            .expect("tmp");
        mode(tmp.path(), 0o755);
        let claims: Vec<String> = w["spec"]["volumeClaimTemplates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| name_of(t).to_owned())
            .collect();
        let mut mounts = Vec::new();
        for m in c["volumeMounts"].as_array().into_iter().flatten() {
            let name = m["name"].as_str().expect("volume name");
            let host = tmp.path().join(format!("volume-{name}"));
            std::fs::create_dir(&host).expect("volume dir");
            let volume = spec["volumes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|v| v["name"] == name);
            if claims.iter().any(|c| c == name) {
                mode(&host, 0o755);
            } else if volume.is_some_and(|v| v.get("emptyDir").is_some()) {
                mode(&host, 0o777);
            } else {
                panic!("volume {name}: a kind of volume this test does not know");
            }
            if let Some(g) = fs_group {
                chown(&host, 0, g);
                let m = std::fs::metadata(&host).expect("stat").mode() & 0o777;
                mode(&host, m | 0o2070);
            }
            mounts.push(Mount {
                path: m["mountPath"].as_str().expect("mountPath").to_owned(),
                read_only: m["readOnly"] == true,
                host,
            });
        }
        let shm = tmp.path().join("dev-shm");
        std::fs::create_dir(&shm).expect("shm");
        mode(&shm, 0o1777);
        let log = tmp.path().join("container.log");
        Pod {
            uid,
            gid,
            fs_group,
            no_new_privs,
            drop_all_caps,
            workdir: image.workdir,
            workdir_mode: image.workdir_mode,
            binary: image.binary,
            argv,
            env,
            mounts,
            shm,
            tmp,
            log,
        }
    }

    fn mount(&self, path: &str) -> Option<&Mount> {
        self.mounts.iter().find(|m| m.path == path)
    }

    /// The container's process, `argv` in place of its own: `unshare -m` running a script that
    /// lays out the file systems, then `setpriv` dropping to the pod's user, then `env -i`.
    fn command(&self, argv: &[String], env: &BTreeMap<String, String>) -> Command {
        preflight();
        let ovl = tempfile::Builder::new()
            .prefix("overlay-")
            .tempdir_in(self.tmp.path())
            .expect("overlay dir")
            .keep();
        let mut script = String::from("set -eu\n");
        let q = shell_quote;
        // Mount points the host lacks (the image's WORKDIR, its binary's path, a volume's
        // path) are made in an overlay of their nearest existing parent.
        let mut needed: Vec<(String, bool)> =
            vec![(self.workdir.clone(), true), (self.binary.clone(), false)];
        needed.extend(self.mounts.iter().map(|m| (m.path.clone(), true)));
        let mut overlays: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
        for (i, (path, is_dir)) in needed.iter().enumerate() {
            let p = Path::new(path);
            if p.exists() {
                continue;
            }
            let parent = p
                .ancestors()
                .skip(1)
                .find(|a| a.is_dir())
                .expect("an existing ancestor");
            assert_ne!(parent, Path::new("/"), "{path}: no parent to overlay");
            let upper = overlays.entry(parent.to_path_buf()).or_insert_with(|| {
                let d = ovl.join(format!("o{i}"));
                std::fs::create_dir_all(d.join("upper")).expect("upper");
                std::fs::create_dir_all(d.join("work")).expect("work");
                // The merged directory takes the upper one's owner and mode: the parent's.
                let m = std::fs::metadata(parent).expect("stat");
                mode(&d.join("upper"), m.mode() & 0o7777);
                chown(&d.join("upper"), m.uid(), m.gid());
                d
            });
            let rel = p.strip_prefix(parent).expect("relative");
            let target = upper.join("upper").join(rel);
            if *is_dir {
                std::fs::create_dir_all(&target).expect("mount point");
            } else {
                std::fs::create_dir_all(target.parent().expect("parent")).expect("dirs");
                std::fs::write(&target, b"").expect("mount point");
            }
        }
        for (parent, d) in &overlays {
            script += &format!(
                "mount -t overlay overlay -o lowerdir={},upperdir={},workdir={} {}\n",
                parent.display(),
                d.join("upper").display(),
                d.join("work").display(),
                q(&parent.to_string_lossy())
            );
        }
        // The image: its binary, its (empty) WORKDIR owned by its user.
        script += &format!(
            "mount --bind {} {}\n",
            q(&bin_path("memsync-server").to_string_lossy()),
            q(&self.binary)
        );
        script += &format!(
            "mount -t tmpfs -o size=1m,mode={:o},uid={},gid={} image-workdir {}\n",
            self.workdir_mode,
            self.uid,
            self.gid,
            q(&self.workdir)
        );
        // The pod: its volumes and /dev/shm.
        let mut writable = vec!["/dev/shm".to_owned()];
        for m in &self.mounts {
            script += &format!(
                "mount --bind {} {}\n",
                q(&m.host.to_string_lossy()),
                q(&m.path)
            );
            if m.read_only {
                script += &format!("mount -o remount,bind,ro {}\n", q(&m.path));
            } else {
                writable.push(m.path.clone());
            }
        }
        script += &format!("mount --bind {} /dev/shm\n", q(&self.shm.to_string_lossy()));
        // Everything else read-only (/proc, and what lies under /sys and /dev, as they are).
        script += &format!("writable=' {} '\n", writable.join(" "));
        script += r#"for mp in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
  case "$writable" in *" $mp "*) continue ;; esac
  case "$mp" in /proc|/proc/*|/sys/*|/dev/*) continue ;; esac
  mount -o remount,bind,ro "$mp" || { echo "cannot make $mp read-only" >&2; exit 1; }
done
"#;
        script += &format!("cd {}\n", q(&self.workdir));
        let mut setpriv = format!("exec setpriv --reuid={} --regid={}", self.uid, self.gid);
        match self.fs_group {
            Some(g) => setpriv += &format!(" --groups={g}"),
            None => setpriv += " --clear-groups",
        }
        if self.no_new_privs {
            setpriv += " --no-new-privs";
        }
        if self.drop_all_caps {
            setpriv += " --inh-caps=-all --bounding-set=-all";
        }
        setpriv += " -- env -i";
        for (k, v) in env {
            setpriv += &format!(" {}", q(&format!("{k}={v}")));
        }
        for a in argv {
            setpriv += &format!(" {}", q(a));
        }
        script += &setpriv;
        script += "\n";
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "--propagation", "private", "--", "sh", "-c"])
            .arg(script)
            .env_clear();
        cmd
    }

    /// Runs `memsync-server ARGS` in the container (as `kubectl exec` would), to completion.
    fn exec(&self, args: &[&str], env: &BTreeMap<String, String>) -> Output {
        let mut argv = vec![self.argv[0].clone()];
        argv.extend(args.iter().map(|s| s.to_string()));
        self.command(&argv, env)
            .stdin(Stdio::null())
            .output()
            .expect("run a command in the container")
    }

    /// `memsync-server token issue` in the container: a token.
    fn token(&self, user: &str, team: &str) -> String {
        let out = self.exec(
            &["token", "issue", "--user", user, "--team", team],
            &self.env,
        );
        assert!(out.status.success(), "token issue: {}", output_text(&out));
        String::from_utf8(out.stdout)
            .expect("utf8")
            .trim()
            .to_owned()
    }

    /// Starts the container's process; the server's address once it listens.
    fn start(&self) -> Container {
        let log = std::fs::File::create(&self.log).expect("log");
        let mut child = self
            .command(&self.argv, &self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start the container");
        let line = first_stdout_line(&mut child, Duration::from_secs(120));
        let mut c = Container {
            child,
            url: String::new(),
            log: self.log.clone(),
        };
        let line =
            line.unwrap_or_else(|_| panic!("the server did not start; its log:\n{}", c.log()));
        c.url = line
            .strip_prefix("memsync-server listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}; log:\n{}", c.log()))
            .to_owned();
        c
    }

    /// Every file under the writable mounts that are not volumes (here /dev/shm).
    fn scratch_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.shm)
            .expect("shm")
            .map(|e| e.expect("entry").path())
            .collect()
    }
}

struct Container {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Container {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, as the kubelet stops a container: the exit status.
    fn stop(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(45);
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st;
            }
            assert!(
                Instant::now() < deadline,
                "no exit 45 s after SIGTERM; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Fails, saying what is needed, unless this process can lay out a container's file systems.
fn preflight() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "these tests run memsync-server the way the image and the Kubernetes manifests do: as uid \
         10001 in a private mount namespace with a read-only root filesystem. That needs root \
         (CAP_SYS_ADMIN for unshare -m and mount, CAP_SETUID/CAP_SETGID for setpriv); run the \
         tests as root, as CI does"
    );
    for tool in ["unshare", "setpriv", "mount", "awk"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "{tool} is missing: these tests need util-linux's unshare, setpriv and mount, and awk \
             (apt-get install util-linux mawk)"
        );
    }
    let filesystems = read(Path::new("/proc/filesystems"));
    assert!(
        filesystems
            .lines()
            .any(|l| l.trim_end().ends_with("overlay")),
        "the kernel has no overlayfs (modprobe overlay): these tests make the image's mount \
         points with it"
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "--", "sh", "-c"])
        .arg("mount -t tmpfs probe /tmp && mount -o remount,bind,ro /tmp")
        .output()
        .expect("run unshare");
    assert!(
        out.status.success(),
        "cannot mount in a private mount namespace (unshare -m): {}; these tests need \
         CAP_SYS_ADMIN (a privileged container, or root on the host)",
        output_text(&out)
    );
}

// ---------------------------------------------------------------------------------------------
// Running the manifests

const P: &str = "acme/api";

fn secrets(db: &TestDb) -> [(&str, &str); 2] {
    [
        ("database-url", db.url.as_str()),
        ("jwt-secret", TEST_JWT_SECRET),
    ]
}

/// GET `path` until it answers 200 (at most a minute); fails with the log if the process ends.
async fn wait_200(c: &mut Container, path: &str) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = http
            .get(format!("{}{path}", c.url))
            .send()
            .await
            .map(|r| r.status().as_u16());
        if let Ok(200) = status {
            return;
        }
        if let Ok(Some(exit)) = c.child.try_wait() {
            panic!(
                "the server exited ({exit}) before {path} answered 200; log:\n{}",
                c.log()
            );
        }
        assert!(
            Instant::now() < deadline,
            "{path} answers {status:?}; log:\n{}",
            c.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn push_note(c: &Client, name: &str) -> Value {
    let r = c
        .push(
            P,
            &batch(vec![put(
                &format!("{name}.md"),
                &memory(
                    name,
                    &format!("about {name}"),
                    "project",
                    &format!("{name}\n"),
                ),
                None,
            )]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// Log lines that say the server could not write somewhere.
fn write_failures(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            l.contains("Read-only file system")
                || l.contains("os error 30")
                || l.contains("Permission denied")
                || l.contains("os error 13")
        })
        .collect()
}

#[tokio::test]
async fn the_api_deployment_serves_on_a_read_only_root_without_a_disk() {
    let w = workload("deployment.yaml", "Deployment", "memsync-server");
    assert_eq!(w["spec"]["replicas"], 3);
    let db = TestDb::new().await;
    let pod = Pod::new(&w, &secrets(&db));
    assert!(pod.mounts.is_empty(), "the API replicas mount no volume");
    assert!(
        !pod.env.contains_key("MEMSYNC_EXPORT_DIR"),
        "the API replicas have no export directory"
    );

    // `kubectl exec … memsync-server token issue` works in the container too.
    let token = pod.token("alice", "acme");
    let mut c = pod.start();
    wait_200(&mut c, "/healthz").await;
    wait_200(&mut c, "/readyz").await;
    let client = Client::new(&c.url, &token);
    let pushed = push_note(&client, "one").await;
    let r = client.pull(P, 0).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(sha_of(&r.body, "one.md"), sha_of(&pushed, "one.md"));
    assert_eq!(r.body["revision"], 1, "{}", r.text);

    let status = c.stop();
    let log = c.log();
    assert!(
        status.success(),
        "exit {status:?} after SIGTERM; log:\n{log}"
    );
    // Every file system but /dev/shm was read-only: nothing could be written, and nothing was
    // tried (a failed write would be in the log), nor put in /dev/shm.
    assert_eq!(write_failures(&log), Vec::<&str>::new(), "log:\n{log}");
    assert_eq!(
        pod.scratch_files(),
        Vec::<PathBuf>::new(),
        "written to /dev/shm"
    );
}

#[tokio::test]
async fn the_api_deployment_layout_refuses_writes() {
    // The same container without the signing key: `serve` would have to write jwt.key into its
    // data dir, the image's /var/lib/memsync on the read-only root, and must fail saying so.
    let w = workload("deployment.yaml", "Deployment", "memsync-server");
    let db = TestDb::new().await;
    let pod = Pod::new(&w, &secrets(&db));
    let mut env = pod.env.clone();
    env.remove("MEMSYNC_JWT_SECRET");
    let mut child = pod
        .command(&pod.argv, &env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the container");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve without a signing key is still running after 60 s on a read-only root");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    let text = output_text(&out);
    assert!(!out.status.success(), "serve without a key started: {text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(text.contains("jwt.key"), "{text}");
}

#[tokio::test]
async fn the_migrate_job_runs_on_a_read_only_root() {
    let w = workload("migrate-job.yaml", "Job", "memsync-server-migrate");
    let db = TestDb::new().await;
    let pod = Pod::new(&w, &secrets(&db));
    assert!(pod.mounts.is_empty(), "the Job mounts no volume");
    let out = pod
        .command(&pod.argv, &pod.env)
        .stdin(Stdio::null())
        .output()
        .expect("run the Job's container");
    let text = output_text(&out);
    assert!(out.status.success(), "migrate failed: {text}");
    assert_eq!(write_failures(&text), Vec::<&str>::new(), "{text}");
    assert!(
        count(&db, "SELECT count(*) FROM _sqlx_migrations WHERE success").await > 0,
        "migrations applied"
    );
}

#[tokio::test]
async fn the_export_statefulset_exports_to_its_volume_and_serves_clones() {
    let w = workload("export-statefulset.yaml", "StatefulSet", "memsync-export");
    assert_eq!(w["spec"]["replicas"], 1);
    let db = TestDb::new().await;
    let pod = Pod::new(&w, &secrets(&db));
    assert_eq!(
        pod.env
            .get("MEMSYNC_EXPORT_ADVERTISE_URL")
            .map(String::as_str),
        Some("http://memsync-export-0.memsync-export:7878"),
        "the advertised URL is the pod's name under its headless Service"
    );
    let export_dir = pod
        .env
        .get("MEMSYNC_EXPORT_DIR")
        .expect("an export directory")
        .clone();
    let volume = pod
        .mounts
        .iter()
        .find(|m| !m.read_only && Path::new(&export_dir).starts_with(&m.path))
        .unwrap_or_else(|| panic!("the export directory {export_dir} is on no writable volume"));
    let on_host = volume.host.join(
        Path::new(&export_dir)
            .strip_prefix(&volume.path)
            .expect("under the volume"),
    );
    assert!(
        pod.mount(&pod.workdir).is_some(),
        "the volume is the WORKDIR"
    );

    let token = pod.token("alice", "acme");
    let mut c = pod.start();
    wait_200(&mut c, "/healthz").await;
    wait_200(&mut c, "/readyz").await;
    let client = Client::new(&c.url, &token);
    push_note(&client, "one").await;
    push_note(&client, "two").await;

    // The export appears on the volume, written by the pod's user.
    let repo = on_host.join("acme/api.git");
    let deadline = Instant::now() + Duration::from_secs(60);
    while head_revision(&repo) != Some(2) {
        assert!(
            Instant::now() < deadline,
            "no export of revision 2 in {} (at {:?}); log:\n{}",
            repo.display(),
            head_revision(&repo),
            c.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let meta = std::fs::metadata(&repo).expect("repo");
    assert_eq!(
        (meta.uid(), meta.gid()),
        (10001, 10001),
        "the repository belongs to the pod's user"
    );

    // git clone through the pod.
    let tmp = tempfile::tempdir().expect("tmp");
    let host = c.url.strip_prefix("http://").expect("http");
    let dest = tmp.path().join("clone");
    let out = git_output(
        None,
        &[
            "clone",
            "-q",
            &format!("http://x:{token}@{host}/git/{P}.git"),
            dest.to_str().expect("utf8"),
        ],
    );
    assert!(
        out.status.success(),
        "git clone: {}\nlog:\n{}",
        output_text(&out),
        c.log()
    );
    let one = std::fs::read_to_string(dest.join("one.md")).expect("one.md in the clone");
    assert!(one.ends_with("one\n"), "{one}");
    assert!(dest.join("two.md").is_file(), "two.md in the clone");

    let status = c.stop();
    let log = c.log();
    assert!(
        status.success(),
        "exit {status:?} after SIGTERM; log:\n{log}"
    );
    assert_eq!(write_failures(&log), Vec::<&str>::new(), "log:\n{log}");
    assert_eq!(
        pod.scratch_files(),
        Vec::<PathBuf>::new(),
        "written to /dev/shm"
    );
    // What the volume holds: the export, nothing else.
    let top: Vec<String> = std::fs::read_dir(&volume.host)
        .expect("volume")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(top, ["git"], "the volume holds the export only");
}
