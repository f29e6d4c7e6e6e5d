package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestProfileVariants: the shipped default profile yields one variant per weighted plugin and
// factor, each changing exactly that weight (to a float the gateway's decoder accepts) and
// keeping the rest of the file.
func TestProfileVariants(t *testing.T) {
	root, err := harness.WorkspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, ProfileFile))
	if err != nil {
		t.Fatal(err)
	}
	weights, variants, err := ProfileVariants(src, []float64{0.5, 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(weights) < 2 || len(variants) != 2*len(weights) {
		t.Fatalf("%d weights, %d variants", len(weights), len(variants))
	}
	for _, v := range variants {
		var doc yaml.Node
		if err := yaml.Unmarshal(v.YAML, &doc); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		got, _, err := profileWeights(&doc)
		if err != nil {
			t.Fatal(err)
		}
		for j, w := range got {
			want := weights[j].Value
			if w.Plugin == v.Weight.Plugin {
				want *= v.Factor
			}
			if w.Value != want {
				t.Errorf("%s: %s weight %v, want %v", v.Name, w.Plugin, w.Value, want)
			}
		}
		if !strings.Contains(string(v.YAML), "kind: EndpointPickerConfig") ||
			!strings.Contains(string(v.YAML), "# Switchyard's shipped default") {
			t.Errorf("%s lost the rest of the file:\n%s", v.Name, v.YAML)
		}
		// The gateway decodes through sigs.k8s.io/yaml: a fractional weight tagged !!int fails.
		if strings.Contains(string(v.YAML), "!!int") {
			t.Errorf("%s: %s", v.Name, v.YAML)
		}
	}
}

// TestProfileVariantsErrors: a file without weights is refused with the reason.
func TestProfileVariantsErrors(t *testing.T) {
	for name, src := range map[string]string{
		"no profiles": "kind: EndpointPickerConfig\n",
		"no weights":  "schedulingProfiles:\n- name: x\n  plugins:\n  - pluginRef: max-score-picker\n",
		"bad weight":  "schedulingProfiles:\n- name: x\n  plugins:\n  - pluginRef: a\n    weight: lots\n",
	} {
		if _, _, err := ProfileVariants([]byte(src), []float64{2}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
