package framework_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

const header = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\n"

func TestParseGIEConfigFile(t *testing.T) {
	c, err := framework.LoadConfigFile(filepath.Join("testdata", "gie-v1.5.0.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Plugins) != 9 || c.Plugins[0].Name != "single-profile-handler" {
		t.Fatalf("plugins = %+v (names must default to the type)", c.Plugins)
	}
	if got := string(c.Plugins[3].Parameters); !strings.Contains(got, `"lruCapacityPerServer":31250`) {
		t.Fatalf("prefix parameters = %s", got)
	}
	p := c.SchedulingProfiles[0]
	if p.Name != "default" || len(p.Plugins) != 4 || *p.Plugins[2].Weight != 3 || p.Plugins[3].Weight != nil {
		t.Fatalf("profile = %+v", p)
	}
	if c.SaturationDetector.PluginRef != "detector" || len(c.FlowControl) == 0 || c.DataLayer == nil {
		t.Fatalf("sections not kept: %+v", c)
	}
}

func TestParseConfigErrors(t *testing.T) {
	plugin := "plugins:\n- type: queue-scorer\n"
	profile := "schedulingProfiles:\n- name: p\n  plugins:\n  - pluginRef: queue-scorer\n"
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"bad api version", "apiVersion: v1\nkind: EndpointPickerConfig\n" + plugin, "apiVersion"},
		{"bad kind", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: Pod\n" + plugin, "kind"},
		{"unknown top-level field", header + plugin + "scheduler: x\n", "unknown field"},
		{"unknown plugin field", header + "plugins:\n- type: queue-scorer\n  weight: 2\n", "unknown field"},
		{
			"unknown profile field",
			header + plugin + "schedulingProfiles:\n- name: p\n  plugins:\n  - pluginRef: queue-scorer\n    wieght: 2\n",
			"unknown field",
		},
		{"duplicate key", header + plugin + "plugins: []\n", "already set"},
		{"no plugins", header + "plugins: []\n", "at least one plugin"},
		{"missing type", header + "plugins:\n- name: a\n", "type is required"},
		{"duplicate name", header + "plugins:\n- type: queue-scorer\n- type: queue-scorer\n", "duplicate plugin name"},
		{
			"undefined ref",
			header + plugin + "schedulingProfiles:\n- name: p\n  plugins:\n  - pluginRef: nope\n",
			`undefined plugin "nope"`,
		},
		{
			"missing ref",
			header + plugin + "schedulingProfiles:\n- name: p\n  plugins:\n  - weight: 1\n",
			"pluginRef is required",
		},
		{
			"three profiles",
			header + plugin + profile + "- name: q\n  plugins: []\n- name: r\n  plugins: []\n",
			"3 profiles given",
		},
		{"duplicate profile", header + plugin + profile + "- name: p\n  plugins: []\n", `duplicate profile name "p"`},
		{"unnamed profile", header + plugin + "schedulingProfiles:\n- plugins: []\n", "name is required"},
		{
			"negative weight",
			header + plugin + "schedulingProfiles:\n- name: p\n  plugins:\n  - pluginRef: queue-scorer\n    weight: -1\n",
			"weight must be >= 0",
		},
		{"unknown gate", header + "featureGates: [warpDrive]\n" + plugin, `feature gate "warpDrive"`},
		{"undefined detector", header + plugin + "saturationDetector:\n  pluginRef: d\n", "saturationDetector"},
		{"undefined parser", header + plugin + "parser:\n  pluginRef: p\n", "parser"},
		{"undefined source", header + plugin + "dataLayer:\n  sources:\n  - pluginRef: s\n", "dataLayer.sources[0]"},
		{"not yaml", "{{{", "decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := framework.ParseConfig([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadConfigFileMissing(t *testing.T) {
	_, err := framework.LoadConfigFile(filepath.Join(t.TempDir(), "absent.yaml"))
	if err == nil || !os.IsNotExist(errorsUnwrapAll(err)) {
		t.Fatalf("err = %v, want a not-exist error", err)
	}
}

func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

func FuzzParseConfig(f *testing.F) {
	data, _ := os.ReadFile(filepath.Join("testdata", "gie-v1.5.0.yaml"))
	f.Add(data)
	f.Add([]byte(header + "plugins:\n- type: x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := framework.ParseConfig(b)
		if err == nil && c.Validate() != nil {
			t.Fatal("ParseConfig accepted a config that does not validate")
		}
	})
}
