package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Files names the report files to write; an empty path skips that file.
type Files struct {
	// JSON receives WriteJSON's output.
	JSON string
	// Markdown receives WriteMarkdown's output.
	Markdown string
	// Plot receives WritePlot's PNG.
	Plot string
}

// WriteFiles writes every report file that f names.
func WriteFiles(r *Report, f Files) error {
	files := []struct {
		path  string
		write func(io.Writer, *Report) error
	}{{f.JSON, WriteJSON}, {f.Markdown, WriteMarkdown}, {f.Plot, WritePlot}}
	for _, file := range files {
		if file.path == "" {
			continue
		}
		var b bytes.Buffer
		if err := file.write(&b, r); err != nil {
			return err
		}
		if err := os.WriteFile(file.path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("report: write %s: %w", file.path, err)
		}
	}
	return nil
}
