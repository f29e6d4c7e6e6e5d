package openai

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ModelSource says where a pass-through path's requests carry their model.
type ModelSource uint8

// Where a pass-through request's model is read.
const (
	// ModelJSON is the "model" member of a JSON body, read with Parse as on the inference paths.
	ModelJSON ModelSource = iota + 1
	// ModelForm is the "model" field of a multipart/form-data body, read with ReadForm while the
	// rest of the body (an audio file, say) streams through.
	ModelForm
)

// String is the source's name in a path list: "json" or "multipart".
func (m ModelSource) String() string {
	switch m {
	case ModelJSON:
		return "json"
	case ModelForm:
		return "multipart"
	}
	return fmt.Sprintf("ModelSource(%d)", uint8(m))
}

// PassthroughPath is an engine path that a front door forwards, POST only, to a model server
// of the model its request names: vLLM's tokenizer, reranking, scoring, pooling and audio
// endpoints. Such requests are scheduled on the model alone (no prompt, so no prefix scoring).
type PassthroughPath struct {
	// Path is the request path, e.g. "/tokenize".
	Path string
	// Model says how the model is read from the request.
	Model ModelSource
}

// DefaultPassthroughPaths is the pass-through list both tiers use by default: the engine paths
// of vLLM's OpenAI-compatible server that take a model, in the form ParsePassthroughPaths reads.
const DefaultPassthroughPaths = "/tokenize=json,/detokenize=json," +
	"/rerank=json,/v1/rerank=json,/v2/rerank=json,/score=json,/v1/score=json,/pooling=json,/classify=json," +
	"/v1/audio/transcriptions=multipart,/v1/audio/translations=multipart"

// MaxPassthroughPaths bounds a pass-through list (the paths are the routes of a front door).
const MaxPassthroughPaths = 64

// maxPassthroughPath bounds one path of the list.
const maxPassthroughPath = 256

// PathNone is the pass-through list that enables no path.
const PathNone = "none"

// ErrPassthroughPaths is wrapped by every error of ParsePassthroughPaths.
var ErrPassthroughPaths = errors.New("openai: invalid pass-through path list")

// ParsePassthroughPaths reads a pass-through list: comma-separated PATH=json or PATH=multipart
// entries (surrounding spaces ignored); "" or "none" is the empty list. A path must start with
// "/", hold only unreserved URL characters and "/", and not repeat, nor be one of the routes a
// front door serves itself (the inference paths, /v1/models, the health paths).
func ParsePassthroughPaths(s string) ([]PassthroughPath, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == PathNone {
		return nil, nil
	}
	entries := strings.Split(s, ",")
	if len(entries) > MaxPassthroughPaths {
		return nil, fmt.Errorf("%w: %d paths, at most %d", ErrPassthroughPaths, len(entries), MaxPassthroughPaths)
	}
	out := make([]PassthroughPath, 0, len(entries))
	for _, e := range entries {
		p, err := parsePassthrough(strings.TrimSpace(e))
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(q PassthroughPath) bool { return q.Path == p.Path }) {
			return nil, fmt.Errorf("%w: %q given twice", ErrPassthroughPaths, p.Path)
		}
		out = append(out, p)
	}
	return out, nil
}

// parsePassthrough reads one PATH=SOURCE entry.
func parsePassthrough(e string) (PassthroughPath, error) {
	path, src, ok := strings.Cut(e, "=")
	if !ok {
		return PassthroughPath{}, fmt.Errorf("%w: %q: want PATH=json or PATH=multipart", ErrPassthroughPaths, e)
	}
	p := PassthroughPath{Path: path}
	switch src {
	case "json":
		p.Model = ModelJSON
	case "multipart":
		p.Model = ModelForm
	default:
		return PassthroughPath{}, fmt.Errorf("%w: %q: the model is read from json or multipart, not %q",
			ErrPassthroughPaths, e, src)
	}
	if err := checkPassthroughPath(path); err != nil {
		return PassthroughPath{}, err
	}
	return p, nil
}

// servedPaths are the routes a front door serves itself, which a pass-through list cannot take.
var servedPaths = append(InferencePaths[:], PathModels, "/healthz", "/readyz", "/metrics")

// checkPassthroughPath checks one path of a pass-through list.
func checkPassthroughPath(path string) error {
	switch {
	case len(path) < 2 || path[0] != '/':
		return fmt.Errorf("%w: path %q must start with / and name something", ErrPassthroughPaths, path)
	case len(path) > maxPassthroughPath:
		return fmt.Errorf("%w: path of %d bytes, at most %d", ErrPassthroughPaths, len(path), maxPassthroughPath)
	case slices.Contains(servedPaths, path):
		return fmt.Errorf("%w: %s is served by the front door itself", ErrPassthroughPaths, path)
	case strings.Contains(path, "//") || strings.Contains(path, "/./") || strings.Contains(path, "/../") ||
		strings.HasSuffix(path, "/.") || strings.HasSuffix(path, "/.."):
		return fmt.Errorf("%w: path %q is not clean", ErrPassthroughPaths, path)
	}
	for _, c := range []byte(path) {
		if !pathByte(c) {
			return fmt.Errorf("%w: path %q holds %q (only letters, digits, -._~ and /)", ErrPassthroughPaths, path, c)
		}
	}
	return nil
}

// pathByte reports whether c may appear in a pass-through path: an unreserved URL character or /.
func pathByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~/", c) >= 0
}

// FormatPassthroughPaths writes paths in the form ParsePassthroughPaths reads ("none" for none).
func FormatPassthroughPaths(paths []PassthroughPath) string {
	if len(paths) == 0 {
		return PathNone
	}
	parts := make([]string, len(paths))
	for i, p := range paths {
		parts[i] = p.Path + "=" + p.Model.String()
	}
	return strings.Join(parts, ",")
}
