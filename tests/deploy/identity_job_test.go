package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestRegistrationJobAgainstARouter runs the router chart's registration Job, container by
// container, with the real switchyardctl against a real router that requires cluster identity,
// the Job's mounts materialised from the rendered ConfigMap and the admin token: a gateway
// signing with a key in the format Terraform generates (PKCS #8 PEM) is refused until the Job
// registers its public key, then serves; running the Job again changes nothing (`unchanged`, no
// new revision), and a changed registration (a second key, as in a rotation) is written over the
// stored one.
func TestRegistrationJobAgainstARouter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the binaries")
	}
	bin, err := harness.Build()
	if err != nil {
		t.Fatal(err)
	}
	w := harness.NewWorld(t, bin)
	_, privPEM, pubPEM := testKeyPair(t)
	_, _, otherPub := testKeyPair(t)
	_, _, rotatedPub := testKeyPair(t)
	pod := w.Pod("h100")
	gw := w.Gateway(
		"sy-use1",
		"us-east-1",
		[]string{pod.Listen},
		"--summary-signing-key-file="+w.Write("signing.pem", privPEM),
	)
	router := w.RouterNoWait("us-east-1", "", "--require-cluster-identity=true", "--allow-cleartext-gateways=true")
	admin := "http://" + router.Admin

	registrations := func(keys ...any) []any {
		return []any{
			map[string]any{
				"cluster":     "sy-use1",
				"region":      "us-east-1",
				"gatewayURLs": []any{"http://" + gw.Listen},
				"publicKeys":  keys,
			},
			map[string]any{
				"cluster":     "sy-euw1",
				"region":      "eu-west-1",
				"gatewayURLs": []any{"https://gateway-eu-west-1.example.com:8080"},
				"models":      []any{harness.TestModel},
				"publicKeys":  []any{otherPub},
			},
		}
	}
	runJob := func(t *testing.T, regs []any) []string {
		t.Helper()
		objs := renderObjects(
			t,
			"global-router",
			map[string]any{"clusterIdentity": map[string]any{"registrations": regs, "allowCleartextGateways": true}},
		)
		job, keys := registrationJob(t, objs)
		if job == nil {
			t.Fatal("no registration Job")
		}
		return runJobContainers(t, bin, job, keys, admin, w.Token())
	}

	time.Sleep(2 * time.Second) // a few summaries reach the router, which must refuse them
	if got := harness.ServingClusters(context.Background(), admin, w.Token()); len(got) != 0 {
		t.Fatalf("before registration the router serves %v", got)
	}
	for _, out := range runJob(t, registrations(pubPEM)) {
		if !strings.Contains(out, "registered at revision") {
			t.Errorf("first run: %q, want a registration", out)
		}
	}
	if err := harness.WaitClusters(context.Background(), admin, w.Token(), 1, time.Minute); err != nil {
		t.Fatalf("the registered, signing gateway is not served: %v\n%s", err, router.Log())
	}
	before := ctlOutput(t, bin, admin, w.Token(), "registrations")
	for _, out := range runJob(t, registrations(pubPEM)) {
		if !strings.Contains(out, "unchanged") {
			t.Errorf("second run: %q, want unchanged", out)
		}
	}
	if after := ctlOutput(t, bin, admin, w.Token(), "registrations"); after != before {
		t.Errorf("re-running the Job changed the registrations:\n%s\nthen\n%s", before, after)
	}
	outs := runJob(t, registrations(pubPEM, rotatedPub))
	if !strings.Contains(outs[0], "registered at revision") || !strings.Contains(outs[1], "unchanged") {
		t.Errorf("after adding a key: %q", outs)
	}
	if list := ctlOutput(
		t,
		bin,
		admin,
		w.Token(),
		"registrations",
	); !strings.Contains(list, "identity mode: strict") ||
		strings.Count(list, "sy-use1") != 1 ||
		strings.Count(list, ",") < 1 {
		t.Errorf("registrations:\n%s", list)
	}
	if err := harness.WaitClusters(context.Background(), admin, w.Token(), 1, 30*time.Second); err != nil {
		t.Fatalf("the gateway is not served after the key was added: %v", err)
	}
}

// runJobContainers runs each container of the Job with the switchyardctl binary: its mounts
// become directories holding the ConfigMap's keys and the admin token, and --addr points at the
// router. It returns each container's output and fails on a non-zero exit.
func runJobContainers(
	t *testing.T,
	bin string,
	job *batchv1.Job,
	keys *corev1.ConfigMap,
	admin, token string,
) []string {
	t.Helper()
	spec := job.Spec.Template.Spec
	var outs []string
	for _, c := range spec.Containers {
		dirs := map[string]string{}
		for _, m := range c.VolumeMounts {
			dir := t.TempDir()
			dirs[m.MountPath] = dir
			for _, v := range spec.Volumes {
				switch {
				case v.Name != m.Name:
				case v.ConfigMap != nil && v.ConfigMap.Name == keys.Name:
					for k, data := range keys.Data {
						writeTestFile(t, filepath.Join(dir, k), data)
					}
				case v.Secret != nil && v.Secret.SecretName == "sy-global-router-admin":
					writeTestFile(t, filepath.Join(dir, "token"), token)
				default:
					t.Fatalf("volume %s: no test content", v.Name)
				}
			}
		}
		args := make([]string, 0, len(c.Args))
		for _, a := range c.Args {
			if strings.HasPrefix(a, "--addr=") {
				a = "--addr=" + admin
			}
			for mount, dir := range dirs {
				a = strings.ReplaceAll(a, mount+"/", dir+"/")
			}
			args = append(args, a)
		}
		out, err := exec.Command(filepath.Join(bin, "switchyardctl"), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: switchyardctl %v: %v\n%s", c.Name, args, err, out)
		}
		outs = append(outs, string(out))
	}
	return outs
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ctlOutput runs a switchyardctl command against admin and returns its output.
func ctlOutput(t *testing.T, bin, admin, token string, args ...string) string {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeTestFile(t, tokenFile, token)
	out, err := exec.Command(filepath.Join(bin, "switchyardctl"), append([]string{"--addr=" + admin, "--token-file=" + tokenFile}, args...)...).
		CombinedOutput()
	if err != nil {
		t.Fatalf("switchyardctl %v: %v\n%s", args, err, out)
	}
	return fmt.Sprint(string(out))
}
