// Command testtime reads the output of `go test -json` on its standard input and writes what plain
// `go test` would have written, followed by the time each package's tests took. `make test` and
// `make test-e2e` pipe the race-detector run through it:
//
//	go test -race -json ./... | testtime
//
// A package that passes is reported by its `ok` line alone; a package that fails has the output of
// its failing tests (and anything it printed outside a test) written as soon as it finishes. At the
// end come the time per package, slowest first, then go test's result line of every package in
// the order go test reported them, ending with `FAIL` when something failed, as go test does. The
// exit status is 1 when a package failed, failed to build or never finished, 0 otherwise.
package main

import "os"

func main() { os.Exit(run(os.Stdin, os.Stdout, os.Stderr)) }
