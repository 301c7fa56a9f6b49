#!/usr/bin/env bash
# Checks the deployment files without a cluster:
#
#   deploy/validate.sh                  # deploy/k8s/*.yaml and deploy/slurm/*.sbatch
#   deploy/validate.sh FILE...          # only these (.yaml/.yml: Kubernetes, .sbatch: Slurm)
#
# Kubernetes: every YAML document is checked against the Kubernetes 1.33 API of its
# apiVersion and kind, with npm packages pinned below and installed, the first time, into
# a cache folder (never into the project). After that it works offline.
#   - schema: kubernetes-models, the OpenAPI schema of each kind compiled to JSON-schema
#     validators: types, enum values, required fields, int32/int64 ranges, and an unknown
#     apiVersion/kind;
#   - unknown fields: the OpenAPI schema allows any extra field, but the API server (strict
#     field validation, kubectl's default) rejects one. The field names of each kind come
#     from the models of @kubernetes/client-node, generated from the same 1.33 API;
#   - a few rules the API server enforces that no schema states (marked "API server rule"):
#     object names, label values, and for Jobs non-negative counts, restartPolicy, a
#     container image, completions with Indexed, podFailurePolicy's own conditions;
#     and one of this project (marked "project rule"): LOOPSIM_SHARDS equals completions;
#   - YAML as Kubernetes reads it: YAML 1.1 ("yes" is a boolean), duplicate keys refused.
# It does not know the API server's other rules (for example, that parallelism may not
# exceed 10^5 for an Indexed Job, or label keys), admission (quotas, policies, webhooks),
# or whether images, claims and config maps exist: only a real API server
# (kubectl apply --dry-run=server) does.
#
# Slurm: bash -n; #SBATCH lines after the first command (sbatch ignores them); and option
# names against the sbatch manual of Debian's slurm-client, when it is installed or apt-get
# can download it (skipped, with a note, otherwise).
#
# Prints one line per document or file, and exits 0 when all are valid, 1 when one is not,
# 2 when it cannot check (no node or npm, or the install failed).
set -uo pipefail

here=$(dirname "$0")
tools=(kubernetes-models@4.5.1 @kubernetes/client-node@1.3.0 yaml@2.9.1)
cache_root="${LOOPSIM_VALIDATE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/loopsim-validate}"
tool_dir="$cache_root/kubernetes-models-4.5.1+client-node-1.3.0+yaml-2.9.1"

k8s_files=()
sbatch_files=()
if [ $# -eq 0 ]; then
  k8s_files=("$here"/k8s/*.yaml)
  sbatch_files=("$here"/slurm/*.sbatch)
else
  for f in "$@"; do
    case "$f" in
      *.yaml|*.yml) k8s_files+=("$f") ;;
      *.sbatch) sbatch_files+=("$f") ;;
      *) echo "validate.sh: $f: neither .yaml/.yml nor .sbatch" >&2; exit 2 ;;
    esac
  done
fi

status=0

# --- Kubernetes ------------------------------------------------------------------------
install_tools() {
  [ -f "$tool_dir/.complete" ] && return 0
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "validate.sh: needs node and npm (Debian: apt-get install nodejs npm)" >&2
    return 2
  fi
  mkdir -p "$cache_root" || return 2
  # Install beside the cache and move it in whole, so that an interrupted install is never
  # taken for a finished one. --ignore-scripts: nothing of these packages runs but the
  # validators this script calls.
  local tmp
  tmp=$(mktemp -d "$cache_root/.install.XXXXXX") || return 2
  echo "validate.sh: installing ${tools[*]} into $tool_dir" >&2
  if ! npm install --prefix "$tmp" --no-audit --no-fund --no-package-lock --ignore-scripts \
         --loglevel=error "${tools[@]}" >&2; then
    rm -rf "$tmp"
    echo "validate.sh: npm install failed" >&2
    return 2
  fi
  touch "$tmp/.complete"
  rm -rf "$tool_dir"
  mv "$tmp" "$tool_dir"
}

check_k8s() {
  install_tools || return 2
  local script
  script=$(mktemp "$tool_dir/check.XXXXXX.mjs") || return 2
  cat > "$script" <<'JS'
// Run from the tool folder, so that its node_modules resolve.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(new URL(import.meta.url).pathname);
const require = createRequire(join(here, "package.json"));
const YAML = require("yaml");
const models = await import(pathToFileURL(
  join(here, "node_modules/@kubernetes/client-node/dist/gen/models/ObjectSerializer.js")).href);

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// The schema: kubernetes-models has one class per group/version/kind.
function schemaErrors(group, version, kind, obj) {
  let Model;
  try {
    Model = require(group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`)[kind];
  } catch { /* no such group/version */ }
  if (typeof Model !== "function") return [`${obj.apiVersion} ${kind}: not a kind of the Kubernetes 1.33 API`];
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    if (!Array.isArray(e.errors)) return [String(e.message ?? e)];
    return e.errors.map((x) => {
      let what = x.message;
      if (x.params?.allowedValues) what += `: ${x.params.allowedValues.join(", ")}`;
      return `${x.instancePath || "/"}: ${what}`;
    });
  }
}

// Unknown fields, walked down the client-node models' field lists.
function modelName(group, version, kind) {
  const v = version[0].toUpperCase() + version.slice(1);
  const g = group ? group.split(".")[0].replace(/^./, (c) => c.toUpperCase()) : "Core";
  for (const name of [g + v + kind, v + kind]) if (models[name]?.getAttributeTypeMap) return name;
  return undefined;
}
function unknownFields(value, type, path, out) {
  if (value == null) return;
  let m;
  if ((m = /^Array<(.+)>$/.exec(type))) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, m[1], `${path}/${i}`, out));
    return;
  }
  if ((m = /^\{ \[key: string\]: (.+); \}$/.exec(type))) {
    if (isObject(value)) for (const [k, v] of Object.entries(value)) unknownFields(v, m[1], `${path}/${k}`, out);
    return;
  }
  const model = models[type];
  // A primitive, "any", IntOrString, or a value of the wrong type (the schema says so).
  if (!model?.getAttributeTypeMap || !isObject(value)) return;
  const fields = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value)) {
    if (fields.has(k)) unknownFields(v, fields.get(k), `${path}/${k}`, out);
    else out.push(`${path}/${k}: unknown field`);
  }
}

// What the API server refuses although the schema allows it: a few rules, for the kinds
// deploy/k8s uses (names, labels, Jobs and their pod template).
const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
function serverRules(obj) {
  const out = [];
  const rule = (path, text) => out.push(`${path}: ${text} (API server rule)`);
  const name = obj.metadata?.name;
  if (name === undefined && obj.metadata?.generateName === undefined) rule("/metadata/name", "required");
  else if (typeof name === "string" && (!subdomain.test(name) || name.length > 253))
    rule("/metadata/name", "must be lower-case letters, digits, '-' and '.', starting and ending alphanumeric");
  const labels = (meta, at) => {
    for (const [k, v] of Object.entries(isObject(meta?.labels) ? meta.labels : {}))
      if (typeof v === "string" && (v.length > 63 || !labelValue.test(v)))
        rule(`${at}/labels/${k}`, "a label value is at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric");
  };
  labels(obj.metadata, "/metadata");
  if (obj.kind !== "Job" || !isObject(obj.spec)) return out;
  const spec = obj.spec;
  const pod = spec.template?.spec ?? {};
  labels(spec.template?.metadata, "/spec/template/metadata");
  if (typeof name === "string" && name.length > 63) rule("/metadata/name", "a Job's name is at most 63 characters");
  for (const k of ["parallelism", "completions", "backoffLimit"])
    if (typeof spec[k] === "number" && spec[k] < 0) rule(`/spec/${k}`, "must be 0 or more");
  if (typeof spec.activeDeadlineSeconds === "number" && spec.activeDeadlineSeconds <= 0)
    rule("/spec/activeDeadlineSeconds", "must be more than 0");
  if (!["Never", "OnFailure"].includes(pod.restartPolicy))
    rule("/spec/template/spec/restartPolicy", "a Job's pods need Never or OnFailure");
  (pod.containers ?? []).forEach((c, i) => {
    if (isObject(c) && !c.image) rule(`/spec/template/spec/containers/${i}/image`, "required");
  });
  if (spec.completionMode === "Indexed" && spec.completions == null)
    rule("/spec/completions", "required when completionMode is Indexed");
  if (spec.podFailurePolicy) {
    if (pod.restartPolicy !== "Never")
      rule("/spec/template/spec/restartPolicy", "must be Never with a podFailurePolicy");
    const names = [...(pod.containers ?? []), ...(pod.initContainers ?? [])].map((c) => c?.name);
    (spec.podFailurePolicy.rules ?? []).forEach((r, i) => {
      const codes = r?.onExitCodes;
      if (!codes) return;
      const at = `/spec/podFailurePolicy/rules/${i}/onExitCodes`;
      if (codes.containerName != null && !names.includes(codes.containerName))
        rule(`${at}/containerName`, `names no container of the pod template (${names.join(", ")})`);
      if (codes.operator === "In" && (codes.values ?? []).includes(0))
        rule(`${at}/values`, "0 cannot be used with In");
    });
  }
  return out;
}

// This project's Indexed Jobs tell each pod N in LOOPSIM_SHARDS, which must be completions.
function projectRules(obj) {
  const spec = obj.spec;
  if (obj.kind !== "Job" || spec?.completionMode !== "Indexed") return [];
  const out = [];
  (spec.template?.spec?.containers ?? []).forEach((c, i) =>
    (c?.env ?? []).forEach((e, j) => {
      if (e?.name === "LOOPSIM_SHARDS" && String(e.value) !== String(spec.completions))
        out.push(`/spec/template/spec/containers/${i}/env/${j}: LOOPSIM_SHARDS is ${JSON.stringify(e.value)}` +
                 ` but completions is ${spec.completions}: the shards would not cover the search (project rule)`);
    }));
  return out;
}

let failed = false;
for (const file of process.argv.slice(2)) {
  let text;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    console.log(`FAIL  ${file}: ${e.message}`);
    failed = true;
    continue;
  }
  const lines = new YAML.LineCounter();
  // Kubernetes reads YAML 1.1 (sigs.k8s.io/yaml) and refuses duplicate keys.
  const docs = YAML.parseAllDocuments(text, { version: "1.1", uniqueKeys: true, lineCounter: lines });
  const list = Array.isArray(docs) ? docs : [docs];   // an empty stream comes back as one object
  let seen = 0;
  for (const doc of list) {
    const start = doc.contents?.range?.[0] ?? doc.range?.[0] ?? 0;
    const where = `${file}:${lines.linePos(start).line}`;
    const errors = [...doc.errors.map((e) => e.message.split("\n")[0])];
    let obj = null;
    if (errors.length === 0) {
      obj = doc.toJS({ maxAliasCount: 100 });
      if (obj == null) continue;                     // an empty document: only comments, or a trailing ---
    }
    seen++;
    let label = "";
    if (errors.length === 0) {
      if (!isObject(obj) || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
        errors.push("not a Kubernetes object: it needs apiVersion and kind");
      } else {
        const [group, version] = obj.apiVersion.includes("/") ? obj.apiVersion.split("/", 2) : ["", obj.apiVersion];
        label = `${obj.apiVersion} ${obj.kind} ${obj.metadata?.name ?? "(no name)"}`;
        errors.push(...schemaErrors(group, version, obj.kind, obj));
        const model = modelName(group, version, obj.kind);
        if (model) unknownFields(obj, model, "", errors);
        errors.push(...serverRules(obj), ...projectRules(obj));
      }
    }
    if (errors.length === 0) {
      console.log(`ok    ${where}  ${label}`);
    } else {
      failed = true;
      console.log(`FAIL  ${where}  ${label}`.trimEnd());
      for (const e of errors) console.log(`        ${e}`);
    }
  }
  if (seen === 0) {
    console.log(`FAIL  ${file}: no Kubernetes object in it`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
JS
  node "$script" "$@"
  local rc=$?
  rm -f "$script"
  return $rc
}

if [ ${#k8s_files[@]} -gt 0 ]; then
  check_k8s "${k8s_files[@]}"
  rc=$?
  [ $rc -gt $status ] && status=$rc
fi

# --- Slurm -----------------------------------------------------------------------------
# sbatch's long options, read from its manual. Debian's slurm-client has it; without it
# installed, apt-get download fetches the package (no root needed) to read it from.
sbatch_options() {
  local man=/usr/share/man/man1/sbatch.1.gz
  if [ ! -f "$man" ]; then
    man="$cache_root/sbatch.1.gz"
    if [ ! -f "$man" ]; then
      command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || return 1
      local tmp
      mkdir -p "$cache_root" && tmp=$(mktemp -d "$cache_root/.slurm.XXXXXX") || return 1
      if (cd "$tmp" && apt-get download slurm-client >/dev/null 2>&1) &&
         dpkg-deb --fsys-tarfile "$tmp"/slurm-client_*.deb | tar -xO ./usr/share/man/man1/sbatch.1.gz > "$tmp/sbatch.1.gz" 2>/dev/null &&
         [ -s "$tmp/sbatch.1.gz" ]; then
        mv "$tmp/sbatch.1.gz" "$man"
      fi
      rm -rf "$tmp"
      [ -f "$man" ] || return 1
    fi
  fi
  # Option entries in the OPTIONS section: ".TP" then "\fB\-a\fR, \fB\-\-array\fR=<...>".
  zcat "$man" | sed -n '/^\.SH "OPTIONS"/,/^\.SH /p' | grep -A1 '^\.TP' | sed 's/\\-/-/g; s/\\f[BIRP]//g' |
    grep -oE '(^|[ ,])--[a-z][a-z0-9-]*' | sed 's/^[ ,]*//' | sort -u
}

if [ ${#sbatch_files[@]} -gt 0 ]; then
  known=$(sbatch_options) || known=""
  for f in "${sbatch_files[@]}"; do
    problems=()
    if ! out=$(bash -n "$f" 2>&1); then problems+=("bash -n: $out"); fi
    # sbatch stops reading #SBATCH at the first line that is neither blank nor a comment.
    late=$(awk '!/^[[:space:]]*(#|$)/ {body=1} body && /^#SBATCH/ {print NR}' "$f" | tr '\n' ' ')
    [ -n "$late" ] && problems+=("#SBATCH after the first command, which sbatch ignores: line $late")
    if [ -n "$known" ]; then
      while read -r opt; do
        grep -qx -- "$opt" <<<"$known" || problems+=("#SBATCH $opt: not an sbatch option")
      done < <(sed -n 's/^#SBATCH[[:space:]]*\(--[a-z][a-z0-9-]*\).*/\1/p' "$f")
    fi
    if [ ${#problems[@]} -eq 0 ]; then
      note=""
      [ -z "$known" ] && note="  (option names not checked: no sbatch manual here)"
      echo "ok    $f$note"
    else
      echo "FAIL  $f"
      printf '        %s\n' "${problems[@]}"
      [ $status -lt 1 ] && status=1
    fi
  done
fi

exit $status
