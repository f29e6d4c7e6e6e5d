package main

import (
	"bytes"
	"strings"
	"testing"
)

// Lines of `go test -json` as Go 1.26 writes them, per package.
const (
	passing = `{"Time":"2026-12-06T10:00:00Z","Action":"start","Package":"example.com/m/fast"}
{"Time":"2026-12-06T10:00:01Z","Action":"run","Package":"example.com/m/fast","Test":"TestOK"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"example.com/m/fast","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"example.com/m/fast","Test":"TestOK","Output":"    ok_test.go:5: a quiet log line\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"example.com/m/fast","Test":"TestOK","Output":"--- PASS: TestOK (0.30s)\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"pass","Package":"example.com/m/fast","Test":"TestOK","Elapsed":0.3}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"example.com/m/fast","Output":"PASS\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"example.com/m/fast","Output":"ok  \texample.com/m/fast\t0.312s\n"}
{"Time":"2026-12-06T10:00:01Z","Action":"pass","Package":"example.com/m/fast","Elapsed":0.312}
`
	slow = `{"Time":"2026-12-06T10:00:00Z","Action":"start","Package":"example.com/m/slow"}
{"Time":"2026-12-06T10:00:09Z","Action":"pass","Package":"example.com/m/slow","Test":"TestA","Elapsed":2}
{"Time":"2026-12-06T10:00:09Z","Action":"pass","Package":"example.com/m/slow","Test":"TestB","Elapsed":7}
{"Time":"2026-12-06T10:00:09Z","Action":"pass","Package":"example.com/m/slow","Test":"TestB/long_subtest","Elapsed":8}
{"Time":"2026-12-06T10:00:09Z","Action":"output","Package":"example.com/m/slow","Output":"ok  \texample.com/m/slow\t9.020s\n"}
{"Time":"2026-12-06T10:00:09Z","Action":"pass","Package":"example.com/m/slow","Elapsed":9.02}
`
	noTests = `{"Time":"2026-12-06T10:00:00Z","Action":"start","Package":"example.com/m/lib"}
{"Time":"2026-12-06T10:00:00Z","Action":"output","Package":"example.com/m/lib","Output":"?   \texample.com/m/lib\t[no test files]\n"}
{"Time":"2026-12-06T10:00:00Z","Action":"skip","Package":"example.com/m/lib","Elapsed":0}
`
	failing = `{"Time":"2026-12-06T10:00:00Z","Action":"start","Package":"example.com/m/broken"}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Output":"printed by TestMain\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Test":"TestFine","Output":"=== RUN   TestFine\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Test":"TestFine","Output":"    fine_test.go:3: not shown\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"pass","Package":"example.com/m/broken","Test":"TestFine","Elapsed":0}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Test":"TestBad/good","Output":"    bad_test.go:8: good subtest, not shown\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"pass","Package":"example.com/m/broken","Test":"TestBad/good","Elapsed":0}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Test":"TestBad/bad","Output":"    bad_test.go:9: want 1, got 2\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"fail","Package":"example.com/m/broken","Test":"TestBad/bad","Elapsed":0}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Test":"TestBad","Output":"--- FAIL: TestBad (1.50s)\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"fail","Package":"example.com/m/broken","Test":"TestBad","Elapsed":1.5}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Output":"FAIL\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/broken","Output":"FAIL\texample.com/m/broken\t1.611s\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"fail","Package":"example.com/m/broken","Elapsed":1.611}
`
	timedOut = `{"Time":"2026-12-06T10:00:00Z","Action":"start","Package":"example.com/m/hang"}
{"Time":"2026-12-06T10:00:00Z","Action":"output","Package":"example.com/m/hang","Test":"TestHang","Output":"=== RUN   TestHang\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/hang","Test":"TestHang","Output":"panic: test timed out after 2s\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"output","Package":"example.com/m/hang","Output":"FAIL\texample.com/m/hang\t2.011s\n"}
{"Time":"2026-12-06T10:00:02Z","Action":"fail","Package":"example.com/m/hang","Elapsed":2.011}
`
	buildFailed = `{"ImportPath":"example.com/m/nobuild [example.com/m/nobuild.test]","Action":"build-output","Output":"# example.com/m/nobuild [example.com/m/nobuild.test]\n"}
{"ImportPath":"example.com/m/nobuild [example.com/m/nobuild.test]","Action":"build-output","Output":"nobuild/n_test.go:5:28: undefined: undefined\n"}
{"ImportPath":"example.com/m/nobuild [example.com/m/nobuild.test]","Action":"build-fail"}
{"Time":"2026-12-06T10:00:00Z","Action":"start","Package":"example.com/m/nobuild"}
{"Time":"2026-12-06T10:00:00Z","Action":"output","Package":"example.com/m/nobuild","Output":"FAIL\texample.com/m/nobuild [build failed]\n"}
{"Time":"2026-12-06T10:00:00Z","Action":"fail","Package":"example.com/m/nobuild","Elapsed":0,"FailedBuild":"example.com/m/nobuild [example.com/m/nobuild.test]"}
`
	// unfinished is a package whose run was cut off (go test killed): no result event.
	unfinished = `{"Time":"2026-12-06T10:00:00Z","Action":"start","Package":"example.com/m/cut"}
{"Time":"2026-12-06T10:00:01Z","Action":"output","Package":"example.com/m/cut","Test":"TestLong","Output":"=== RUN   TestLong\n"}
`
)

func TestSummary(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		code     int
		want     []string // in this order
		wantNot  []string
		lastLine string
	}{
		{
			name: "all pass",
			in:   slow + passing + noTests,
			want: []string{
				"time per package, slowest first (2 packages, 9.3s of tests, 9.0s from the first package's start to the last one's end",
				"     9.0s      slow  slowest TestB 7.0s\n",
				"     0.3s      fast  slowest TestOK 0.3s\n",
				"ok  \texample.com/m/slow\t9.020s\nok  \texample.com/m/fast\t0.312s\n?   \texample.com/m/lib\t[no test files]\n",
			},
			wantNot:  []string{"a quiet log line", "PASS\n", "lib  ", "FAIL"},
			lastLine: "?   \texample.com/m/lib\t[no test files]",
		},
		{
			name: "a failing test is shown, passing ones are not",
			in:   passing + failing,
			code: 1,
			want: []string{
				"# example.com/m/broken\nprinted by TestMain\n=== RUN   TestBad\n    bad_test.go:9: want 1, got 2\n--- FAIL: TestBad (1.50s)\nFAIL\n",
				"     1.6s FAIL broken",
				"     0.3s      fast",
				"ok  \texample.com/m/fast\t0.312s\nFAIL\texample.com/m/broken\t1.611s\nFAIL\n",
			},
			wantNot:  []string{"not shown", "a quiet log line"},
			lastLine: "FAIL",
		},
		{
			name: "a timed-out test is shown",
			in:   timedOut,
			code: 1,
			want: []string{
				"# example.com/m/hang\n=== RUN   TestHang\npanic: test timed out after 2s\n",
				"FAIL\texample.com/m/hang\t2.011s\nFAIL\n",
			},
			lastLine: "FAIL",
		},
		{
			name: "a build failure is shown",
			in:   buildFailed + passing,
			code: 1,
			want: []string{
				"# example.com/m/nobuild [example.com/m/nobuild.test]\nnobuild/n_test.go:5:28: undefined: undefined\n",
				"FAIL\texample.com/m/nobuild [build failed]\nok  \texample.com/m/fast\t0.312s\nFAIL\n",
			},
			lastLine: "FAIL",
		},
		{
			name: "a package that never finished fails",
			in:   passing + unfinished,
			code: 1,
			want: []string{
				"# example.com/m/cut: the test run ended before the package finished\n=== RUN   TestLong\n",
				"FAIL\texample.com/m/cut\t[unfinished]\nFAIL\n",
			},
			lastLine: "FAIL",
		},
		{
			name:     "lines that are not events pass through",
			in:       "go: downloading example.com/dep v1.0.0\n" + passing,
			want:     []string{"go: downloading example.com/dep v1.0.0\n", "ok  \texample.com/m/fast\t0.312s\n"},
			lastLine: "ok  \texample.com/m/fast\t0.312s",
		},
		{
			name: "no input",
			in:   "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			code := run(strings.NewReader(tt.in), &out, &stderr)
			got := out.String()
			if code != tt.code {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tt.code, got)
			}
			at := 0
			for _, w := range tt.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("output lacks %q after offset %d:\n%s", w, at, got)
				}
				at += i + len(w)
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("output has %q:\n%s", w, got)
				}
			}
			lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
			if last := lines[len(lines)-1]; last != tt.lastLine {
				t.Errorf("last line %q, want %q", last, tt.lastLine)
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr (not a terminal) got %q", stderr.String())
			}
		})
	}
}

func TestCommonPrefix(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"a/b/c", "a/b/d"}, "a/b/"},
		{[]string{"a/b/c", "a/bc/d"}, "a/"},
		{[]string{"a/b", "a/b/c"}, "a/"},
		{[]string{"x", "y"}, ""},
		{[]string{"a/b"}, ""},
	}
	for _, tt := range tests {
		var ps []*pkg
		for _, n := range tt.names {
			ps = append(ps, &pkg{name: n})
		}
		if got := commonPrefix(ps); got != tt.want {
			t.Errorf("commonPrefix(%v) = %q, want %q", tt.names, got, tt.want)
		}
	}
}
