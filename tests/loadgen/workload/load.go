package workload

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed workloads/*.yaml
var embedded embed.FS

// ErrUnknown is returned by Load for a name that is neither an embedded workload nor a file.
var ErrUnknown = errors.New("workload: unknown workload")

// Names lists the embedded workloads, sorted.
func Names() []string {
	entries, err := fs.ReadDir(embedded, "workloads")
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Load returns the embedded workload with this name, or else reads the YAML file at this path.
func Load(nameOrPath string) (*Workload, error) {
	if data, err := embedded.ReadFile(path.Join("workloads", nameOrPath+".yaml")); err == nil &&
		!strings.ContainsAny(nameOrPath, `/\`) {
		w, err := Parse(nameOrPath+".yaml", data)
		if err == nil && w.Trace != nil {
			w.Trace.dir = repoRoot()
		}
		return w, err
	}
	data, err := os.ReadFile(nameOrPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w %q (not a file; embedded: %s)", ErrUnknown, nameOrPath, strings.Join(Names(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("workload: read %s: %w", nameOrPath, err)
	}
	w, err := Parse(nameOrPath, data)
	if err == nil && w.Trace != nil {
		w.Trace.dir = filepath.Dir(nameOrPath)
	}
	return w, err
}

// Parse decodes and validates one workload. Unknown fields are rejected; source names the input
// in errors.
func Parse(source string, data []byte) (*Workload, error) {
	w := defaults()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&w); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("workload %s: empty document", source)
		}
		return nil, fmt.Errorf("workload %s: %w", source, annotate(err, data))
	}
	if w.Name == "" {
		w.Name = strings.TrimSuffix(path.Base(strings.ReplaceAll(source, `\`, "/")), path.Ext(source))
	}
	w.fillDefaults()
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("workload %s: %w", source, err)
	}
	return &w, nil
}

// fillDefaults sets the defaults of nested parts that the file named without every field.
func (w *Workload) fillDefaults() {
	if w.Arrival != nil {
		w.Arrival.fillDefaults()
	}
	for i := range w.Regions {
		w.Regions[i].Arrival.fillDefaults()
	}
	if w.Prompt != nil {
		w.Prompt.fillDefaults()
	}
	w.Output.fillDefaults()
	if w.Trace != nil {
		w.Trace.fillDefaults()
	}
}

func (a *Arrival) fillDefaults() {
	if a.Process != OnOff {
		return
	}
	if a.BurstLength == 0 {
		a.BurstLength = defaultBurstLength
	}
	if a.Period == 0 {
		a.Period = defaultPeriod
	}
	if a.BurstFactor == 0 {
		a.BurstFactor = defaultBurstFactor
	}
}

func (d *Dist) fillDefaults() {
	if d.Kind == "lognormal" && d.Min == 0 {
		d.Min = 1
	}
}
