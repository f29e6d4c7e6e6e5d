// Package proto is the root of Switchyard's protobuf module. The .proto sources live under
// switchyard/<api>/<version>/ and the Go code generated from them, committed to the repository,
// under gen/. Regenerate with `make generate`; CI fails when regeneration changes anything.
package proto
