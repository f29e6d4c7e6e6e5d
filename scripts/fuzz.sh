#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target (func FuzzXxx(f *testing.F) in a _test.go file) under the
# given directories, one target at a time (packages with the fewest dependencies first), each for
# FUZZTIME of real fuzzing. `go test` alone runs only the seed corpus; this adds new inputs.
#
#   FUZZTIME=30s scripts/fuzz.sh gossip cluster-gateway    # every target, 30 s each
#   FUZZTIME=3s FUZZ_BUDGET=210 scripts/fuzz.sh ...         # stop starting targets after 210 s
#
# FUZZTIME     fuzzing time per target (go test -fuzztime), default 30s.
# FUZZ_BUDGET  seconds for the whole pass (0: no limit, the default). No target starts after it,
#              and a run still going (most often the first, instrumented build of a package's
#              dependencies on a cold build cache) is stopped FUZZ_GRACE seconds (default 15) past
#              it. Targets skipped or stopped are listed, not failed: `go test` still runs their
#              seed corpus, and the build work done is cached for the next pass.
# GO           the go command, default go.
# A target that fails leaves its failing input under the package's testdata/fuzz/ (go test does
# that); the script goes on with the others and exits 1 at the end.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZ_BUDGET=${FUZZ_BUDGET:-0}
FUZZ_GRACE=${FUZZ_GRACE:-15}
[ "$#" -gt 0 ] || set -- .

# targets prints "dir name" for every fuzz target under the arguments, in path order.
targets() {
	find "$@" -name '*_test.go' -not -path '*/testdata/*' -not -path '*/gen/*' -print0 |
		xargs -0 grep -lE '^func Fuzz[A-Za-z0-9_]*\(' | xargs -n1 dirname | sed 's|^\./||' | sort -u |
		while read -r dir; do
			grep -hoE '^func Fuzz[A-Za-z0-9_]*\([A-Za-z_]+ \*testing\.F\)' "$dir"/*_test.go |
				sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' | sort -u |
				while read -r name; do echo "$dir $name"; done
		done
}

# by_weight orders "dir name" lines by how many packages the target's package depends on, lightest
# first, so that on a cold build cache the budget goes to many quick targets before the few whose
# instrumented build pulls in Kubernetes or etcd. Path order when go list fails.
by_weight() {
	local lines weights
	lines=$(cat)
	weights=$(cut -d' ' -f1 <<<"$lines" | sort -u | sed 's|^|./|' |
		xargs "$GO" list -f '{{.Dir}} {{len .Deps}}' 2>/dev/null) || weights=""
	while read -r dir name; do
		w=$(awk -v d="$PWD/$dir" '$1 == d { print $2 }' <<<"$weights")
		echo "${w:-0} $dir $name"
	done <<<"$lines" | sort -k1,1n -k2,2 -k3,3 | cut -d' ' -f2-
}

mapfile -t list < <(targets "$@" | by_weight)
echo "fuzz: ${#list[@]} targets, ${FUZZTIME} each$([ "$FUZZ_BUDGET" -gt 0 ] && echo ", budget ${FUZZ_BUDGET}s")"
start=$SECONDS
failed=()
skipped=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${list[@]}"; do
	dir=${t% *} name=${t#* }
	if [ "$FUZZ_BUDGET" -gt 0 ] && [ $((SECONDS - start)) -ge "$FUZZ_BUDGET" ]; then
		skipped+=("$dir:$name")
		continue
	fi
	t0=$SECONDS
	limit=()
	if [ "$FUZZ_BUDGET" -gt 0 ] && command -v timeout >/dev/null; then
		limit=(timeout -s INT -k 10 $((FUZZ_BUDGET - (SECONDS - start) + FUZZ_GRACE)))
	fi
	rc=0
	"${limit[@]}" "$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "./$dir" >"$log" 2>&1 || rc=$?
	if [ "$rc" -eq 0 ]; then
		execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 || true)
		printf 'ok    %-40s %-22s %4ds %s\n' "$dir" "$name" $((SECONDS - t0)) "${execs:-}"
	elif [ "${#limit[@]}" -gt 0 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; }; then
		printf 'stop  %-40s %-22s %4ds (budget spent)\n' "$dir" "$name" $((SECONDS - t0))
		skipped+=("$dir:$name")
	elif grep -q 'context deadline exceeded' "$log" && ! grep -qE 'Failing input written|hung or terminated' "$log"; then
		# Go's fuzzing coordinator can report its own -fuzztime deadline as a failure when a
		# worker is still busy (minimizing a new input) as it passes: nothing failed and no input
		# was written. A real failure or a hung input always writes the input (see above).
		execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 || true)
		printf 'ok    %-40s %-22s %4ds %s (deadline reached while a worker was busy)\n' "$dir" "$name" $((SECONDS - t0)) "${execs:-}"
	else
		printf 'FAIL  %-40s %-22s %4ds\n' "$dir" "$name" $((SECONDS - t0))
		cat "$log"
		failed+=("$dir:$name")
	fi
done
echo "fuzz: $((${#list[@]} - ${#skipped[@]})) of ${#list[@]} targets fuzzed in $((SECONDS - start))s"
if [ "${#skipped[@]}" -gt 0 ]; then
	echo "fuzz: budget of ${FUZZ_BUDGET}s spent; seed corpus only (run by go test) for: ${skipped[*]}"
fi
if [ "${#failed[@]}" -gt 0 ]; then
	echo "fuzz: FAILED: ${failed[*]}"
	exit 1
fi
