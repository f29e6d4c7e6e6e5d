// Package deploy holds the tests of the deployment artifacts under deploy/ and terraform/: the
// Helm charts render and lint with Helm's own Go library and every rendered object decodes
// strictly into the Kubernetes API types; the Envoy Gateway manifests decode; the container args
// use only flags the binaries accept; the Grafana dashboard names real metrics; the Dockerfiles
// build packages that exist; and the Terraform modules are consistent and canonically formatted.
package deploy
