#!/bin/sh
# tune-loop.sh drives a tune (lab tune's ask/tell loop) on a Kubernetes
# cluster with kubectl: the tune's ask once, then per step the generation
# (an Indexed Job running the step's grid in shards) and the tell, until
# the tell's Job says "tune: done". The manifests are in k8s/ beside this
# script; the claim (k8s/state-pvc.yaml) must exist. docs/cluster.md
# explains the loop.
#
# usage: lab/cluster/tune-loop.sh [-resume]
#
#   -resume  skip the ask: continue a tune whose state is already on the
#            volume (after this script stopped, say)
#
# Environment: KUBECTL (default kubectl, with any flags: "kubectl -n lab"),
# MAX_STEPS (default 100: the loop stops there, failing), TIMEOUT (default
# 6h: how long one Job may take), POLL (default 10: seconds between looks
# at a running Job).
set -eu

dir=$(dirname "$0")/k8s
kubectl=${KUBECTL:-kubectl}
max_steps=${MAX_STEPS:-100}
timeout=${TIMEOUT:-6h}
poll=${POLL:-10}

ask=1
case "${1:-}" in
"") ;;
-resume) ask=0 ;;
*)
	echo "usage: $0 [-resume]" >&2
	exit 2
	;;
esac

# run_job NAME FILE creates the Job afresh (a Job's pods cannot be changed,
# so the last step's Job of that name goes first) and waits until it is
# complete; a failed Job stops the loop with its name.
run_job() {
	$kubectl delete job "$1" --ignore-not-found --wait=true
	$kubectl create -f "$2"
	# kubectl wait takes one condition: waiting for Complete alone would
	# sit out the whole timeout on a failed Job. So poll both.
	waited=0
	while :; do
		conditions=$($kubectl get job "$1" -o 'jsonpath={.status.conditions[?(@.status=="True")].type}')
		case " $conditions " in
		*" Complete "*) return 0 ;;
		*" Failed "*)
			echo "tune-loop: job $1 failed: kubectl describe job $1; kubectl logs job/$1" >&2
			exit 1
			;;
		esac
		# Give up when the next look would come after TIMEOUT.
		waited=$((waited + poll))
		if [ "$waited" -gt "$(seconds "$timeout")" ]; then
			echo "tune-loop: job $1 not done after $timeout" >&2
			exit 1
		fi
		sleep "$poll"
	done
}

# seconds turns 90, 90s, 30m or 6h into seconds.
seconds() {
	case "$1" in
	*h) echo $((${1%h} * 3600)) ;;
	*m) echo $((${1%m} * 60)) ;;
	*s) echo "${1%s}" ;;
	*) echo "$1" ;;
	esac
}

if [ "$ask" = 1 ]; then
	run_job lab-tune-ask "$dir/tune-ask.yaml"
fi
step=1
while [ "$step" -le "$max_steps" ]; do
	echo "tune-loop: step $step"
	run_job lab-tune-generation "$dir/tune-generation.yaml"
	run_job lab-tune-tell "$dir/tune-tell.yaml"
	said=$($kubectl logs job/lab-tune-tell --tail=1)
	case "$said" in
	"tune: done")
		echo "tune-loop: done after $step step(s); the report is in the tune's state folder on the volume"
		exit 0
		;;
	"tune: step pending") ;;
	*)
		echo "tune-loop: the tell's last line is \"$said\": expected \"tune: done\" or \"tune: step pending\"" >&2
		exit 1
		;;
	esac
	step=$((step + 1))
done
echo "tune-loop: not done after $max_steps steps (MAX_STEPS)" >&2
exit 1
