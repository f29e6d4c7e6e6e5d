package framework_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

func nopFactory(name string, _ json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	return nil, nil
}

func TestRegisterDuplicatePanics(t *testing.T) {
	tests := []struct {
		name  string
		first func(*framework.Registry)
	}{
		{"factory", func(r *framework.Registry) { r.Register("x", nopFactory) }},
		{"ignored", func(r *framework.Registry) { r.RegisterIgnored("x", "why") }},
		{"unsupported", func(r *framework.Registry) { r.RegisterUnsupported("x", "why") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := framework.NewRegistry()
			tt.first(r)
			defer func() {
				if recover() == nil {
					t.Fatal("second registration of x did not panic")
				}
			}()
			r.Register("x", nopFactory)
		})
	}
}

func TestRegisterRejectsEmpty(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("empty type did not panic")
		}
	}()
	framework.NewRegistry().Register("", nopFactory)
}

func TestRegistryLookupAndTypes(t *testing.T) {
	r := framework.NewRegistry()
	r.Register("b", nopFactory)
	r.Register("a", nopFactory)
	r.RegisterIgnored("c", "why")
	if _, ok := r.Lookup("a"); !ok {
		t.Fatal("a not found")
	}
	if _, ok := r.Lookup("c"); ok {
		t.Fatal("ignored type c has a factory")
	}
	if got := strings.Join(r.Types(), ","); got != "a,b" {
		t.Fatalf("Types() = %s, want a,b", got)
	}
}

func TestDecodeParams(t *testing.T) {
	type params struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	tests := []struct {
		raw     string
		want    params
		wantErr string
	}{
		{"", params{N: 7}, ""},
		{"null", params{N: 7}, ""},
		{`{"n": 3}`, params{N: 3}, ""},
		{`{"n": 3, "s": "x"}`, params{N: 3, S: "x"}, ""},
		{`{"m": 3}`, params{}, "unknown field"},
		{`{"n": "three"}`, params{}, "cannot unmarshal"},
		{`{"n": 1} {"n": 2}`, params{}, "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			p := params{N: 7}
			err := framework.DecodeParams(json.RawMessage(tt.raw), &p)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || p != tt.want {
				t.Fatalf("got %+v, %v; want %+v", p, err, tt.want)
			}
		})
	}
}

func TestNoParams(t *testing.T) {
	if err := framework.NoParams(json.RawMessage(`{}`)); err != nil {
		t.Fatalf("empty object: %v", err)
	}
	if err := framework.NoParams(json.RawMessage(`{"x": 1}`)); err == nil {
		t.Fatal("unexpected parameter accepted")
	}
}

func TestDuration(t *testing.T) {
	var d framework.Duration
	if err := json.Unmarshal([]byte(`"250ms"`), &d); err != nil || d.Milliseconds() != 250 {
		t.Fatalf("got %v, %v", d, err)
	}
	for _, bad := range []string{`250`, `"soon"`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
