package bbr

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzParseAdapterMap feeds the --adapter-map flag's two forms, an "adapter=base,..." list and a
// YAML file: whatever is accepted names no empty adapter or base, and survives a round trip
// through its own encoding (the list re-joined, the map re-marshalled to YAML).
func FuzzParseAdapterMap(f *testing.F) {
	f.Add("a=base1, b=base2", []byte("a: base1\nb: base2\n"))
	f.Add("sql-lora=meta-llama/Llama-3.1-8B,,x = y=z", []byte("{sql-lora: llama, 'true': 'null'}"))
	f.Add("a=", []byte("a: \"\"\n"))
	f.Add("=b", []byte("- a\n- b\n"))
	f.Add(" = ,", []byte("a: &x b\nc: *x\n"))
	f.Add("k=v", []byte("? [a]\n: b\n"))
	path := filepath.Join(f.TempDir(), "adapters.yaml")
	f.Fuzz(func(t *testing.T, list string, file []byte) {
		if strings.Contains(list, "=") {
			m, err := ParseAdapterMap(list)
			if err == nil {
				checkAdapterMap(t, m)
				again, err := ParseAdapterMap(joinAdapterMap(m))
				if err != nil || !maps.Equal(again, m) {
					t.Fatalf("list %q: parsed %v; re-joined parses to %v, %v", list, m, again, err)
				}
			}
		}
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := ParseAdapterMap(path)
		if err != nil {
			return
		}
		checkAdapterMap(t, m)
		out, err := yaml.Marshal(m)
		if err != nil {
			t.Fatalf("marshal %v: %v", m, err)
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := ParseAdapterMap(path)
		if err != nil || !maps.Equal(again, m) {
			t.Fatalf("file %q: parsed %v; re-marshalled parses to %v, %v", file, m, again, err)
		}
	})
}

func checkAdapterMap(t *testing.T, m map[string]string) {
	t.Helper()
	for a, b := range m {
		if a == "" || b == "" {
			t.Fatalf("accepted an empty name: %q=%q in %v", a, b, m)
		}
	}
}

// joinAdapterMap renders m in the flag's list form.
func joinAdapterMap(m map[string]string) string {
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, a+"="+m[a])
	}
	return strings.Join(parts, ",")
}
