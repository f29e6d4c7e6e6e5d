package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

func TestParseTokens(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{"one", "tok\n", []string{"tok"}, false},
		{"whitespace trimmed", "  tok \r\n", []string{"tok"}, false},
		{"rotation", "new\n\n old \n", []string{"new", "old"}, false},
		{"empty", " \n\t\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTokens([]byte(tt.in))
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Fatalf("parseTokens(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// applied records the tokens a watcher applies.
type applied struct {
	mu     sync.Mutex
	tokens []string
	calls  int
}

func (a *applied) apply(tokens []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens, a.calls = slices.Clone(tokens), a.calls+1
	return nil
}

func (a *applied) get() ([]string, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.tokens), a.calls
}

// TestTokenFileWatcherRotates: edits of the token file are applied while the router runs; a file
// that is emptied or removed keeps the tokens in force until a valid one appears.
func TestTokenFileWatcherRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin-token")
	write := func(s string) {
		t.Helper()
		// Write then rename, as a Secret update does, so the watcher never reads half a file.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("old\n")
	var got applied
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	w := tokenFileWatcher{
		Path:     path,
		Interval: 10 * time.Millisecond,
		Apply:    got.apply,
		Log:      slog.New(slog.DiscardHandler),
	}
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitTokens := func(want ...string) {
		t.Helper()
		poll.UntilState(t, 10*time.Second, func() (bool, string) {
			tokens, _ := got.get()
			return slices.Equal(tokens, want), fmt.Sprintf("%q", tokens)
		}, fmt.Sprintf("applied tokens %q", want))
	}
	waitTokens("old")
	write("new\nold\n")
	waitTokens("new", "old")
	_, calls := got.get()
	// An emptied, then removed file changes nothing: give the watcher many intervals to (not) act.
	for _, breakIt := range []func(){func() { write("  \n") }, func() { _ = os.Remove(path) }} {
		breakIt()
		time.Sleep(30 * w.Interval)
		if tokens, n := got.get(); n != calls || !slices.Equal(tokens, []string{"new", "old"}) {
			t.Fatalf("tokens %q after %d applies, want the ones in force after %d", tokens, n, calls)
		}
	}
	write("new\n")
	waitTokens("new")
}
