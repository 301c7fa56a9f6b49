#!/usr/bin/env bash
# Runs deploy/slurm/ for real on a one-node Slurm cluster started here (Debian's slurm-wlm and
# munge, as root): explore.sbatch as an array of 4 shards, then merge.sbatch after it, and
# beside them the unsharded search of the same file. Prints each side's verdict and counts, and
# exits 1 when the merged verdict is not the unsharded one.
#
#   bash bench/slurm_cluster.sh [SCENARIO.toml] [LOOPSIM]
#
# Every daemon and every file lives in a scratch folder, and everything is stopped at the end.
# The cluster's one node is this machine, with its CPUs and 1 GiB of memory a task.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario="${1:-scenarios/accept-burst.toml}"
loopsim="$(realpath "${2:-build/loopsim}")"
for tool in slurmctld slurmd munged sbatch squeue; do
  command -v "$tool" >/dev/null || { echo "slurm_cluster: $tool is missing (apt-get install slurm-wlm munge)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "slurm_cluster: the daemons are started as root" >&2; exit 2; }

scratch="$(mktemp -d /tmp/loopsim-slurm.XXXX)"
chmod 755 "$scratch"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 1
  rm -rf "$scratch"
}
trap cleanup EXIT

# munge: a key of its own and a socket in the scratch folder.
mkdir -p "$scratch/munge"
chown munge:munge "$scratch/munge"
chmod 700 "$scratch/munge"
dd if=/dev/urandom bs=1 count=1024 of="$scratch/munge/munge.key" 2>/dev/null
chown munge:munge "$scratch/munge/munge.key"
chmod 400 "$scratch/munge/munge.key"
socket="$scratch/munge/munge.socket"
runuser -u munge -- munged --key-file="$scratch/munge/munge.key" --socket="$socket" \
  --pid-file="$scratch/munge/munged.pid" --log-file="$scratch/munge/munged.log" --seed-file="$scratch/munge/seed" --force
sleep 0.5
pids+=("$(cat "$scratch/munge/munged.pid")")

host="$(hostname -s)"
cpus="$(nproc)"
mkdir -p "$scratch/state" "$scratch/spool" "$scratch/log"
cat > "$scratch/slurm.conf" <<CONF
ClusterName=loopsim
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/log/slurmctld.log
SlurmdLogFile=$scratch/log/slurmd.log
SlurmctldPort=26817
SlurmdPort=26818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$((cpus * 1024 + 1024)) State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$scratch/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 50); do
  [ -s "$scratch/slurmctld.pid" ] && [ -s "$scratch/slurmd.pid" ] && break
  sleep 0.2
done
pids+=("$(cat "$scratch/slurmctld.pid")" "$(cat "$scratch/slurmd.pid")")
for _ in $(seq 100); do
  sinfo -h -o %T 2>/dev/null | grep -qE "idle|mixed" && break
  sleep 0.3
done
echo "slurm_cluster: $(sinfo -h -o '%P %D node(s) %c CPUs %T') (Slurm $(sinfo -V | cut -d' ' -f2))"

# The array and the merge after it, submitted from a folder of their own, as the scripts say.
work="$scratch/work"
mkdir -p "$work/results"
cp "$scenario" "$work/"
file="$(basename "$scenario")"
cd "$work"
export LOOPSIM="$loopsim" LOOPSIM_TIME_LIMIT=300s
start=$(date +%s)
jid=$(sbatch --parsable --array=0-3 --mem=1G "$OLDPWD/deploy/slurm/explore.sbatch" "$file")
jid=${jid%%;*}
mid=$(sbatch --parsable --mem=512M --dependency=afterok:"$jid" --kill-on-invalid-dep=yes \
  --export=ALL,LOOPSIM_RESULTS=results/"$jid" "$OLDPWD/deploy/slurm/merge.sbatch")
mid=${mid%%;*}
echo "slurm_cluster: explore array $jid (4 tasks), merge $mid"
while squeue -h -j "$jid,$mid" 2>/dev/null | grep -q .; do sleep 1; done
echo "slurm_cluster: both done in $(( $(date +%s) - start )) s of wall time"
for i in 0 1 2 3; do
  printf '  shard %s: exit %s, %s\n' "$i" "$(cat "results/$jid/shard-$i.status" 2>/dev/null || echo missing)" \
    "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("verdict", d["verdict"], "executions", d["executions"], "states", d["states"])' "results/$jid/shard-$i.json" 2>/dev/null || echo "no document")"
done
if [ ! -s "results/$jid/merged.json" ]; then
  echo "slurm_cluster: no merged document. Shard 0's output, the merge's, and slurmd's log:"
  cat results/slurm-"$jid"_0.out results/slurm-"$mid".out 2>/dev/null || true
  tail -n 15 "$scratch/log/slurmd.log"
  exit 1
fi

"$loopsim" explore "$file" --json --out whole > whole.json || true
read -r merged_verdict merged_line < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"], "executions", d["executions"], "states summed", d["states_summed"], "shards", d["shards"])' "results/$jid/merged.json")
read -r whole_verdict whole_line < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"], "executions", d["executions"], "states", d["states"])' whole.json)
echo "merged (Slurm, 4 shards): $merged_verdict, $merged_line; merge exit $(cat "results/$jid/merged.status")"
echo "unsharded:                $whole_verdict, $whole_line"
if [ "$merged_verdict" != "$whole_verdict" ]; then
  echo "slurm_cluster: the verdicts differ" >&2
  exit 1
fi
echo "slurm_cluster: the merged verdict is the unsharded one"
