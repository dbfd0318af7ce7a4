# bench/launch.sh — how a bench starts a run's ranks (sourced by bench/lib.sh). Every bench starts
# a run with real ranks by one call, `mpirun_cmd [MPIRUN OPTIONS] -np N CMD ARGS...`, and LAUNCH
# picks the launcher:
#   LAUNCH=mpirun (default)  mpirun with the flags this machine needs (--oversubscribe, --bind-to
#                            none, --allow-run-as-root as root); HOSTFILE=FILE adds --hostfile FILE
#                            (Open MPI's form: a host per line per slot, or "host slots=N")
#   LAUNCH=slurm             writes the run's sbatch script to $RES/slurm/STEP-HASH.sbatch (STEP:
#                            the bench step, HASH: of the command line, so a rerun rewrites its own
#                            script): --ntasks=N, --cpus-per-task from the run's --threads (1
#                            without), --gpus-per-task=1 when it runs on CUDA (--device cuda*,
#                            --coll nccl, --backend nccl), and `srun --mpi=pmix` (the PMIx that
#                            Debian's Open MPI speaks: docs/RUNTIMES.md) starting CMD. It submits it
#                            with `sbatch --wait`: the job's stdout and stderr come back on the
#                            bench's (from STEP-HASH.out/.err beside the script), its exit status is
#                            the call's, so a bench's steps run as they do under mpirun. The job
#                            takes the bench's environment (sbatch's default --export=ALL; the
#                            script sets OMP_NUM_THREADS too when it is set, for a resubmission by
#                            hand); sbatch reads SBATCH_PARTITION, SBATCH_TIMELIMIT, SBATCH_ACCOUNT...
#   DRY_RUN=1                launches nothing and returns 0: the mpirun line, or the script's name
#                            and (outside a bench step) the script, go to stderr; bench/lib.sh's
#                            done_or_run prints the step's scripts, marks no step done and writes no
#                            record. Runs without ranks still run: pair it with ONLY=STEP
# mpirun's options map onto the script: --mca K V becomes `export OMPI_MCA_K=V`, -x VAR[=V] an
# export, and placement options (--oversubscribe, --bind-to, --map-by, --hostfile,
# --allow-run-as-root) are Slurm's business and dropped. Another option is refused (exit 2).
mpirun_cmd() {
  case ${LAUNCH:-mpirun} in
    mpirun)
      local extra=(--oversubscribe --bind-to none)
      [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
      if [ -n "${HOSTFILE:-}" ]; then
        [ -r "$HOSTFILE" ] || { echo "bench: HOSTFILE=$HOSTFILE: no such readable file" >&2; return 2; }
        extra+=(--hostfile "$HOSTFILE")
      fi
      if [ -n "${DRY_RUN:-}" ]; then echo "DRY_RUN: mpirun ${extra[*]} $*" >&2; return 0; fi
      command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found (make deps installs openmpi-bin)" >&2; return 127; }
      mpirun "${extra[@]}" "$@" ;;
    slurm) launch_slurm "$@" ;;
    *) echo "bench: LAUNCH=${LAUNCH}: not a launcher (mpirun or slurm)" >&2; return 2 ;;
  esac
}
# launch_slurm [MPIRUN OPTIONS] -np N CMD ARGS...: LAUNCH=slurm's half of mpirun_cmd (above)
launch_slurm() {
  local np='' exports=() v
  while [ $# -gt 0 ]; do
    case $1 in
      -np|-n|--np) np=$2; shift 2 ;;
      --mca) exports+=("OMPI_MCA_$2=$3"); shift 3 ;;
      -x) case $2 in *=*) exports+=("$2") ;; *) exports+=("$2=${!2-}") ;; esac; shift 2 ;;
      --oversubscribe|--allow-run-as-root) shift ;;
      --bind-to|--map-by|--hostfile) shift 2 ;;
      -*) echo "bench: LAUNCH=slurm: mpirun option $1 has no Slurm form here (bench/launch.sh)" >&2; return 2 ;;
      *) break ;;
    esac
  done
  case $np in ''|*[!0-9]*|0) echo "bench: LAUNCH=slurm: no rank count (-np N) before $*" >&2; return 2 ;; esac
  [ $# -gt 0 ] || { echo "bench: LAUNCH=slurm: no command after -np $np" >&2; return 2; }
  local cpus=1 gpus=0 prev='' a
  for a in "$@"; do
    case $prev in --threads) cpus=$a ;; --device) case $a in cuda*) gpus=1 ;; esac ;; --coll|--backend) [ "$a" = nccl ] && gpus=1 ;; esac
    prev=$a
  done
  local dir=${RES:-${RESROOT:-results}/misc}/slurm step=${BENCH_STEP:-run} hash
  hash=$(printf '%s\0' "$@" | sha1sum | cut -c1-10)
  local f=$dir/$step-$hash.sbatch
  mkdir -p "$dir" || return 1
  {
    echo "#!/bin/bash"
    echo "# bench ${PAPER:-?}, step $step: $np rank(s); per rank $cpus CPU(s), $gpus GPU(s) (written by bench/launch.sh, LAUNCH=slurm)"
    echo "#SBATCH --job-name=pdl-${PAPER:-bench}-$step"
    echo "#SBATCH --ntasks=$np"
    echo "#SBATCH --cpus-per-task=$cpus"
    [ "$gpus" -gt 0 ] && echo "#SBATCH --gpus-per-task=$gpus"
    echo "#SBATCH --chdir=$PWD"
    echo "#SBATCH --output=${f%.sbatch}.out"
    echo "#SBATCH --error=${f%.sbatch}.err"
    [ -n "${OMP_NUM_THREADS:-}" ] && echo "export OMP_NUM_THREADS=$OMP_NUM_THREADS"
    for v in "${exports[@]}"; do printf 'export %s=%q\n' "${v%%=*}" "${v#*=}"; done
    printf 'srun --mpi=pmix --cpus-per-task=%s' "$cpus"; printf ' %q' "$@"; echo
  } > "$f"
  if [ -n "${DRY_RUN:-}" ]; then   # inside a bench step, done_or_run prints the step's scripts
    echo "DRY_RUN: $f (not submitted)" >&2; [ -n "${BENCH_STEP:-}" ] || cat "$f" >&2; return 0
  fi
  command -v sbatch >/dev/null 2>&1 || { echo "bench: LAUNCH=slurm: sbatch not found (slurm-client)" >&2; return 127; }
  local rc=0
  rm -f "${f%.sbatch}.out" "${f%.sbatch}.err"
  sbatch --wait --parsable "$f" > /dev/null || rc=$?
  [ -f "${f%.sbatch}.out" ] && cat "${f%.sbatch}.out"
  [ -f "${f%.sbatch}.err" ] && cat "${f%.sbatch}.err" >&2
  return $rc
}
