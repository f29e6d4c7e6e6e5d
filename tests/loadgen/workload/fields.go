package workload

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// lineRE finds the line numbers in YAML decoding errors.
var lineRE = regexp.MustCompile(`^line (\d+): `)

// annotate adds the dotted field path to each "line N:" message of a YAML type error, so that
// "cannot unmarshal !!str `soon` into time.Duration" also says "(field duration)".
func annotate(err error, data []byte) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return err
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		msgs[i] = m
		if sub := lineRE.FindStringSubmatch(m); sub != nil {
			line, _ := strconv.Atoi(sub[1])
			if field := fieldAt(&root, line, ""); field != "" {
				msgs[i] = fmt.Sprintf("%s (field %s)", m, field)
			}
		}
	}
	return fmt.Errorf("yaml: %s", strings.Join(msgs, "; "))
}

// fieldAt returns the path of the deepest mapping value that starts on line.
func fieldAt(n *yaml.Node, line int, prefix string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if f := fieldAt(c, line, prefix); f != "" {
				return f
			}
		}
	case yaml.MappingNode:
		return mappingFieldAt(n, line, prefix)
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if f := fieldAt(c, line, fmt.Sprintf("%s[%d]", prefix, i)); f != "" {
				return f
			}
		}
	}
	return ""
}

// mappingFieldAt is fieldAt for a mapping. When several keys sit on the line (a flow mapping), it
// names the mapping itself rather than guess which key was meant.
func mappingFieldAt(n *yaml.Node, line int, prefix string) string {
	var found []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		path := key.Value
		if prefix != "" {
			path = prefix + "." + key.Value
		}
		if f := fieldAt(val, line, path); f != "" {
			found = append(found, f)
		} else if val.Line == line || key.Line == line {
			found = append(found, path)
		}
	}
	switch {
	case len(found) == 1:
		return found[0]
	case len(found) > 1 && prefix != "":
		return prefix
	}
	return ""
}
