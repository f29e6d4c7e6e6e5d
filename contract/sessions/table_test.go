package sessions_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-dev/switchyard/contract/sessions"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTable returns a table of cfg, the zero fields at the router's defaults (10 minutes,
// 100,000 sessions, 16 MiB).
func newTable(tb testing.TB, cfg sessions.Config) *sessions.Table {
	tb.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = 10 * time.Minute
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 100_000
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 16 << 20
	}
	s, err := sessions.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestTable(t *testing.T) {
	t.Run("ttl", func(t *testing.T) {
		s := newTable(t, sessions.Config{TTL: time.Minute})
		k := s.Key("t", "conv")
		s.Record(k, "east-a", t0)
		if c, ok := s.Lookup(k, t0.Add(59*time.Second)); !ok || c != "east-a" {
			t.Fatalf("Lookup before the TTL = %q, %v", c, ok)
		}
		s.Record(k, "east-b", t0.Add(59*time.Second)) // renews and moves
		if c, ok := s.Lookup(k, t0.Add(118*time.Second)); !ok || c != "east-b" {
			t.Fatalf("Lookup after a renewal = %q, %v", c, ok)
		}
		if _, ok := s.Lookup(k, t0.Add(120*time.Second)); ok {
			t.Fatal("session kept past its TTL")
		}
		if e := s.Evictions(); e.Expired != 1 {
			t.Fatalf("%d expired, want 1", e.Expired)
		}
	})
	t.Run("entries bounded, least recently used evicted", func(t *testing.T) {
		s := newTable(t, sessions.Config{MaxEntries: 2})
		s.Record(s.Key("", "1"), "a", t0)
		s.Record(s.Key("", "2"), "b", t0)
		s.Lookup(s.Key("", "1"), t0)
		s.Record(s.Key("", "1"), "a", t0) // 1 is now the most recent
		s.Record(s.Key("", "3"), "c", t0)
		if _, ok := s.Lookup(s.Key("", "2"), t0); ok {
			t.Fatal("the least recently used session was kept")
		}
		if n, _ := s.Size(); n != 2 {
			t.Fatalf("%d sessions, want 2", n)
		}
		if e := s.Evictions(); e.Capacity != 1 {
			t.Fatalf("%d evicted for capacity, want 1", e.Capacity)
		}
	})
	t.Run("bytes bounded", func(t *testing.T) {
		s := newTable(t, sessions.Config{MaxBytes: 200})
		for i := range 10 {
			s.Record(s.Key("", fmt.Sprint(i)), strings.Repeat("c", 20), t0)
		}
		if n, b := s.Size(); n != 2 || b > 200 {
			t.Fatalf("%d sessions, %d bytes; want 2 within 200", n, b)
		}
		s.Record(s.Key("", "huge"), strings.Repeat("c", 300), t0)
		if _, ok := s.Lookup(s.Key("", "huge"), t0); ok {
			t.Fatal("an entry over the byte bound on its own was kept")
		}
	})
	t.Run("a session moved to a longer value evicts others", func(t *testing.T) {
		s := newTable(t, sessions.Config{MaxBytes: 2*sessions.IndexedEntryBytes + 20, IndexValues: true})
		s.Record(s.Key("", "old"), "a", t0)
		s.Record(s.Key("", "new"), "b", t0)
		s.Record(s.Key("", "new"), strings.Repeat("b", 20), t0)
		if _, ok := s.Lookup(s.Key("", "old"), t0); ok {
			t.Fatal("the table went over its byte bound")
		}
		if c, ok := s.Lookup(s.Key("", "new"), t0); !ok || len(c) != 20 {
			t.Fatalf("the moved session: %q, %v", c, ok)
		}
		if n, b := s.Size(); n != 1 || b != sessions.IndexedEntryBytes+20 {
			t.Fatalf("%d sessions, %d bytes; want 1, %d", n, b, sessions.IndexedEntryBytes+20)
		}
	})
	t.Run("tenants do not share sessions", func(t *testing.T) {
		s := newTable(t, sessions.Config{})
		s.Record(s.Key("t1", "conv"), "east-a", t0)
		for _, k := range []uint64{s.Key("t2", "conv"), s.Key("", "conv"), s.Key("t1c", "onv"), s.Key("t", "1conv")} {
			if c, ok := s.Lookup(k, t0); ok {
				t.Fatalf("another tenant's key found %q", c)
			}
		}
	})
}

// TestRecordReturnsPrevious: Record returns the value that served the session before, "" for a
// new or expired one.
func TestRecordReturnsPrevious(t *testing.T) {
	s := newTable(t, sessions.Config{TTL: time.Minute})
	k := s.Key("t", "conv")
	steps := []struct {
		at    time.Duration
		value string
		want  string
	}{
		{0, "pod-a", ""},
		{time.Second, "pod-a", "pod-a"},
		{2 * time.Second, "pod-b", "pod-a"},
		{3 * time.Minute, "pod-c", ""}, // expired meanwhile
	}
	for i, st := range steps {
		if got := s.Record(k, st.value, t0.Add(st.at)); got != st.want {
			t.Fatalf("step %d: Record = %q, want %q", i, got, st.want)
		}
	}
}

// TestRemoveValue: every session of a value goes at once, counted as removed; the others stay;
// a table without IndexValues ignores it.
func TestRemoveValue(t *testing.T) {
	s := newTable(t, sessions.Config{IndexValues: true})
	for i := range 6 {
		s.Record(s.Key("", fmt.Sprint(i)), fmt.Sprintf("pod-%d", i%3), t0)
	}
	s.Record(s.Key("", "0"), "pod-1", t0) // session 0 moved off pod-0
	s.RemoveValue("pod-0")
	s.RemoveValue("never")
	if n, b := s.Size(); n != 5 || b != 5*(sessions.IndexedEntryBytes+5) {
		t.Fatalf("%d sessions, %d bytes; want 5, %d", n, b, 5*(sessions.IndexedEntryBytes+5))
	}
	if _, ok := s.Lookup(s.Key("", "3"), t0); ok {
		t.Fatal("a session of the removed value was kept")
	}
	if c, ok := s.Lookup(s.Key("", "0"), t0); !ok || c != "pod-1" {
		t.Fatalf("the session that moved off it: %q, %v", c, ok)
	}
	s.RemoveValue("pod-1")
	s.RemoveValue("pod-2")
	if n, b := s.Size(); n != 0 || b != 0 {
		t.Fatalf("%d sessions, %d bytes after removing every value", n, b)
	}
	if e := s.Evictions(); e.Removed != 6 || e.Capacity != 0 || e.Expired != 0 {
		t.Fatalf("evictions %+v, want 6 removed", e)
	}

	plain := newTable(t, sessions.Config{})
	plain.Record(plain.Key("", "x"), "pod-0", t0)
	plain.RemoveValue("pod-0")
	if n, b := plain.Size(); n != 1 || b != sessions.EntryBytes+5 {
		t.Fatalf("without IndexValues: %d sessions, %d bytes; want 1, %d", n, b, sessions.EntryBytes+5)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := sessions.Config{TTL: time.Minute, MaxEntries: 1, MaxBytes: sessions.EntryBytes}
	tests := []struct {
		name string
		edit func(*sessions.Config)
		want string
	}{
		{"valid", func(*sessions.Config) {}, ""},
		{"ttl", func(c *sessions.Config) { c.TTL = 0 }, "TTL"},
		{"entries", func(c *sessions.Config) { c.MaxEntries = 0 }, "MaxEntries"},
		{"bytes", func(c *sessions.Config) { c.MaxBytes = sessions.EntryBytes - 1 }, "MaxBytes"},
		{"indexed bytes", func(c *sessions.Config) { c.IndexValues = true }, "MaxBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			_, err := sessions.New(c)
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("New = %v, want an error naming %q", err, tt.want)
			}
		})
	}
}

// FuzzSessionKey records two arbitrary (tenant, session id) pairs: each finds its own value,
// distinct pairs never find each other's, and the table stays within its bounds.
func FuzzSessionKey(f *testing.F) {
	f.Add("", "s", "t", "s")
	f.Add("a\x00", "b", "a", "\x00b")
	f.Fuzz(func(t *testing.T, t1, s1, t2, s2 string) {
		now := time.Unix(0, 0)
		s := newTable(t, sessions.Config{MaxEntries: 2, MaxBytes: 400})
		s.Record(s.Key(t1, s1), "one", now)
		s.Record(s.Key(t2, s2), "two", now)
		if c, _ := s.Lookup(s.Key(t2, s2), now); c != "two" {
			t.Fatalf("(%q, %q) finds %q, want two", t2, s2, c)
		}
		if t1 != t2 || s1 != s2 {
			if c, _ := s.Lookup(s.Key(t1, s1), now); c != "one" {
				t.Fatalf("(%q, %q) finds %q, want one", t1, s1, c)
			}
		}
		if n, b := s.Size(); n > 2 || b > 400 {
			t.Fatalf("over the bounds: %d, %d bytes", n, b)
		}
	})
}

// BenchmarkTable looks up and records a session in a full table of 100,000, with and without
// the value index.
func BenchmarkTable(b *testing.B) {
	for _, indexed := range []bool{false, true} {
		b.Run(fmt.Sprintf("indexed=%v", indexed), func(b *testing.B) {
			s := newTable(b, sessions.Config{IndexValues: indexed})
			now := time.Now()
			ids := make([]string, 200_000)
			for i := range ids {
				ids[i] = fmt.Sprintf("conv-%d", i)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k := s.Key("tenant", ids[i%len(ids)])
				if _, ok := s.Lookup(k, now); !ok {
					s.Record(k, "east-a", now)
				}
				i++
			}
		})
	}
}
