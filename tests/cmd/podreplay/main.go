// Command podreplay replays the requests each pod served in a routing benchmark run (its
// NAME-samples.csv) through a fresh simulated engine of the pod's profile, to explain that pod's
// times to first token offline: what the engine alone makes of the same arrivals, how much of each
// request's wait came from requests that arrived after it and shared its engine steps, and what a
// gateway that held requests back from a pod with prefill in flight would have changed. See
// docs/benchmarks.md.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
