package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var goBuildPkg = regexp.MustCompile(`go build .* -o /out/([a-z-]+) \./([a-z0-9/_-]+)`)

// TestDockerfiles checks each binary has a Dockerfile that builds an existing main package
// statically (CGO_ENABLED=0) onto a distroless or scratch base and runs as non-root.
func TestDockerfiles(t *testing.T) {
	for bin, pkg := range map[string]string{
		"cluster-gateway": "cluster-gateway/cmd/cluster-gateway",
		"global-router":   "global-router/cmd/global-router",
		"switchyardctl":   "global-router/cmd/switchyardctl",
		"modelsim":        "tests/cmd/modelsim",
	} {
		t.Run(bin, func(t *testing.T) {
			src := string(readFile(t, repoPath(t, "deploy", "docker", bin+".Dockerfile")))
			src = strings.ReplaceAll(src, "\\\n", " ")
			m := goBuildPkg.FindStringSubmatch(src)
			if m == nil || m[1] != bin || m[2] != pkg {
				t.Fatalf("want `go build ... -o /out/%s ./%s`, got %v", bin, pkg, m)
			}
			main := string(readFile(t, filepath.Join(repoPath(t, pkg), "main.go")))
			if !strings.Contains(main, "package main") {
				t.Errorf("%s is not a main package", pkg)
			}
			for _, want := range []string{"CGO_ENABLED=0", "FROM golang:", "USER 65532",
				"ENTRYPOINT [\"/usr/local/bin/" + bin + "\"]"} {
				if !strings.Contains(src, want) {
					t.Errorf("Dockerfile lacks %q", want)
				}
			}
			froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(src, -1)
			if last := froms[len(froms)-1][1]; !strings.HasPrefix(last, "gcr.io/distroless/static") && last != "scratch" {
				t.Errorf("final base %s is neither distroless/static nor scratch", last)
			}
			// Every COPY of a module file names a file that exists.
			for _, c := range regexp.MustCompile(`(?m)^COPY ([^-].*) \S+$`).FindAllStringSubmatch(src, -1) {
				for _, f := range strings.Fields(c[1]) {
					if f == "." {
						continue
					}
					if _, err := os.Stat(repoPath(t, f)); err != nil {
						t.Errorf("COPY %s: %v", f, err)
					}
				}
			}
		})
	}
}

// TestChartImagesHaveDockerfiles checks the charts' default images are the ones the Dockerfiles
// build.
func TestChartImagesHaveDockerfiles(t *testing.T) {
	for _, chart := range charts {
		values := string(readFile(t, repoPath(t, "deploy", "charts", chart, "values.yaml")))
		if !strings.Contains(values, "repository: ghcr.io/switchyard-dev/"+chart+"\n") {
			t.Errorf("%s: default image is not ghcr.io/switchyard-dev/%s", chart, chart)
		}
		if _, err := os.Stat(repoPath(t, "deploy", "docker", chart+".Dockerfile")); err != nil {
			t.Error(err)
		}
	}
}
