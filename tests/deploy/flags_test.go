package deploy_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

var helpFlag = regexp.MustCompile(`(?m)^\s+--?([a-z0-9][a-z0-9-]*)`)

// binaryFlags returns the flags a built binary lists in its --help output.
func binaryFlags(t *testing.T, binary string) map[string]bool {
	t.Helper()
	dir, err := harness.Build()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(filepath.Join(dir, binary), "--help").CombinedOutput() // exits non-zero on --help
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["listen"] || !flags["metrics-listen"] || len(flags) < 5 {
		t.Fatalf("%s --help lists %d flags:\n%s", binary, len(flags), out)
	}
	return flags
}

// TestChartArgsAreBinaryFlags renders every value set and checks each container argument is a
// --name=value flag that the binary accepts.
func TestChartArgsAreBinaryFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	for chart, sets := range map[string]map[string]map[string]any{
		"cluster-gateway": gatewayValueSets,
		"global-router":   routerValueSets,
	} {
		flags := binaryFlags(t, chart)
		for name, vals := range sets {
			t.Run(chart+"/"+name, func(t *testing.T) {
				dep := find(renderObjects(t, chart, vals), "Deployment")[0].typed.(*appsv1.Deployment)
				c := dep.Spec.Template.Spec.Containers[0]
				if len(c.Command) != 0 {
					t.Errorf("command %v overrides the image's entrypoint", c.Command)
				}
				for _, a := range c.Args {
					name, _, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
					if !strings.HasPrefix(a, "--") || !ok {
						t.Errorf("argument %q is not written --name=value", a)
						continue
					}
					if !flags[name] {
						t.Errorf("%s does not accept --%s", chart, name)
					}
				}
			})
		}
	}
}
