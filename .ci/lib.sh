# Shared by .ci/run, .ci/fast and .ci/slow (sourced, not run): the stage
# helper, the timing table and the trap that prints it on failure.
#
#   stage NAME "what it checks" FUNCTION
#
# prints "== stage NAME: what it checks [elapsed]" at the start, runs FUNCTION
# (under set -e: its first failing command fails the stage and the run) and
# prints "stage NAME: OK in Xm Ys" at its end. When the run ends, the EXIT
# trap prints every stage that ran with its duration; after a failure it
# names the failed stage (and its time until the failure). No stage ever
# skips: a stage that cannot run fails.

if [[ -z ${ci_lib_loaded:-} ]]; then
ci_lib_loaded=1
set -euo pipefail

ci_start=$SECONDS
ci_stage=""         # the stage running now ("" between stages)
ci_stage_start=0
ci_stage_cpu=0
ci_names=()
ci_results=()       # OK or FAILED, per stage
ci_times=()         # seconds, per stage
ci_cpus=()          # CPU seconds, per stage
ci_tmp=$(mktemp -d) # scratch for the stages of this run; removed at the end

ci_fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# ci_cpu: sets ci_cpu_now to the CPU seconds (user + system) of every
# finished child so far (`times` runs in this shell: in a command
# substitution it would count the subshell's children). A stage's CPU time
# does not depend on what else the machine runs, its wall time does: on 2
# cores a stage takes at least half its CPU time.
ci_cpu() {
    times >"$ci_tmp/.times"
    ci_cpu_now=$(tail -n 1 "$ci_tmp/.times" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%d\n", s }')
}

stage() {
    local name=$1 what=$2 fn=$3
    echo
    echo "== stage $name: $what [$(ci_fmt $((SECONDS - ci_start)))]"
    ci_stage=$name
    ci_stage_start=$SECONDS
    ci_cpu
    ci_stage_cpu=$ci_cpu_now
    "$fn"
    ci_cpu
    local took=$((SECONDS - ci_stage_start)) cpu=$((ci_cpu_now - ci_stage_cpu))
    ci_names+=("$name")
    ci_results+=(OK)
    ci_times+=("$took")
    ci_cpus+=("$cpu")
    ci_stage=""
    echo "stage $name: OK in $(ci_fmt "$took") (CPU $(ci_fmt "$cpu"))"
}

ci_summary() {
    local rc=$? i
    trap - EXIT
    set +e
    if [[ -n $ci_stage ]]; then
        local took=$((SECONDS - ci_stage_start))
        ci_names+=("$ci_stage")
        ci_results+=(FAILED)
        ci_times+=("$took")
        ci_cpu
        ci_cpus+=($((ci_cpu_now - ci_stage_cpu)))
        [[ $rc -eq 0 ]] && rc=1
        echo "stage $ci_stage: FAILED in $(ci_fmt "$took") (exit status $rc)"
    fi
    ci_cpu
    echo
    echo "== stages"
    printf '%-18s %-7s %7s %7s\n' STAGE RESULT TIME CPU
    for i in "${!ci_names[@]}"; do
        printf '%-18s %-7s %7s %7s\n' "${ci_names[$i]}" "${ci_results[$i]}" \
            "$(ci_fmt "${ci_times[$i]}")" "$(ci_fmt "${ci_cpus[$i]}")"
    done
    printf '%-18s %-7s %7s %7s\n' total "$([[ $rc -eq 0 ]] && echo OK || echo FAILED)" \
        "$(ci_fmt $((SECONDS - ci_start)))" "$(ci_fmt "$ci_cpu_now")"
    if [[ $rc -ne 0 ]]; then
        if [[ -n $ci_stage ]]; then
            echo "FAILED in stage $ci_stage" >&2
        else
            echo "FAILED outside a stage (exit status $rc)" >&2
        fi
    fi
    rm -rf "$ci_tmp"
    exit "$rc"
}
trap ci_summary EXIT
fi
