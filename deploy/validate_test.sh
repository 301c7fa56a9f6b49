#!/usr/bin/env bash
# The deployment files pass deploy/validate.sh, and copies of them broken on purpose do not:
# each mutant below must make it exit 1, or the check it stands for has gone blind.
# Exits 0 when all of that holds; prints the mutant that passed otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash "$here/validate.sh" || { echo "validate_test: the shipped files do not pass" >&2; exit 1; }

failures=0
# mutant NAME FILE SED-EXPRESSION SAYS: FILE edited by the expression must be refused, for the
# reason SAYS (a fixed string in validate.sh's output).
mutant() {
  local name=$1 file=$2 expression=$3 says=$4 copy status=0
  copy=$tmp/$name.${file##*.}
  sed -e "$expression" "$here/$file" >"$copy"
  if cmp -s "$copy" "$here/$file"; then
    echo "validate_test: $name: the edit changed nothing in $file" >&2
    failures=$((failures + 1))
    return
  fi
  bash "$here/validate.sh" "$copy" >"$tmp/$name.out" 2>&1 || status=$?
  if [ "$status" -eq 1 ] && grep -qF -- "$says" "$tmp/$name.out"; then
    echo "refused  $name: $(grep -m1 -F -- "$says" "$tmp/$name.out" | sed 's/^ *//')"
  else
    echo "validate_test: $name: exit $status (1 expected, saying \"$says\") for $file edited by '$expression'" >&2
    cat "$tmp/$name.out" >&2
    failures=$((failures + 1))
  fi
}

mutant unknown-field   k8s/explore-job.yaml 's/^  parallelism:/  paralellism:/' "/spec/paralellism: unknown field"
mutant unknown-version k8s/explore-job.yaml 's|^apiVersion: batch/v1|apiVersion: batch/v2|' "not a kind of the Kubernetes 1.33 API"
mutant wrong-type      k8s/explore-job.yaml 's/^  parallelism: 4/  parallelism: "four"/' "/spec/parallelism"
mutant shards-differ   k8s/explore-job.yaml 's/^  completions: 8/  completions: 6/' "LOOPSIM_SHARDS is \"8\" but completions is 6"
mutant bad-name        k8s/merge-job.yaml   's/^  name: loopsim-merge/  name: Loopsim_Merge/' "/metadata/name: must be lower-case"
mutant late-sbatch     slurm/explore.sbatch '$a #SBATCH --time=10' "#SBATCH"

[ "$failures" -eq 0 ] || exit 1
echo "validate_test: the shipped files pass, and all 6 mutants are refused"
