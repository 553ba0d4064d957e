// Package cluster owns the lab's ABR sweeps and tunes beyond one machine:
// the Kubernetes manifests in k8s/ (a ReadWriteMany claim for the shared
// files; an Indexed Job per sweep whose pod i runs lab sweep's shard i+1,
// the Job that merges the parts; the tune's ask, generation and tell Jobs),
// tune-loop.sh that drives a tune's steps with kubectl, and the checks that
// keep them, the image (the repository's Dockerfile) and the GitHub
// Actions workflow (.github/workflows/sweep.yml) true to the lab.
//
// The manifests are embedded and decoded strictly into the Kubernetes API's
// own types (k8s.io/api), so a misspelt field fails here rather than being
// dropped by a cluster. The tests also run the sweep Job's container
// command once per completion index as separate processes on this machine,
// then the merge Job's, and hold the merged table to an unsharded run's,
// byte for byte. docs/cluster.md is the user's page.
package cluster
