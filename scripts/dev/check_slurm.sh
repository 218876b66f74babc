#!/usr/bin/env bash
# Dev-time check of lmx under Slurm on this one machine (root; installs Debian's slurm-wlm and
# starts munged, slurmctld and slurmd with a one-node cluster; not run by CI):
#   1. srun --ntasks 2 lmx train: data-parallel through Slurm's environment, the metrics of
#      one process (train loss within 1e-5 at every step);
#   2. sbatch scripts/slurm/train_ddp.sbatch: the same through the example batch script;
#   3. sbatch --array=0-1 scripts/slurm/sweep_array.sbatch, then merge.sbatch after it
#      (--dependency=afterok): the merged summary equals one unsharded sweep's (timings aside);
#   4. a task that dies (LMX_FAULT) ends the other with the one-line error, nothing final written.
#
#   scripts/dev/check_slurm.sh [--stop]     (--stop: stop the daemons afterwards)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
stop=0
[[ "${1:-}" == "--stop" ]] && stop=1
[[ $(id -u) == 0 ]] || { echo "check_slurm.sh: needs root (installs and starts Slurm)" >&2; exit 2; }
lmx="$root/build/lmx"
[[ -x "$lmx" ]] || { echo "check_slurm.sh: build lmx first (scripts/bootstrap.sh)" >&2; exit 2; }
command -v slurmctld >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm >/dev/null

host="$(hostname -s)"
if ! sinfo -h >/dev/null 2>&1; then
  mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
  cpus="$(nproc)"
  mem=$(( $(awk '/MemTotal/ { print $2 }' /proc/meminfo) / 1024 * 8 / 10 ))
  cat > /etc/slurm/slurm.conf <<EOF
ClusterName=lmxcheck
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  pgrep -x munged >/dev/null || /usr/sbin/munged --force
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
  for _ in $(seq 30); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 1; done
fi
sinfo

work="$(mktemp -d /tmp/lmx-slurm.XXXXXX)"
small=(--seeds 3 --set data.train_docs=200 --set data.val_docs=40 --set data.test_docs=40 --set train.batch_size=8
       --set train.steps=12 --set train.eval_every=6 --set train.warmup_steps=3 --set model.n_layers=2
       --set model.d_model=32 --set model.d_ff=64)
failed=0
ok() { echo "ok    $*"; }
bad() { echo "FAIL  $*"; failed=1; }
same_loss() {  # same_loss A B: train_loss columns equal within 1e-5
  paste -d, <(cut -d, -f3 "$1/seed3/metrics.csv") <(cut -d, -f3 "$2/seed3/metrics.csv") |
    awk -F, 'NR > 1 { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5) bad = 1; n++ } END { exit !(n > 0 && !bad) }'
}
wait_job() { while squeue -h -j "$1" 2>/dev/null | grep -q .; do sleep 1; done; }

"$lmx" -q --threads 1 train configs/textbook.yaml "${small[@]}" --out "$work/one" >/dev/null
timeout 300 srun --ntasks 2 --cpus-per-task 1 "$lmx" -q --threads 1 train configs/textbook.yaml "${small[@]}" \
  --out "$work/srun" > "$work/srun.log" 2>&1 || true
if same_loss "$work/one" "$work/srun"; then ok "srun --ntasks 2: the metrics of one process"; else bad "srun: see $work/srun.log"; fi

job=$(sbatch --parsable --cpus-per-task=1 --output="$work/ddp-%j.out" scripts/slurm/train_ddp.sbatch \
  configs/textbook.yaml "${small[@]}" --out "$work/sbatch")
wait_job "$job"
if same_loss "$work/one" "$work/sbatch"; then
  ok "train_ddp.sbatch: $(grep -o 'rendezvous at [^ ]*' "$work/ddp-$job.out" | head -1), the metrics of one process"
else
  bad "train_ddp.sbatch: see $work/ddp-$job.out"
fi

spec=experiments/01_ffn.yaml
name=$(basename "$spec" .yaml)
array=$(sbatch --parsable --array=0-1 --cpus-per-task=1 --output="$work/sweep-%A_%a.out" \
  scripts/slurm/sweep_array.sbatch "$spec" --quick --set train.steps=30)
merge=$(sbatch --parsable --dependency=afterok:"$array" --output="$work/merge-%j.out" scripts/slurm/merge.sbatch \
  "$spec" "$array")
wait_job "$array"
wait_job "$merge"
"$lmx" -q --out "$work/single" sweep "$spec" --quick --set train.steps=30 >/dev/null 2>&1
untimed() {  # a summary.csv without its timing columns
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) keep[i] = ($i !~ /wall|tokens_per_s|rss/) }
    { line = ""; for (i = 1; i <= NF; i++) if (keep[i]) line = line $i ","; print line }' "$1"
}
if [[ -f "runs/$name/merged-$array/summary.csv" ]] &&
   diff <(untimed "$work/single/summary.csv") <(untimed "runs/$name/merged-$array/summary.csv") >/dev/null; then
  ok "sweep_array.sbatch (2 shards) + merge.sbatch: the summary of one sweep"
else
  bad "sweep array: compare runs/$name/merged-$array/summary.csv with $work/single/summary.csv"
fi
rm -rf "runs/$name/shards/$array" "runs/$name/merged-$array"

start=$SECONDS
LMX_FAULT=die:1:3 LMX_DIST_TIMEOUT=10 timeout 120 srun --ntasks 2 --cpus-per-task 1 "$lmx" -q --threads 1 train \
  configs/textbook.yaml "${small[@]}" --set train.steps=200 --out "$work/dead" > "$work/dead.log" 2>&1 && bad "dead task: srun succeeded"
if grep -q "rank 0 of 2: gradient all-reduce failed" "$work/dead.log" && [[ ! -e "$work/dead/seed3/model.safetensors" ]]; then
  ok "a dead task: the other ends with the one-line error after $((SECONDS - start)) s, no final checkpoint"
else
  bad "dead task: see $work/dead.log"
fi

if [[ $stop == 1 ]]; then pkill -x slurmd || true; pkill -x slurmctld || true; fi
echo "check_slurm.sh: $([[ $failed == 0 ]] && echo 'all checks passed' || echo 'some checks failed') (files in $work)"
exit $failed
