package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// terraformBinary returns the terraform CLI on PATH or in the workspace's .bin, or "".
func terraformBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("terraform"); err == nil {
		return p
	}
	if p := repoPath(t, ".bin", "terraform"); fileExists(p) {
		return p
	}
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestTerraformValidationsWithTerraform plans the region module's variables with the terraform CLI
// for every variable case of regionValidations: Terraform itself, whose functions and operators
// the in-process evaluation imitates, must accept or refuse each the same way. The variables need
// no provider, so this runs offline. Skipped when terraform is not installed.
func TestTerraformValidationsWithTerraform(t *testing.T) {
	bin := terraformBinary(t)
	if bin == "" {
		t.Skip("terraform is not on PATH or in .bin: the validations are checked in process only")
	}
	dir := t.TempDir()
	src := readFile(t, repoPath(t, "terraform", "modules", "region", "variables.tf"))
	if err := os.WriteFile(filepath.Join(dir, "variables.tf"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	terraform := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0")
		out, err := cmd.CombinedOutput()
		return strings.Join(strings.Fields(string(out)), " "), err // Terraform wraps its messages
	}
	if out, err := terraform("init", "-input=false", "-no-color", "-backend=false"); err != nil {
		t.Fatalf("terraform init: %v: %s", err, out)
	}
	for i, tt := range regionValidations {
		if tt.precondition {
			continue // helm_release.router's, which needs the helm provider
		}
		t.Run(tt.name, func(t *testing.T) {
			vars := filepath.Join(dir, fmt.Sprintf("case%d.tfvars", i))
			if err := os.WriteFile(vars, []byte(regionBaseVars+tt.vars), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := terraform("plan", "-input=false", "-no-color", "-lock=false", "-var-file="+vars)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("terraform refused: %v: %s", err, out)
			case tt.want != "" && (err == nil || !strings.Contains(out, tt.want)):
				t.Fatalf("terraform plan = %v: %s\nwant an error containing %q", err, out, tt.want)
			}
		})
	}
}
